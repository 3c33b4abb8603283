package codecs

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Triggers of a dispatch event.
const (
	TriggerSchedule = "schedule" // the job's own schedule
	TriggerBucket   = "bucket"   // a named bucket trigger
	TriggerManual   = "manual"   // a fire command
)

// DispatchVersion is the version of dispatch events this release writes.
const DispatchVersion = 1

// Dispatch is one fire, as written to chronos-dispatch (key = job id).
type Dispatch struct {
	V           int       `json:"v"`
	FireID      string    `json:"fire_id"`
	JobID       string    `json:"job_id"`
	Trigger     string    `json:"trigger"`
	ScheduledAt time.Time `json:"scheduled_at"`
	// DueAt is when a jittered fire was due: ScheduledAt plus the job's
	// jitter offset (JitterOffset of FireID). Zero (omitted) without a
	// jitter, and on bucket and manual fires.
	DueAt     time.Time       `json:"due_at,omitzero"`
	FiredAt   time.Time       `json:"fired_at"`
	Missed    int64           `json:"missed"`
	Bucket    string          `json:"bucket,omitempty"`
	TriggerID string          `json:"trigger_id,omitempty"`
	Payload   json.RawMessage `json:"payload,omitempty"`
	// Backfill marks a fire dispatched by a backfill (omitted when false).
	Backfill bool `json:"backfill,omitempty"`
}

// ScheduledFireID is the fire id of a scheduled fire: "<job id>@<scheduled
// time, RFC 3339 UTC>".
func ScheduledFireID(jobID string, at time.Time) string {
	return jobID + "@" + at.UTC().Format(time.RFC3339Nano)
}

// TriggeredFireID is the fire id of a bucket or manual fire: "<job id>@<trigger id>".
// Bucket and manual fires share the trigger id namespace: the same trigger
// id names the same trigger.
func TriggeredFireID(jobID, triggerID string) string { return jobID + "@" + triggerID }

// ParseFireID splits a fire_id made by ScheduledFireID or TriggeredFireID
// from a valid job id and a valid trigger id (ValidateTriggerID) back into
// its parts: the job id is everything before the last '@' (a trigger id and
// a formatted time contain none), and the rest is the scheduled time when
// it is one (a trigger id never parses as RFC 3339), else the trigger id.
// So no fire_id can name two fires. ok is false when fireID has no '@'.
func ParseFireID(fireID string) (jobID string, at time.Time, triggerID string, ok bool) {
	i := strings.LastIndexByte(fireID, '@')
	if i < 0 {
		return "", time.Time{}, "", false
	}
	jobID, suffix := fireID[:i], fireID[i+1:]
	if t, err := time.Parse(time.RFC3339Nano, suffix); err == nil {
		return jobID, t.UTC(), "", true
	}
	return jobID, time.Time{}, suffix, true
}

// AppendDispatch appends the JSON encoding of d to dst. It is the hot path
// of the fan-out: no reflection, one allocation at most (growing dst).
// d.Payload must be valid compact JSON (the scheduler stores it that way).
func AppendDispatch(dst []byte, d *Dispatch) []byte {
	dst = append(dst, `{"v":`...)
	dst = strconv.AppendInt(dst, DispatchVersion, 10)
	dst = append(dst, `,"fire_id":`...)
	dst = appendString(dst, d.FireID)
	dst = append(dst, `,"job_id":`...)
	dst = appendString(dst, d.JobID)
	dst = append(dst, `,"trigger":`...)
	dst = appendString(dst, d.Trigger)
	dst = append(dst, `,"scheduled_at":"`...)
	dst = d.ScheduledAt.UTC().AppendFormat(dst, time.RFC3339Nano)
	if !d.DueAt.IsZero() {
		dst = append(dst, `","due_at":"`...)
		dst = d.DueAt.UTC().AppendFormat(dst, time.RFC3339Nano)
	}
	dst = append(dst, `","fired_at":"`...)
	dst = d.FiredAt.UTC().AppendFormat(dst, time.RFC3339Nano)
	return appendDispatchTail(dst, d, d.TriggerID)
}

// appendDispatchTail appends what follows fired_at's text: the rest of the
// fields in their order and the closing brace.
func appendDispatchTail(dst []byte, d *Dispatch, triggerID string) []byte {
	dst = append(dst, `","missed":`...)
	dst = strconv.AppendInt(dst, d.Missed, 10)
	if d.Bucket != "" {
		dst = append(dst, `,"bucket":`...)
		dst = appendString(dst, d.Bucket)
	}
	if triggerID != "" {
		dst = append(dst, `,"trigger_id":`...)
		dst = appendString(dst, triggerID)
	}
	if len(d.Payload) > 0 {
		dst = append(dst, `,"payload":`...)
		dst = append(dst, d.Payload...)
	}
	if d.Backfill {
		dst = append(dst, `,"backfill":true`...)
	}
	return append(dst, '}')
}

// DecodeDispatch parses a dispatch event (for consumers, tests and tools).
func DecodeDispatch(b []byte) (Dispatch, error) {
	var d Dispatch
	if err := json.Unmarshal(b, &d); err != nil {
		return Dispatch{}, jsonError(err)
	}
	if d.V != DispatchVersion {
		return Dispatch{}, errorf(CodeUnknownVersion, "v", "dispatch version %d is not supported", d.V)
	}
	return d, nil
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string, escaping like encoding/json
// (including <, >, & and U+2028/U+2029); invalid UTF-8 becomes U+FFFD.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
