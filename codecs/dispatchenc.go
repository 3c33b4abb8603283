package codecs

import (
	"strconv"
	"time"
)

// DispatchEncoder encodes the dispatch events of scheduled fires (the
// fan-out's hot path): AppendScheduled writes the same bytes as
// AppendDispatch of the event with FireID ScheduledFireID(JobID,
// ScheduledAt) and Trigger TriggerSchedule, but formats each time only
// when it differs from the one it formatted last in the same field. The
// fires of one fan-out chunk share their fired_at, and the jobs due in the
// same second their scheduled_at, so most events copy their times (three
// RFC 3339 formats a fire before, the fire_id's among them) and the job
// id's escaped text from the fire_id. The zero value is ready; not safe for
// concurrent use.
type DispatchEncoder struct {
	scheduled, due, fired timeText
}

// timeText is the RFC 3339 UTC text of the last time formatted.
type timeText struct {
	at  time.Time // UTC, without a monotonic reading
	set bool
	b   []byte
}

// text returns t's RFC 3339 UTC text (as AppendDispatch formats it), valid
// until the next call.
func (c *timeText) text(t time.Time) []byte {
	u := t.UTC().Round(0) // the instant alone: == below compares it exactly
	if !c.set || u != c.at {
		c.b = u.AppendFormat(c.b[:0], time.RFC3339Nano)
		c.at, c.set = u, true
	}
	return c.b
}

// AppendScheduled appends the JSON encoding of the scheduled fire d to dst:
// byte for byte AppendDispatch(dst, d) with d.FireID =
// ScheduledFireID(d.JobID, d.ScheduledAt) and d.Trigger = TriggerSchedule,
// whatever d.FireID, d.Trigger and d.TriggerID say (a scheduled fire has no
// trigger id). d.Payload must be valid compact JSON.
func (e *DispatchEncoder) AppendScheduled(dst []byte, d *Dispatch) []byte {
	scheduled := e.scheduled.text(d.ScheduledAt)
	dst = append(dst, `{"v":`...)
	dst = strconv.AppendInt(dst, DispatchVersion, 10)
	dst = append(dst, `,"fire_id":`...)
	// appendString of JobID + "@" + the time: the time's text and '@'
	// need no escaping, and no rune of the id runs into the '@' (an
	// ASCII byte is never part of a multi-byte sequence), so escaping the
	// id alone gives the same bytes, which job_id then repeats.
	idStart := len(dst)
	dst = appendString(dst, d.JobID)
	idEnd := len(dst)
	dst = append(dst[:idEnd-1], '@')
	dst = append(dst, scheduled...)
	dst = append(dst, `","job_id":`...)
	dst = append(dst, dst[idStart:idEnd-1]...) // the id's quote and text
	dst = append(dst, `","trigger":"`+TriggerSchedule+`","scheduled_at":"`...)
	dst = append(dst, scheduled...)
	if !d.DueAt.IsZero() {
		dst = append(dst, `","due_at":"`...)
		dst = append(dst, e.due.text(d.DueAt)...)
	}
	dst = append(dst, `","fired_at":"`...)
	dst = append(dst, e.fired.text(d.FiredAt)...)
	return appendDispatchTail(dst, d, "") // a scheduled fire has no trigger id
}
