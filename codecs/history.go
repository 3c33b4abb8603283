package codecs

import (
	"encoding/binary"
	"errors"
	"time"
)

// History is the history group's table record of one job (key = job id):
// its last fires and its last commands. Its size is bounded by the
// group's settings: at most HistoryFireBytes per fire and
// HistoryChangeBytes per change, payloads are never stored.
type History struct {
	// Fires are the kept fires, ascending by (ScheduledAt, Suffix).
	Fires []FireEntry
	// Changes are the kept commands, ascending by Offset.
	Changes []Change
	// CommandOffset is the offset of the last command applied (-1: none),
	// so a command processed again after a crash is not added twice.
	CommandOffset int64
}

// CheckFireSuffix bounds the fire_id after the job id (a trigger id or a
// time) that a history entry keeps, at MaxIDLen bytes, so each kept fire
// stays within the bytes docs/configuration.md gives (--history-fires) and
// a job's record within a Kafka record whatever the inputs say (a reserved
// trigger id of 16,000 digits, a forged dispatch event with a 600 kB
// fire_id).
func CheckFireSuffix(suffix string) error {
	if len(suffix) > MaxIDLen {
		return errorf(CodeInvalidField, "fire_id", "the fire_id after the job id is %d bytes, the limit is %d", len(suffix), MaxIDLen)
	}
	return nil
}

// CheckHistoryDispatch checks what the history keeps of a dispatch event
// beyond its times: the fire_id suffix (CheckFireSuffix), and a trigger and
// bucket such as Chronos writes (one of the three triggers; no bucket, or a
// valid bucket name).
func CheckHistoryDispatch(suffix, trigger, bucket string) error {
	if err := CheckFireSuffix(suffix); err != nil {
		return err
	}
	switch trigger {
	case TriggerSchedule, TriggerBucket, TriggerManual:
	default:
		return errorf(CodeInvalidField, "trigger", "trigger %q is not schedule, bucket or manual", Truncate(trigger, 64))
	}
	return ValidateBucket(bucket)
}

// FireEntry is one fire in a job's history: what the dispatch event said
// and what the executors reported.
type FireEntry struct {
	// Suffix is the fire_id after "<job id>@".
	Suffix      string
	ScheduledAt time.Time
	// Dispatched is true once a dispatch event for the fire was seen;
	// FiredAt is then the earliest fired_at among its dispatch events.
	Dispatched bool
	FiredAt    time.Time
	Trigger    string // schedule, bucket or manual ("" until dispatched)
	Missed     int64
	Bucket     string
	// Attempt is the highest attempt reported (0: no result yet); the
	// outcome fields below are that attempt's.
	Attempt    int
	Status     string // started, succeeded, failed or skipped
	StartedAt  time.Time
	FinishedAt time.Time
	Error      string // at most HistoryErrorBytes
}

// Change is one command on chronos-jobs for the job.
type Change struct {
	Offset int64
	At     time.Time // the record's timestamp
	Actor  string    // the chronos-actor header ("" when none), at most HistoryActorBytes
	Op     string
	Detail string // a summary (the schedule of a put, a fire's trigger id), at most HistoryDetailBytes
}

// Bounds of a history record's entries.
const (
	HistoryErrorBytes  = 256
	HistoryActorBytes  = 128
	HistoryDetailBytes = 256
	// HistoryFireBytes bounds one encoded fire: a 256-byte trigger id, a
	// 256-byte bucket, HistoryErrorBytes and the fixed fields.
	HistoryFireBytes = 900
	// HistoryChangeBytes bounds one encoded change.
	HistoryChangeBytes = 500
)

const historyMagic, historyVersion = 'H', 1

var (
	statusCodes  = []string{"", StatusStarted, StatusSucceeded, StatusFailed, StatusSkipped}
	triggerCodes = []string{"", TriggerSchedule, TriggerBucket, TriggerManual}
	opCodes      = []string{"", OpPut, OpDelete, OpPause, OpResume, OpFire, OpBackfill, OpCancelBackfill}
)

func codeOf(list []string, s string) byte {
	for i, v := range list {
		if v == s {
			return byte(i)
		}
	}
	return 0
}

// AppendHistory appends the binary encoding of h to dst (the table value;
// compact, since a record is rewritten on every fire of its job).
func AppendHistory(dst []byte, h *History) []byte {
	dst = append(dst, historyMagic, historyVersion)
	dst = binary.AppendVarint(dst, h.CommandOffset)
	dst = binary.AppendUvarint(dst, uint64(len(h.Fires)))
	for i := range h.Fires {
		dst = appendFire(dst, &h.Fires[i])
	}
	dst = binary.AppendUvarint(dst, uint64(len(h.Changes)))
	for i := range h.Changes {
		dst = appendChange(dst, &h.Changes[i])
	}
	return dst
}

func appendFire(dst []byte, f *FireEntry) []byte {
	dst = appendStr(dst, f.Suffix)
	dst = appendTime(dst, f.ScheduledAt)
	flags := byte(0)
	if f.Dispatched {
		flags = 1
	}
	dst = append(dst, flags, codeOf(triggerCodes, f.Trigger), codeOf(statusCodes, f.Status))
	dst = appendTime(dst, f.FiredAt)
	dst = binary.AppendVarint(dst, f.Missed)
	dst = appendStr(dst, f.Bucket)
	dst = binary.AppendUvarint(dst, uint64(f.Attempt))
	dst = appendTime(dst, f.StartedAt)
	dst = appendTime(dst, f.FinishedAt)
	return appendStr(dst, f.Error)
}

func appendChange(dst []byte, c *Change) []byte {
	dst = binary.AppendVarint(dst, c.Offset)
	dst = appendTime(dst, c.At)
	dst = append(dst, codeOf(opCodes, c.Op))
	dst = appendStr(dst, c.Actor)
	return appendStr(dst, c.Detail)
}

// ErrHistoryRecord is returned by DecodeHistory for bytes that are not a
// history record.
var ErrHistoryRecord = errors.New("codecs: not a history record")

// DecodeHistory parses a history record (nil or empty: an empty history).
func DecodeHistory(b []byte) (History, error) {
	h := History{CommandOffset: -1}
	if len(b) == 0 {
		return h, nil
	}
	r := &reader{b: b}
	if r.byte() != historyMagic || r.byte() != historyVersion {
		return History{CommandOffset: -1}, ErrHistoryRecord
	}
	h.CommandOffset = r.varint()
	n := r.count(12)
	h.Fires = make([]FireEntry, 0, n)
	for range n {
		h.Fires = append(h.Fires, r.fire())
	}
	n = r.count(5)
	h.Changes = make([]Change, 0, n)
	for range n {
		h.Changes = append(h.Changes, r.change())
	}
	if r.err != nil || len(r.b) != 0 {
		return History{CommandOffset: -1}, ErrHistoryRecord
	}
	return h, nil
}

func (r *reader) fire() FireEntry {
	var f FireEntry
	f.Suffix = r.str()
	f.ScheduledAt = r.time()
	flags, trig, st := r.byte(), r.byte(), r.byte()
	f.Dispatched, f.Trigger, f.Status = flags == 1, r.code(triggerCodes, trig), r.code(statusCodes, st)
	if flags > 1 && r.err == nil {
		r.err = errors.New("bad flags")
	}
	f.FiredAt = r.time()
	f.Missed = r.varint()
	f.Bucket = r.str()
	f.Attempt = int(min(r.uvarint(), MaxAttempt))
	f.StartedAt, f.FinishedAt = r.time(), r.time()
	f.Error = r.str()
	return f
}

func (r *reader) change() Change {
	var c Change
	c.Offset = r.varint()
	c.At = r.time()
	c.Op = r.code(opCodes, r.byte())
	c.Actor, c.Detail = r.str(), r.str()
	return c
}

func appendStr(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// count reads an element count of which each element takes at least per
// bytes, refusing counts the rest of the record cannot hold.
func (r *reader) count(per int) int {
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.b)/per+1) {
		r.err = errShort
	}
	if r.err != nil {
		return 0
	}
	return int(n)
}

func (r *reader) str() string { return string(r.bytes()) }

// code maps a one-byte code back to its name.
func (r *reader) code(list []string, c byte) string {
	if int(c) >= len(list) {
		if r.err == nil {
			r.err = errors.New("bad code")
		}
		return ""
	}
	return list[c]
}
