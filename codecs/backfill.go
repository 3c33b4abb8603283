package codecs

import (
	"encoding/binary"
	"errors"
	"sort"
	"strconv"
	"time"

	"github.com/chronos-scheduler/chronos/schedule"
)

// Backfill commands on chronos-jobs (docs/topics.md): "backfill" dispatches
// every scheduled time of the job in [from, to) with the fire_ids those
// fires have ("<job id>@<time>"), flagged backfill; "cancel_backfill"
// stops the job's backfill in progress.
const (
	OpBackfill       = "backfill"
	OpCancelBackfill = "cancel_backfill"
)

// MaxBackfillFires is the most scheduled times one backfill may cover: a
// range holding more is refused (split it into several backfills, one
// after the other).
const MaxBackfillFires = 100_000

// MaxBackfillsPerShard is the most backfills in progress at once on one
// partition of the job table: a backfill command beyond it is refused. The
// bound is checked when a command is applied, so commands applied before
// the partition learns of each other's backfills may exceed it by a few.
const MaxBackfillsPerShard = 1000

// Backfill is a job's backfill in progress, kept in its JobRecord: the
// range, how far it has dispatched, and the shard time of its last step.
// Any owner of the job's partition continues it from here.
type Backfill struct {
	// ID names this backfill: "b-<partition>-<offset>" of its command.
	ID string
	// From and To bound the range [From, To) of scheduled times.
	From, To time.Time
	// Next is the first scheduled time not dispatched yet (in [From, To)).
	Next time.Time
	// Done is how many fires it has dispatched, Total how many the range holds.
	Done, Total int64
	// LastStep is the shard time (advance T) of its last step (zero: none
	// yet); one step per shard time at most.
	LastStep time.Time
}

// BackfillStatus is a backfill in progress as the read API shows it
// (GET /v1/jobs/{id}, field "backfill").
type BackfillStatus struct {
	ID         string    `json:"id"`
	From       time.Time `json:"from"`
	To         time.Time `json:"to"`
	Next       time.Time `json:"next"`
	Dispatched int64     `json:"dispatched"`
	Total      int64     `json:"total"`
	Remaining  int64     `json:"remaining"`
}

// Status is b as the read API shows it (nil for nil).
func (b *Backfill) Status() *BackfillStatus {
	if b == nil {
		return nil
	}
	return &BackfillStatus{ID: b.ID, From: b.From, To: b.To, Next: b.Next, Dispatched: b.Done, Total: b.Total,
		Remaining: max(b.Total-b.Done, 0)}
}

// BackfillBody is the body of POST /v1/jobs/{id}/backfill: the range
// [from, to), RFC 3339 times.
type BackfillBody struct {
	From string `json:"from"`
	To   string `json:"to"`
}

var backfillBodyShape = shape{"from": nil, "to": nil}

// DecodeBackfillBody parses a BackfillBody with the wire format's strict
// rules and checks its range (ParseBackfillRange).
func DecodeBackfillBody(b []byte) (from, to time.Time, err error) {
	var body BackfillBody
	if err := strictUnmarshal(b, &body, backfillBodyShape); err != nil {
		return time.Time{}, time.Time{}, err
	}
	return ParseBackfillRange(body.From, body.To)
}

// ParseBackfillRange parses a backfill's range [from, to): both RFC 3339
// times (not the zero time), from before to. Errors are *Error with code
// CodeInvalidField.
func ParseBackfillRange(from, to string) (time.Time, time.Time, error) {
	var out [2]time.Time
	for i, f := range []struct{ name, in string }{{"from", from}, {"to", to}} {
		if f.in == "" {
			return time.Time{}, time.Time{}, errorf(CodeInvalidField, f.name, "a backfill needs %s, an RFC 3339 time (like 2026-01-02T15:04:05Z)", f.name)
		}
		t, err := time.Parse(time.RFC3339Nano, f.in)
		if err != nil {
			return time.Time{}, time.Time{}, errorf(CodeInvalidField, f.name, "not an RFC 3339 time (like 2026-01-02T15:04:05Z): %q", Truncate(f.in, 64))
		}
		if t.IsZero() {
			return time.Time{}, time.Time{}, errorf(CodeInvalidField, f.name, "%q is the zero time, which Chronos reserves for \"not set\"", f.in)
		}
		out[i] = t.UTC()
	}
	if !out[0].Before(out[1]) {
		return time.Time{}, time.Time{}, errorf(CodeInvalidField, "to", "the range [from, to) is empty: to (%s) must be after from (%s)",
			out[1].Format(time.RFC3339Nano), out[0].Format(time.RFC3339Nano))
	}
	return out[0], out[1], nil
}

// BackfillRef is one backfill in progress in a shard's registry (the
// ShardRecord): the job and its backfill's ID.
type BackfillRef struct {
	Job string
	ID  string
}

// WithBackfill returns refs with job's backfill id set (replacing the
// job's earlier one), sorted by job; refs is not changed.
func WithBackfill(refs []BackfillRef, job, id string) []BackfillRef {
	out := make([]BackfillRef, 0, len(refs)+1)
	for _, r := range refs {
		if r.Job != job {
			out = append(out, r)
		}
	}
	out = append(out, BackfillRef{Job: job, ID: id})
	sort.Slice(out, func(i, j int) bool { return out[i].Job < out[j].Job })
	return out
}

// WithoutBackfill returns refs without job's backfill id (only that id: a
// newer backfill of the job stays); refs is not changed.
func WithoutBackfill(refs []BackfillRef, job, id string) []BackfillRef {
	out := make([]BackfillRef, 0, len(refs))
	for _, r := range refs {
		if r.Job != job || r.ID != id {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Tags of a job record's extensions (formats 5 and 6): a backfill, and the
// further schedules and exclusions of its spec (recordset.go).
const (
	extBackfill    = 'B'
	extScheduleSet = 'M'
	extOwedAt      = 'O' // JobRecord.OwedAt: one time
	extApplied     = 'A' // JobRecord.Applied: one uvarint, never 0
	extFanned      = 'F' // JobRecord.Fanned: a count (never 0), then each mark's trigger id and time
)

func appendBackfill(w []byte, b *Backfill) []byte {
	var e []byte
	e = appendBytes(e, []byte(b.ID))
	e = appendTime(e, b.From)
	e = appendTime(e, b.To)
	e = appendTime(e, b.Next)
	e = binary.AppendVarint(e, b.Done)
	e = binary.AppendVarint(e, b.Total)
	e = appendTime(e, b.LastStep)
	w = append(w, extBackfill)
	return appendBytes(w, e)
}

// readExtensions reads a format 5 or 6 job record's tagged extensions, which
// run to the end of the record.
func readExtensions(rd *reader, r *JobRecord) {
	if len(rd.b) == 0 && rd.err == nil {
		rd.err = errors.New("format 5 without an extension") // never written: a truncated record
	}
	for rd.err == nil && len(rd.b) > 0 {
		tag := rd.byte()
		body := reader{b: rd.bytes()}
		if rd.err != nil {
			return
		}
		switch tag {
		case extBackfill:
			b := &Backfill{ID: string(body.bytes()), From: body.time(), To: body.time(), Next: body.time(),
				Done: body.varint(), Total: body.varint(), LastStep: body.time()}
			if body.err == nil && len(body.b) != 0 {
				body.err = errors.New("trailing bytes in the backfill")
			}
			rd.err, r.Backfill = body.err, b
		case extScheduleSet:
			rd.err = readScheduleSet(&body, &r.Job.Spec)
		case extOwedAt:
			r.OwedAt = body.time()
			switch {
			case body.err != nil:
				rd.err = body.err
			case len(body.b) != 0 || r.OwedAt.IsZero():
				rd.err = errors.New("bad owed-at extension") // never written zero
			}
		case extApplied:
			r.Applied = body.uvarint()
			switch {
			case body.err != nil:
				rd.err = body.err
			case len(body.b) != 0 || r.Applied == 0:
				rd.err = errors.New("bad applied extension") // never written zero
			}
		case extFanned:
			n := body.uvarint()
			if n == 0 || n > uint64(len(body.b)) {
				rd.err = errors.New("bad fan-out marks extension")
				break
			}
			for i := uint64(0); i < n && body.err == nil; i++ {
				r.Fanned = append(r.Fanned, FanoutMark{TriggerID: string(body.bytes()), T: body.time()})
			}
			switch {
			case body.err != nil:
				rd.err = body.err
			case len(body.b) != 0:
				rd.err = errors.New("trailing bytes in the fan-out marks")
			}
		default:
			rd.err = errors.New("unknown record extension")
		}
	}
}

func appendBackfillRefs(w []byte, refs []BackfillRef) []byte {
	w = binary.AppendUvarint(w, uint64(len(refs)))
	for _, r := range refs {
		w = appendBytes(w, []byte(r.Job))
		w = appendBytes(w, []byte(r.ID))
	}
	return w
}

func readBackfillRefs(rd *reader) []BackfillRef {
	n := rd.uvarint()
	if n == 0 || n > uint64(len(rd.b)) { // never written empty; each ref takes at least two bytes
		rd.err = errShort
		return nil
	}
	refs := make([]BackfillRef, 0, n)
	for i := uint64(0); i < n && rd.err == nil; i++ {
		refs = append(refs, BackfillRef{Job: string(rd.bytes()), ID: string(rd.bytes())})
	}
	return refs
}

// BackfillID is the ID of the backfill started by the command at offset
// of partition p of chronos-jobs: "b-<p>-<offset>".
func BackfillID(p int32, offset int64) string {
	return "b-" + strconv.Itoa(int(p)) + "-" + strconv.FormatInt(offset, 10)
}

// CountBackfill counts the times of s in [from, to), up to limit+1 (a
// range holding more than limit returns limit+1), and returns the first
// (zero: none). The times are s.Next's from just before from: the
// schedule's own, with its start, end, time zone and DST policy.
func CountBackfill(s schedule.Schedule, from, to time.Time, limit int64) (n int64, first time.Time) {
	first = s.Next(from.Add(-time.Nanosecond))
	for t := first; !t.IsZero() && t.Before(to) && n <= limit; t = s.Next(t) {
		n++
	}
	return n, first
}

// BackfillLimit is the most scheduled times one backfill of a job with
// spec may cover: MaxBackfillFires, divided by the number of its
// schedules (counting and stepping a union steps every member).
func BackfillLimit(spec schedule.Spec) int64 { return MaxBackfillFires / int64(1+len(spec.Also)) }

// CheckBackfillCount refuses a range [from, to) holding n scheduled times
// (as CountBackfill counts them, up to limit+1): none, or more than limit
// (BackfillLimit).
func CheckBackfillCount(n, limit int64, from, to time.Time) error {
	rng := "[" + from.Format(time.RFC3339Nano) + ", " + to.Format(time.RFC3339Nano) + ")"
	switch {
	case n == 0:
		return errorf(CodeInvalidField, "from", "the job's schedule has no time in %s", rng)
	case n > limit:
		return errorf(CodeInvalidField, "to", "the job's schedule has more than %d times in %s, the most one backfill of it dispatches (%d divided by its number of schedules); split the range", limit, rng, MaxBackfillFires)
	}
	return nil
}

// CheckBackfill checks a backfill of a job with spec over [from, to) at
// time now as the scheduler will when it applies the command (the API
// answers with it before producing the command), and returns the number
// of fires the range holds. A refusal because of the number of times the
// job's schedule has in the range (none, or more than MaxBackfillFires)
// is also reported by countErr, so that the API can tell a conflict with
// the job's current schedule from a malformed range.
func CheckBackfill(spec schedule.Spec, from, to, now time.Time) (n int64, countErr bool, err error) {
	if to.After(now) {
		return 0, false, errorf(CodeInvalidField, "to", "to (%s) is in the future: a backfill covers past times only; the schedule fires the future", to.Format(time.RFC3339Nano))
	}
	sched, err := schedule.Parse(spec)
	if err != nil {
		return 0, false, errorf(CodeInvalidSchedule, "schedule", "the job's schedule is invalid: %v", err)
	}
	limit := BackfillLimit(spec)
	n, _ = CountBackfill(sched, from, to, limit)
	if err := CheckBackfillCount(n, limit, from, to); err != nil {
		return n, true, err
	}
	return n, false, nil
}
