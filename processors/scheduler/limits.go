package scheduler

import (
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
)

// A job's fire limit (max_fires) counts its scheduled times: each one the
// job handles counts once, dispatched or counted as missed under its
// misfire policy. Manual and bucket fires do not count. When a job is made
// active (put, resume) it is allotted the times it has left (Quota), from
// the time it starts from, and its schedule ends at the last of them
// (LimitEnd): it completes like a job past its end. What it used so far
// (Used) follows it through updates and pauses.

// limitUsed returns how many scheduled times the fire limit of old, the
// record of job key, has counted once the job is handled through h.
func limitUsed(c *schedule.Cache, key string, old *codecs.JobRecord, h time.Time) uint64 {
	if old.Job.MaxFires == 0 {
		return 0
	}
	s, err := jobSchedule(c, key, old)
	if err != nil {
		return old.Used
	}
	return old.Used + old.Quota - codecs.CountAfter(s, h, old.Quota)
}

// allot sets the fire limit of rec, the record of job key being made
// active from from with rec.Used already counted: its Quota and LimitEnd.
// It reports whether the job has no time left (it completes).
func allot(c *schedule.Cache, key string, rec *codecs.JobRecord, from time.Time) (done bool) {
	rec.Quota, rec.LimitEnd = 0, time.Time{}
	if rec.Job.MaxFires == 0 {
		rec.Used = 0
		return false
	}
	if rec.Used >= uint64(rec.Job.MaxFires) {
		return true
	}
	s, err := jobSchedule(c, key, rec) // not clamped: LimitEnd is zero
	if err != nil {
		return false
	}
	left := uint64(rec.Job.MaxFires) - rec.Used
	var last time.Time
	for t := s.Next(from); !t.IsZero() && rec.Quota < left; t = s.Next(t) {
		last = t
		rec.Quota++
	}
	if rec.Quota == 0 {
		return true
	}
	rec.LimitEnd = codecs.Scheduled(s, last)
	return false
}
