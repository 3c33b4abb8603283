// Package audit is an independent verifier of Chronos dispatch output.
//
// Given job definitions (id, codecs.JobDef and the time of their put) and a
// window (From, To], Expect computes every scheduled fire that should have
// been dispatched; Check compares the dispatch events that were consumed
// from chronos-dispatch with that set and reports what is missing,
// duplicated or unexpected, and how late the events were.
//
// Independence: the fire times of `every` (origin + k*every, origin = start
// or the Unix epoch) and `at` jobs are computed here with plain integer
// arithmetic on Unix nanoseconds (valid for the years 1678..2262). Cron jobs
// use schedule.Parse and Schedule.Next from package schedule, i.e. the same
// cron and DST implementation the scheduler uses; for cron the audit checks
// the delivery pipeline, not the cron semantics (processors/day_test.go has
// a brute-force cron oracle for that).
//
// Misfires: a fire scheduled at s is late when the advance that reaches it
// (the first announced time T >= s, see Options.Advances) has T - s >
// misfire_grace (default 60s). Late fires are expected per the job's
// misfire_policy:
//
//   - fire_once (default): only the latest late fire of each advance is
//     expected, with missed = the number of other late fires of that advance;
//     the others are counted as AllowedMissing.
//   - skip: no late fire is expected (all are AllowedMissing); the first
//     on-time fire of the same advance is expected to carry missed = the
//     late count.
//   - fire_all: every late fire is expected, up to the latest 100 per job per
//     advance; older ones are AllowedMissing.
//
// Without Options.Advances every fire is assumed to be reached within its
// grace (the normal case, and an outage shorter than the grace): every fire
// in the window is expected and AllowedMissing is 0.
package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
)

// DefaultGrace is the misfire grace of a job that sets none.
const DefaultGrace = 60 * time.Second

// MaxCatchUp is the most late fires of one job per advance under fire_all.
const MaxCatchUp = 100

// Job is one job definition as registered.
type Job struct {
	ID  string
	Def codecs.JobDef
	// PutAt is the Kafka timestamp of the put: the job owes fires strictly
	// after it. Zero: no lower bound besides the window.
	PutAt time.Time
}

// Options describe the window and the clock.
type Options struct {
	// From, To: the audited window (From, To] of scheduled_at.
	From, To time.Time
	// Advances are the times announced to the shards, in the order they
	// were announced (ticks truncated to the resolution). Times not after
	// the running maximum are ignored, as the clock ignores them. Nil: every
	// fire is assumed on time (within its grace).
	Advances []time.Time
}

// Expected is one fire that should be in chronos-dispatch.
type Expected struct {
	FireID      string
	JobID       string
	ScheduledAt time.Time
	Payload     json.RawMessage // compacted; nil when none
	Missed      int64           // expected "missed" (only meaningful with Advances)
}

// Plan is the result of Expect.
type Plan struct {
	Opts     Options
	Expected map[string]Expected // by fire_id
	// Allowed are fires in the window excluded by a misfire policy
	// (skip, fire_once, or beyond the fire_all bound), by fire_id.
	Allowed map[string]string // fire_id -> job id
	jobs    map[string]bool
}

// Observed is one consumed dispatch event.
type Observed struct {
	Dispatch codecs.Dispatch
	// Received is when the event was read (or its record timestamp); zero:
	// unknown (no lateness for it).
	Received time.Time
}

// FromRecords decodes raw chronos-dispatch records; Received is the record
// timestamp (the producer's time, i.e. when the scheduler sent it).
func FromRecords(recs []*kgo.Record) ([]Observed, error) {
	out := make([]Observed, 0, len(recs))
	for _, r := range recs {
		d, err := codecs.DecodeDispatch(r.Value)
		if err != nil {
			return nil, fmt.Errorf("audit: record %s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
		}
		if d.JobID != string(r.Key) {
			return nil, fmt.Errorf("audit: record %s/%d@%d: key %q is not job_id %q", r.Topic, r.Partition, r.Offset, r.Key, d.JobID)
		}
		out = append(out, Observed{Dispatch: d, Received: r.Timestamp})
	}
	return out, nil
}

// FromDispatches wraps dispatch values without receive times.
func FromDispatches(ds []codecs.Dispatch) []Observed {
	out := make([]Observed, len(ds))
	for i, d := range ds {
		out[i] = Observed{Dispatch: d}
	}
	return out
}

// Report is the outcome of Check.
type Report struct {
	Expected  int // fires that must be delivered
	Delivered int // distinct expected fire_ids seen
	Missing   []string
	// Duplicates is the number of extra copies of expected fire_ids (an id
	// seen 3 times counts 2); DuplicateIDs how many ids were repeated.
	Duplicates   int
	DuplicateIDs int
	// DuplicateMismatches lists repeated fire_ids whose copies differ in
	// job_id, scheduled_at or payload (must be empty: a repeat is the same
	// event).
	DuplicateMismatches []string
	// Unexpected: scheduled fires in the window (or of unknown jobs) whose
	// fire_id is not expected, e.g. before the put time.
	Unexpected []string
	// AllowedMissing counts fires in the window excluded by a misfire
	// policy; AllowedDelivered how many of those were nevertheless seen
	// (they are also in Unexpected).
	AllowedMissing   int
	AllowedDelivered int
	// Mismatches: delivered events whose content disagrees with the
	// expectation (fire_id not "<job>@<scheduled_at>", payload, missed).
	Mismatches []string
	// OutsideWindow: scheduled fires of known jobs outside (From, To];
	// NotScheduled: bucket and manual fires (not audited).
	OutsideWindow int
	NotScheduled  int
	Events        int // scheduled events in the window, copies included
	// Lateness (received - scheduled_at) of the first copy of each
	// delivered fire, when receive times are known.
	Lateness Lateness
}

// Lateness summarises received - scheduled_at.
type Lateness struct {
	N                  int
	Min, P50, P99, Max time.Duration
}

// String is a one-line summary.
func (r Report) String() string {
	s := fmt.Sprintf("expected %d, delivered %d, missing %d, duplicates %d (%d ids, %d mismatching), unexpected %d, allowed missing %d, mismatches %d, events %d, outside window %d",
		r.Expected, r.Delivered, len(r.Missing), r.Duplicates, r.DuplicateIDs, len(r.DuplicateMismatches), len(r.Unexpected),
		r.AllowedMissing, len(r.Mismatches), r.Events, r.OutsideWindow)
	if r.Lateness.N > 0 {
		s += fmt.Sprintf(", lateness min %s p50 %s p99 %s max %s", r.Lateness.Min, r.Lateness.P50, r.Lateness.P99, r.Lateness.Max)
	}
	return s
}

// Err returns an error when anything must-not-happen happened: missing
// fires, unexpected fires, mismatching duplicates or contents.
func (r Report) Err() error {
	var errs []error
	if len(r.Missing) > 0 {
		errs = append(errs, fmt.Errorf("%d missing fires, e.g. %s", len(r.Missing), head(r.Missing)))
	}
	if len(r.Unexpected) > 0 {
		errs = append(errs, fmt.Errorf("%d unexpected fires, e.g. %s", len(r.Unexpected), head(r.Unexpected)))
	}
	if len(r.DuplicateMismatches) > 0 {
		errs = append(errs, fmt.Errorf("%d repeated fire_ids with differing copies, e.g. %s", len(r.DuplicateMismatches), head(r.DuplicateMismatches)))
	}
	if len(r.Mismatches) > 0 {
		errs = append(errs, fmt.Errorf("%d events with wrong content, e.g. %s", len(r.Mismatches), head(r.Mismatches)))
	}
	return errors.Join(errs...)
}

func head(s []string) string {
	if len(s) > 5 {
		return strings.Join(s[:5], ", ") + ", ..."
	}
	return strings.Join(s, ", ")
}

type jobSpec struct {
	every       time.Duration
	at          time.Time
	start, end  time.Time
	sched       schedule.Schedule // cron
	grace       time.Duration
	policy      string
	payload     json.RawMessage
	hasAt, cron bool
}

func parseDef(d codecs.JobDef) (jobSpec, error) {
	var j jobSpec
	n := 0
	for _, s := range []string{d.Cron, d.Every, d.At} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return j, errors.New("exactly one of cron, every, at")
	}
	var err error
	parseTime := func(s string) (time.Time, error) {
		if s == "" {
			return time.Time{}, nil
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		return t.UTC(), err
	}
	if j.start, err = parseTime(d.Start); err != nil {
		return j, err
	}
	if j.end, err = parseTime(d.End); err != nil {
		return j, err
	}
	switch {
	case d.Every != "":
		if j.every, err = time.ParseDuration(d.Every); err != nil {
			return j, err
		}
		if j.every < time.Second {
			return j, fmt.Errorf("every %s < 1s", j.every)
		}
	case d.At != "":
		if j.at, err = parseTime(d.At); err != nil {
			return j, err
		}
		j.hasAt = true
	default:
		j.cron = true
		if j.sched, err = schedule.Parse(schedule.Spec{Cron: d.Cron, TZ: d.TZ, Start: j.start, End: j.end, DST: dstOf(d)}); err != nil {
			return j, err
		}
	}
	j.grace = DefaultGrace
	if d.MisfireGrace != "" {
		if j.grace, err = time.ParseDuration(d.MisfireGrace); err != nil {
			return j, err
		}
	}
	j.policy = d.MisfirePolicy
	if j.policy == "" {
		j.policy = codecs.MisfireFireOnce
	}
	if len(d.Payload) > 0 && !bytes.Equal(d.Payload, []byte("null")) {
		var b bytes.Buffer
		if err := json.Compact(&b, d.Payload); err != nil {
			return j, err
		}
		j.payload = b.Bytes()
	}
	return j, nil
}

// fires returns the scheduled times of j in (after, upTo], ascending.
func (j *jobSpec) fires(after, upTo time.Time) []time.Time {
	if !j.start.IsZero() && after.Before(j.start) {
		after = j.start.Add(-1)
	}
	if !j.end.IsZero() && upTo.After(j.end) {
		upTo = j.end
	}
	if !upTo.After(after) {
		return nil
	}
	var out []time.Time
	switch {
	case j.hasAt:
		if j.at.After(after) && !j.at.After(upTo) {
			out = append(out, j.at)
		}
	case j.cron:
		for t := j.sched.Next(after); !t.IsZero() && !t.After(upTo); t = j.sched.Next(t) {
			out = append(out, t.UTC())
		}
	default:
		var origin int64 // Unix epoch
		if !j.start.IsZero() {
			origin = j.start.UnixNano()
		}
		p := int64(j.every)
		// first k with origin + k*p > after: k = floor((after-origin)/p) + 1
		d := after.UnixNano() - origin
		k := d / p
		if d%p != 0 && d < 0 {
			k--
		}
		k++
		for n := origin + k*p; n <= upTo.UnixNano(); n += p {
			out = append(out, time.Unix(0, n).UTC())
		}
	}
	return out
}

// Expect computes the fires of jobs that should be dispatched in the window.
func Expect(jobs []Job, opts Options) (*Plan, error) {
	p := &Plan{Opts: opts, Expected: map[string]Expected{}, Allowed: map[string]string{}, jobs: map[string]bool{}}
	// Effective advances: strictly increasing.
	var adv []time.Time
	for _, t := range opts.Advances {
		if len(adv) == 0 || t.After(adv[len(adv)-1]) {
			adv = append(adv, t.UTC())
		}
	}
	for _, job := range jobs {
		j, err := parseDef(job.Def)
		if err != nil {
			return nil, fmt.Errorf("audit: job %q: %w", job.ID, err)
		}
		p.jobs[job.ID] = true
		after := opts.From
		if job.PutAt.After(after) {
			after = job.PutAt
		}
		times := j.fires(after, opts.To)
		add := func(at time.Time, missed int64) {
			id := codecs.ScheduledFireID(job.ID, at)
			p.Expected[id] = Expected{FireID: id, JobID: job.ID, ScheduledAt: at, Payload: j.payload, Missed: missed}
		}
		if adv == nil {
			for _, at := range times {
				add(at, 0)
			}
			continue
		}
		// Group the fires by the advance that reaches them. Fires after the
		// last advance are never reached: not expected, not allowed.
		i := 0
		for _, T := range adv {
			var group []time.Time
			for i < len(times) && !times[i].After(T) {
				group = append(group, times[i])
				i++
			}
			var late, onTime []time.Time
			for _, at := range group {
				if T.Sub(at) > j.grace {
					late = append(late, at)
				} else {
					onTime = append(onTime, at)
				}
			}
			carry := int64(0)
			switch j.policy {
			case codecs.MisfireSkip:
				for _, at := range late {
					p.Allowed[codecs.ScheduledFireID(job.ID, at)] = job.ID
				}
				carry = int64(len(late))
			case codecs.MisfireFireAll:
				// The latest MaxCatchUp late fires; the first dispatched
				// one carries the number dropped.
				drop := max(len(late)-MaxCatchUp, 0)
				for _, at := range late[:drop] {
					p.Allowed[codecs.ScheduledFireID(job.ID, at)] = job.ID
				}
				for k, at := range late[drop:] {
					m := int64(0)
					if k == 0 {
						m = int64(drop)
					}
					add(at, m)
				}
			default: // fire_once
				if len(late) > 0 {
					for _, at := range late[:len(late)-1] {
						p.Allowed[codecs.ScheduledFireID(job.ID, at)] = job.ID
					}
					add(late[len(late)-1], int64(len(late)-1))
				}
			}
			for k, at := range onTime {
				m := int64(0)
				if k == 0 {
					m = carry
				}
				add(at, m)
			}
			if i == len(times) {
				break
			}
		}
	}
	return p, nil
}

// Check compares the consumed events with the plan.
func (p *Plan) Check(obs []Observed) Report {
	var r Report
	r.Expected = len(p.Expected)
	r.AllowedMissing = len(p.Allowed)
	first := map[string]codecs.Dispatch{}
	count := map[string]int{}
	var late []time.Duration
	seenUnexpected := map[string]bool{}
	mismatch := map[string]bool{}
	for _, o := range obs {
		d := o.Dispatch
		if d.Trigger != codecs.TriggerSchedule {
			r.NotScheduled++
			continue
		}
		at := d.ScheduledAt.UTC()
		inWindow := at.After(p.Opts.From) && !at.After(p.Opts.To)
		if p.jobs[d.JobID] && !inWindow {
			r.OutsideWindow++
			continue
		}
		r.Events++
		count[d.FireID]++
		if f, ok := first[d.FireID]; ok {
			if f.JobID != d.JobID || !f.ScheduledAt.Equal(d.ScheduledAt) || !bytes.Equal(f.Payload, d.Payload) {
				if !mismatch[d.FireID] {
					mismatch[d.FireID] = true
					r.DuplicateMismatches = append(r.DuplicateMismatches, d.FireID)
				}
			}
			continue
		}
		first[d.FireID] = d
		if want := codecs.ScheduledFireID(d.JobID, at); want != d.FireID {
			r.Mismatches = append(r.Mismatches, fmt.Sprintf("%s: fire_id should be %s", d.FireID, want))
		}
		e, ok := p.Expected[d.FireID]
		if !ok {
			if _, allowed := p.Allowed[d.FireID]; allowed {
				r.AllowedDelivered++
			}
			if !seenUnexpected[d.FireID] {
				seenUnexpected[d.FireID] = true
				r.Unexpected = append(r.Unexpected, d.FireID)
			}
			continue
		}
		r.Delivered++
		if !bytes.Equal(e.Payload, d.Payload) {
			r.Mismatches = append(r.Mismatches, fmt.Sprintf("%s: payload %s, want %s", d.FireID, d.Payload, e.Payload))
		}
		if p.Opts.Advances != nil && e.Missed != d.Missed {
			r.Mismatches = append(r.Mismatches, fmt.Sprintf("%s: missed %d, want %d", d.FireID, d.Missed, e.Missed))
		}
		if !o.Received.IsZero() {
			late = append(late, o.Received.Sub(at))
		}
	}
	for id, n := range count {
		if n > 1 {
			if _, ok := p.Expected[id]; ok {
				r.Duplicates += n - 1
				r.DuplicateIDs++
			}
		}
	}
	for id := range p.Expected {
		if _, ok := first[id]; !ok {
			r.Missing = append(r.Missing, id)
		}
	}
	sort.Strings(r.Missing)
	sort.Strings(r.Unexpected)
	sort.Strings(r.DuplicateMismatches)
	if len(late) > 0 {
		sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
		q := func(f float64) time.Duration { return late[min(int(f*float64(len(late))), len(late)-1)] }
		r.Lateness = Lateness{N: len(late), Min: late[0], P50: q(0.5), P99: q(0.99), Max: late[len(late)-1]}
	}
	return r
}

// dstOf is the DST policy of a definition (zero: the default).
func dstOf(d codecs.JobDef) schedule.DST {
	if d.DST == nil {
		return schedule.DST{}
	}
	return schedule.DST{Gap: d.DST.Gap, Overlap: d.DST.Overlap}
}
