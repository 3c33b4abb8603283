package codecs

import (
	"bytes"
	"encoding/json"
	"time"
	"unicode/utf8"
)

// Command operations on chronos-jobs.
const (
	OpPut    = "put"
	OpDelete = "delete"
	OpPause  = "pause"
	OpResume = "resume"
	OpFire   = "fire"
)

// CommandVersion is the only command version this release understands.
const CommandVersion = 1

// CommandMsg is a command as written to chronos-jobs (key = job id).
type CommandMsg struct {
	V         int             `json:"v"`
	Op        string          `json:"op"`
	ID        string          `json:"id,omitempty"`
	Job       *JobDef         `json:"job,omitempty"`
	TriggerID string          `json:"trigger_id,omitempty"`
	Payload   json.RawMessage `json:"payload,omitempty"`
	// IfVersion applies the command only if the job's current version is
	// this (0: the job must not exist); otherwise it is rejected with
	// version_conflict. Not allowed on fire.
	IfVersion *uint64 `json:"if_version,omitempty"`
	// Note says why a job is paused (pause only; at most MaxNoteBytes).
	Note string `json:"note,omitempty"`
	// From and To are a backfill's range [from, to) (backfill only).
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// MaxNoteBytes bounds a pause note.
const MaxNoteBytes = 1024

// ActorHeader is the record header naming who sent a command (the API
// sets it to the token's name; the history group and a pause's note read
// it).
const ActorHeader = "chronos-actor"

// PauseBody is the optional body of POST /v1/jobs/{id}/pause.
type PauseBody struct {
	Note string `json:"note,omitempty"`
}

// DecodePauseBody parses a PauseBody with the wire format's strict rules.
// It does not validate the note (the command built from it is decoded
// again before it is produced).
func DecodePauseBody(b []byte) (PauseBody, error) {
	var p PauseBody
	if err := strictUnmarshal(b, &p, pauseBodyShape); err != nil {
		return PauseBody{}, err
	}
	return p, nil
}

// Command is a validated command.
type Command struct {
	Op  string
	ID  string
	Job Job // put only
	// TriggerID names a manual fire (fire only; "" lets the processor
	// derive a stable one from the record's position).
	TriggerID string
	// Payload overrides the job's payload for one manual fire (nil: none).
	Payload []byte
	// IfVersion, when set, is the version the job must have.
	IfVersion *uint64
	// Note is a pause's reason (pause only).
	Note string
	// From and To are a backfill's range [From, To) (backfill only).
	From, To time.Time
}

// EncodeCommand marshals a command message; it sets V. Payloads are
// written byte for byte as given (compacted), without encoding/json's HTML
// escaping of <, >, & and U+2028/U+2029: the payload stored and
// dispatched is the one the client sent.
func EncodeCommand(m CommandMsg) ([]byte, error) {
	m.V = CommandVersion
	return marshalUnescaped(m)
}

// marshalUnescaped is json.Marshal without HTML escaping (which would
// rewrite "<" in a json.RawMessage payload as "\u003c").
func marshalUnescaped(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// DecodeCommand parses and validates a chronos-jobs record. key is the
// record key (the job id); an "id" in the value must equal it.
//
// A record in the form EncodeCommand writes it (the API, the CLI, the
// importer and the bench do) is read front to back by commandHead; the
// strict decoder's two passes cost three times as much (4.3 µs against 1.5
// for a put, BenchmarkDecodeCommand) and were most of the cost of reading
// a command in the scheduler and the history group. Anything else goes to
// the strict decoder; both give the same command or the same error.
func DecodeCommand(key, value []byte, lim Limits) (Command, error) {
	if m, ok := commandHead(value); ok {
		return m.Command(key, lim)
	}
	return decodeCommandStrict(key, value, lim)
}

// decodeCommandStrict is DecodeCommand by the strict decoder alone.
func decodeCommandStrict(key, value []byte, lim Limits) (Command, error) {
	var m CommandMsg
	if err := strictUnmarshal(value, &m, commandShape); err != nil {
		return Command{}, err
	}
	return m.Command(key, lim)
}

// Command validates m, a command record keyed key already unmarshalled
// (by the strict decoder, or by commandHead, which accepts only what the
// strict decoder accepts), as DecodeCommand does.
func (m CommandMsg) Command(key []byte, lim Limits) (Command, error) {
	var err error
	if m.V != CommandVersion {
		return Command{}, errorf(CodeUnknownVersion, "v", "version %d is not supported (this release reads v=%d)", m.V, CommandVersion)
	}
	id := string(key)
	if m.ID != "" && m.ID != id {
		return Command{}, errorf(CodeInvalidID, "id", "id %q does not match the record key %q", m.ID, id)
	}
	validate := ValidateID
	if m.Op == OpDelete {
		// Ids stored under the rules of earlier releases can be deleted.
		validate = validateLegacyID
	}
	if err = validate(id); err != nil {
		return Command{}, err
	}
	c := Command{Op: m.Op, ID: id, IfVersion: m.IfVersion, Note: m.Note}
	if m.Note != "" && m.Op != OpPause {
		return Command{}, errorf(CodeUnknownField, "note", "only pause takes a note")
	}
	if len(m.Note) > MaxNoteBytes || !utf8.ValidString(m.Note) {
		return Command{}, errorf(CodeInvalidField, "note", "a note is at most %d bytes of UTF-8, got %d bytes", MaxNoteBytes, len(m.Note))
	}
	if m.Op == OpFire && m.IfVersion != nil {
		return Command{}, errorf(CodeUnknownField, "if_version", "fire does not take if_version")
	}
	switch m.Op {
	case OpPut:
		if m.Job == nil {
			return Command{}, errorf(CodeInvalidField, "job", "put needs a job definition")
		}
		j, err := m.Job.Validate(lim)
		if err != nil {
			return Command{}, err
		}
		c.Job = j
	case OpFire:
		if err := validateTriggerID(m.TriggerID); err != nil {
			return Command{}, err
		}
		p, err := compactPayload(m.Payload, lim)
		if err != nil {
			return Command{}, err
		}
		c.TriggerID, c.Payload = m.TriggerID, p
	case OpBackfill:
		if c.From, c.To, err = ParseBackfillRange(m.From, m.To); err != nil {
			return Command{}, err
		}
	case OpDelete, OpPause, OpResume, OpCancelBackfill:
	default:
		return Command{}, errorf(CodeUnknownOp, "op", "unknown op %q; want put, delete, pause, resume, fire, backfill or cancel_backfill", m.Op)
	}
	if m.Op != OpBackfill && (m.From != "" || m.To != "") {
		return Command{}, errorf(CodeUnknownField, "from", "only backfill takes from and to")
	}
	if m.Op != OpPut && m.Job != nil {
		return Command{}, errorf(CodeUnknownField, "job", "only put takes a job definition")
	}
	if m.Op != OpFire && (m.TriggerID != "" || len(m.Payload) > 0) {
		field := "payload"
		if m.TriggerID != "" {
			field = "trigger_id"
		}
		return Command{}, errorf(CodeUnknownField, field, "only fire takes trigger_id and payload")
	}
	return c, nil
}

// TriggerBody is the optional body of a manual fire or a bucket trigger on
// the HTTP API (POST /v1/jobs/{id}/fire, POST /v1/buckets/{bucket}/trigger).
type TriggerBody struct {
	TriggerID string          `json:"trigger_id,omitempty"`
	Payload   json.RawMessage `json:"payload,omitempty"`
}

// DecodeTriggerBody parses a TriggerBody with the wire format's strict
// rules (exact field names, no unknown fields, no key twice at any depth,
// one JSON value), as DecodeCommand reads the same fields on chronos-jobs.
// It does not validate the values (the command or trigger built from it
// is decoded again before it is produced).
func DecodeTriggerBody(b []byte) (TriggerBody, error) {
	var t TriggerBody
	if err := strictUnmarshal(b, &t, triggerBodyShape); err != nil {
		return TriggerBody{}, err
	}
	return t, nil
}
