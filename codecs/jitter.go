package codecs

import (
	"time"

	"github.com/chronos-scheduler/chronos/schedule"
)

// MaxJitter is the largest jitter a job may have.
const MaxJitter = time.Hour

// jitterSample is how many fires of a cron schedule validation reads to
// find its shortest gap, the bound of its jitter.
const jitterSample = 1000

// JitterOffset returns the delay of the scheduled fire fireID of a job
// with jitter j: a hash of the fire_id (FNV-1a 64, then the splitmix64
// finalizer) modulo j nanoseconds, in [0, j). It is 0 when j <= 0. Every
// instance, after any restart, computes the same offset for a fire_id.
func JitterOffset(fireID string, j time.Duration) time.Duration {
	if j <= 0 {
		return 0
	}
	h := uint64(14695981039346656037)
	for i := 0; i < len(fireID); i++ {
		h ^= uint64(fireID[i])
		h *= 1099511628211
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return time.Duration(h % uint64(j))
}

// DueSchedule is the schedule of a job's due times: its spec's schedule,
// clamped to the last time its fire limit allows (LimitEnd), each time
// delayed by its jitter offset. Without jitter a due time is its scheduled
// time. Safe for concurrent use.
type DueSchedule struct {
	inner    schedule.Schedule
	key      string
	jitter   time.Duration
	limitEnd time.Time
}

// JobSchedule returns the due-time schedule of job key with record rec,
// given the parsed schedule s of rec.Job.Spec. With neither a jitter nor a
// fire limit it returns s itself (so closed-form skips still apply).
func JobSchedule(key string, rec *JobRecord, s schedule.Schedule) schedule.Schedule {
	if rec.Job.Jitter <= 0 && rec.LimitEnd.IsZero() {
		return s
	}
	return &DueSchedule{inner: s, key: key, jitter: rec.Job.Jitter, limitEnd: rec.LimitEnd}
}

// Scheduled returns the scheduled (nominal) time of the due time due of
// s, a schedule JobSchedule returned: due itself unless it is a
// DueSchedule with a jitter.
func Scheduled(s schedule.Schedule, due time.Time) time.Time {
	if d, ok := s.(*DueSchedule); ok {
		return d.Scheduled(due)
	}
	return due
}

func (d *DueSchedule) nominalNext(t time.Time) time.Time {
	n := d.inner.Next(t)
	if !n.IsZero() && !d.limitEnd.IsZero() && n.After(d.limitEnd) {
		return time.Time{}
	}
	return n
}

// DueOf returns the due time of scheduled time n.
func (d *DueSchedule) DueOf(n time.Time) time.Time {
	return n.Add(JitterOffset(ScheduledFireID(d.key, n), d.jitter))
}

// Next returns the earliest due time strictly after t (zero: none). Due
// times keep the order of their scheduled times when the jitter is at most
// the schedule's shortest gap (as validation requires); Next does not rely
// on it: it returns the least due time after t among the scheduled times
// that can have one.
func (d *DueSchedule) Next(t time.Time) time.Time {
	if d.jitter <= 0 {
		return d.nominalNext(t)
	}
	// A scheduled time at or before t - jitter is due before t.
	var best time.Time
	for n := d.nominalNext(t.Add(-d.jitter)); !n.IsZero(); n = d.nominalNext(n) {
		if !best.IsZero() && n.After(best) {
			break // its due time is at least n, later than best
		}
		if due := d.DueOf(n); due.After(t) && (best.IsZero() || due.Before(best)) {
			best = due
		}
	}
	return best
}

// Scheduled returns the scheduled time whose due time is due (due itself
// when none is: not a due time of d).
func (d *DueSchedule) Scheduled(due time.Time) time.Time {
	if d.jitter <= 0 {
		return due
	}
	for n := d.nominalNext(due.Add(-d.jitter)); !n.IsZero() && !n.After(due); n = d.nominalNext(n) {
		if d.DueOf(n).Equal(due) {
			return n
		}
	}
	return due
}

// validateJitter checks a jitter against the schedule it delays: at most
// MaxJitter and at most the schedule's shortest gap (every: its period;
// cron: the shortest gap among its first jitterSample fires from its start
// or from 2026). So due times keep the order of their scheduled times.
func validateJitter(in string, spec schedule.Spec, s schedule.Schedule) (time.Duration, error) {
	j, err := time.ParseDuration(in)
	if err != nil || j < 0 || j > MaxJitter {
		return 0, errorf(CodeInvalidField, "jitter", "want a duration from 0s to %s, got %q", MaxJitter, in)
	}
	if j == 0 {
		return 0, nil
	}
	if spec.Every > 0 && len(spec.Also) == 0 && j > spec.Every {
		return 0, errorf(CodeInvalidField, "jitter", "jitter %s is longer than the period %s: fires would change order; use at most the period", j, spec.Every)
	}
	if spec.Cron != "" || len(spec.Also) > 0 || !spec.Exclude.IsZero() {
		from := spec.Start
		if from.IsZero() {
			from = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		}
		prev := s.Next(from.Add(-time.Nanosecond))
		for i := 0; i < jitterSample && !prev.IsZero(); i++ {
			n := s.Next(prev)
			if n.IsZero() {
				break
			}
			if gap := n.Sub(prev); j > gap {
				return 0, errorf(CodeInvalidField, "jitter", "jitter %s is longer than the schedule's gap of %s between %s and %s: fires would change order; use at most %s",
					j, gap, prev.UTC().Format(time.RFC3339), n.UTC().Format(time.RFC3339), gap)
			}
			prev = n
		}
	}
	return j, nil
}
