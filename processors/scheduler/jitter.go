package scheduler

import (
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
)

// jobSchedule is the schedule of due times of job key with record rec (see
// codecs.JobSchedule): every time the scheduler handles (the due index,
// Through, NotBefore, the shard's watermark, misfire lateness) is a due
// time; only a fire's id and scheduled_at use its scheduled time.
func jobSchedule(c *schedule.Cache, key string, rec *codecs.JobRecord) (schedule.Schedule, error) {
	s, err := c.Get(rec.Job.Spec)
	if err != nil {
		return nil, err
	}
	return codecs.JobSchedule(key, rec, s), nil
}

// withScheduled sets the scheduled time of each of fires, due times of s,
// when it differs from its due time (a jittered job).
func withScheduled(s schedule.Schedule, fires []Fire) {
	d, ok := s.(*codecs.DueSchedule)
	if !ok {
		return
	}
	for i := range fires {
		if n := d.Scheduled(fires[i].At); !n.Equal(fires[i].At) {
			fires[i].Scheduled = n
		}
	}
}

// rebase converts h, the due time an old definition of job key (record
// old) has been handled through, into the due time of the new one (record
// rec) that owes the same scheduled times: the first scheduled time the
// old one has not handled is the first the new one owes, whatever the two
// jitters. Without a jitter on either side due and scheduled times agree,
// and h stays.
func rebase(c *schedule.Cache, key string, old, rec *codecs.JobRecord, h time.Time) time.Time {
	if old.Job.Jitter == 0 && rec.Job.Jitter == 0 {
		return h
	}
	os, err := jobSchedule(c, key, old)
	if err != nil {
		return h
	}
	nd := os.Next(h)
	if nd.IsZero() {
		return h
	}
	// Every scheduled time before n has been handled by the old definition.
	n := codecs.Scheduled(os, nd)
	inner, err := c.Get(rec.Job.Spec)
	if err != nil {
		return h
	}
	first := inner.Next(n.Add(-time.Nanosecond))
	if first.IsZero() {
		return h
	}
	ns := codecs.JobSchedule(key, rec, inner)
	d, ok := ns.(*codecs.DueSchedule)
	if !ok {
		return first.Add(-time.Nanosecond)
	}
	return d.DueOf(first).Add(-time.Nanosecond)
}

// dueFrom is the due time from which job key (record rec) owes exactly the
// scheduled times after t: a put or a resume at t owes the times after it,
// and a jittered time before t whose due time is after t is not owed.
func dueFrom(c *schedule.Cache, key string, rec *codecs.JobRecord, t time.Time) time.Time {
	if rec.Job.Jitter == 0 {
		return t
	}
	inner, err := c.Get(rec.Job.Spec)
	if err != nil {
		return t
	}
	first := inner.Next(t)
	d, ok := codecs.JobSchedule(key, rec, inner).(*codecs.DueSchedule)
	if first.IsZero() || !ok {
		return t
	}
	return later(t, d.DueOf(first).Add(-time.Nanosecond))
}
