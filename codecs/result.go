package codecs

import (
	"fmt"
	"time"
)

// Statuses of an executor's result (chronos-results).
const (
	StatusStarted   = "started"   // the executor began the fire's work
	StatusSucceeded = "succeeded" // the work finished without error
	StatusFailed    = "failed"    // the work finished with an error
	StatusSkipped   = "skipped"   // the executor decided not to run it
)

// ResultVersion is the only result version this release understands.
const ResultVersion = 1

// Bounds of a result record.
const (
	// MaxResultBytes is the largest result record accepted (16 KiB).
	MaxResultBytes = 16 << 10
	// MaxResultErrorBytes is the longest error text a result may carry
	// (4 KiB); history keeps only its first HistoryErrorBytes.
	MaxResultErrorBytes = 4 << 10
	// MaxAttempt is the largest attempt number.
	MaxAttempt = 1_000_000
)

// ResultMsg is an executor's report on one fire, as written to
// chronos-results (key = job id, FNV-1a partitioner like chronos-jobs).
// Times are RFC 3339.
type ResultMsg struct {
	V      int    `json:"v"`
	FireID string `json:"fire_id"`
	// JobID may be left out; when given it must equal the key.
	JobID string `json:"job_id,omitempty"`
	// ScheduledAt is copied from the dispatch event (required).
	ScheduledAt time.Time `json:"scheduled_at"`
	Status      string    `json:"status"`
	// Attempt is the executor's try of this fire, from 1 (0: 1).
	Attempt    int        `json:"attempt,omitempty"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// Error is a text for humans (failed and skipped only).
	Error string `json:"error,omitempty"`
}

// Result is a validated result.
type Result struct {
	JobID string
	// Suffix is the fire_id after the job id and '@': the scheduled time
	// (RFC 3339) of a scheduled fire, the trigger id of the others.
	Suffix      string
	ScheduledAt time.Time
	Status      string
	Attempt     int
	StartedAt   time.Time // zero: not reported
	FinishedAt  time.Time // zero: not reported (always for started)
	Error       string
}

// HistoryMaxAhead is how far ahead a fire the history keeps may be
// scheduled: of the history group's clock, for a result (an executor
// reports a fire after its dispatch), and of its fired_at, for a dispatch
// event (a bucket trigger's scheduled_at is its record's timestamp, which
// its producer sets). A fire further ahead is no fire of now (a wrong
// clock, another system's ids) and, kept, would hold a slot of the job's
// last fires until real fires passed it: three for year 9999 hid a job's
// history for good.
const HistoryMaxAhead = time.Hour

// CheckResultTime rejects a result whose scheduled_at is more than
// HistoryMaxAhead after now, the reading group's clock (not the record's
// timestamp: the same producer sets both).
func CheckResultTime(r Result, now time.Time) error {
	if !r.ScheduledAt.After(now.Add(HistoryMaxAhead)) {
		return nil
	}
	return errorf(CodeInvalidField, "scheduled_at", "scheduled_at %s is more than %s after the history group's clock (%s): a fire not due yet has no outcome (check the producer's clock)",
		r.ScheduledAt.Format(time.RFC3339Nano), HistoryMaxAhead, now.UTC().Format(time.RFC3339Nano))
}

// CheckDispatchTime rejects, for the history, a dispatch event scheduled
// more than HistoryMaxAhead after it was fired.
func CheckDispatchTime(d Dispatch) error {
	if !d.ScheduledAt.After(d.FiredAt.Add(HistoryMaxAhead)) {
		return nil
	}
	return errorf(CodeInvalidField, "scheduled_at", "scheduled_at %s is more than %s after fired_at %s (a bucket trigger or fire command stamped in the future?): the fire is not kept in the history",
		d.ScheduledAt.Format(time.RFC3339Nano), HistoryMaxAhead, d.FiredAt.UTC().Format(time.RFC3339Nano))
}

// FireID returns the result's fire_id.
func (r Result) FireID() string { return r.JobID + "@" + r.Suffix }

var resultShape = shape{"v": nil, "fire_id": nil, "job_id": nil, "scheduled_at": nil, "status": nil,
	"attempt": nil, "started_at": nil, "finished_at": nil, "error": nil}

// EncodeResult marshals a result message; it sets V. It does not validate.
func EncodeResult(m ResultMsg) ([]byte, error) {
	m.V = ResultVersion
	return marshalUnescaped(m)
}

// DecodeResult parses and validates a chronos-results record with the
// strict rules of every Chronos input (exact field names, no unknown
// field, no key twice, one JSON value). key is the record key, the job id,
// which the fire_id must name.
func DecodeResult(key, value []byte) (Result, error) {
	if len(value) > MaxResultBytes {
		return Result{}, errorf(CodePayloadTooLarge, "", "result is %d bytes, the limit is %d", len(value), MaxResultBytes)
	}
	var m ResultMsg
	if err := strictUnmarshal(value, &m, resultShape); err != nil {
		return Result{}, err
	}
	if m.V != ResultVersion {
		return Result{}, errorf(CodeUnknownVersion, "v", "version %d is not supported (this release reads v=%d)", m.V, ResultVersion)
	}
	id := string(key)
	if err := ValidateID(id); err != nil {
		return Result{}, err
	}
	if m.JobID != "" && m.JobID != id {
		return Result{}, errorf(CodeInvalidID, "job_id", "job_id %q does not match the record key %q", Truncate(m.JobID, 256), Truncate(id, 256))
	}
	r := Result{JobID: id, ScheduledAt: m.ScheduledAt.UTC(), Status: m.Status, Attempt: m.Attempt, Error: m.Error}
	if err := r.checkFire(m.FireID); err != nil {
		return Result{}, err
	}
	if m.StartedAt != nil {
		r.StartedAt = m.StartedAt.UTC()
	}
	if m.FinishedAt != nil {
		r.FinishedAt = m.FinishedAt.UTC()
	}
	return r, r.check(m.StartedAt != nil, m.FinishedAt != nil)
}

// checkFire checks the fire_id against the key and scheduled_at and sets
// Suffix.
func (r *Result) checkFire(fireID string) error {
	job, at, trigger, ok := ParseFireID(fireID)
	if !ok || job != r.JobID {
		return errorf(CodeInvalidField, "fire_id", "fire_id %q is not \"<job id>@<scheduled time or trigger id>\" for the record key %q",
			Truncate(fireID, 512), Truncate(r.JobID, 256))
	}
	if err := checkResultTime("scheduled_at", r.ScheduledAt); err != nil {
		return err
	}
	r.Suffix = fireID[len(job)+1:]
	if err := CheckFireSuffix(r.Suffix); err != nil {
		return err
	}
	if trigger == "" {
		if !at.Equal(r.ScheduledAt) {
			return errorf(CodeInvalidField, "scheduled_at", "scheduled_at %s differs from the time in fire_id %q (copy both from the dispatch event)",
				r.ScheduledAt.Format(time.RFC3339Nano), Truncate(fireID, 512))
		}
		// One fire, one id: another spelling of the instant (an offset,
		// trailing zeros) names the dispatch event's canonical fire_id.
		r.Suffix = at.UTC().Format(time.RFC3339Nano)
		return nil
	}
	if derivedTriggerID.MatchString(trigger) {
		return nil
	}
	if err := ValidateTriggerID(trigger); err != nil {
		return errorf(CodeInvalidField, "fire_id", "fire_id %q: %v", Truncate(fireID, 512), err)
	}
	return nil
}

// check validates status, attempt, times and error.
func (r *Result) check(hasStart, hasFinish bool) error {
	switch r.Status {
	case StatusStarted:
		if !hasStart || hasFinish {
			return errorf(CodeInvalidField, "started_at", "a started result needs started_at and has no finished_at")
		}
	case StatusSucceeded, StatusFailed, StatusSkipped:
		if !hasFinish {
			return errorf(CodeInvalidField, "finished_at", "a %s result needs finished_at", r.Status)
		}
	default:
		return errorf(CodeInvalidField, "status", "unknown status %q; want started, succeeded, failed or skipped", Truncate(r.Status, 64))
	}
	if r.Attempt == 0 {
		r.Attempt = 1
	}
	if r.Attempt < 1 || r.Attempt > MaxAttempt {
		return errorf(CodeInvalidField, "attempt", "attempt %d, want 1..%d", r.Attempt, MaxAttempt)
	}
	if hasStart {
		if err := checkResultTime("started_at", r.StartedAt); err != nil {
			return err
		}
	}
	if hasFinish {
		if err := checkResultTime("finished_at", r.FinishedAt); err != nil {
			return err
		}
	}
	if hasStart && hasFinish && r.FinishedAt.Before(r.StartedAt) {
		return errorf(CodeInvalidField, "finished_at", "finished_at is before started_at")
	}
	if r.Error != "" && r.Status != StatusFailed && r.Status != StatusSkipped {
		return errorf(CodeInvalidField, "error", "only failed and skipped results carry an error")
	}
	if len(r.Error) > MaxResultErrorBytes {
		return errorf(CodeInvalidField, "error", "error is %d bytes, the limit is %d", len(r.Error), MaxResultErrorBytes)
	}
	return nil
}

// checkResultTime applies CheckRecordTime's bounds to a time field.
func checkResultTime(field string, t time.Time) error {
	if CheckRecordTime(t) != nil {
		return errorf(CodeInvalidField, field, "%s must be a time from 1970-01-01 to 9999-12-31 UTC", field)
	}
	return nil
}

// String is a short form for logs.
func (r Result) String() string {
	return fmt.Sprintf("%s %s attempt %d", r.FireID(), r.Status, r.Attempt)
}
