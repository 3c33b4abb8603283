package codecs

import (
	"time"

	"github.com/chronos-scheduler/chronos/schedule"
)

// CountAfter counts the times of s after h, up to limit.
func CountAfter(s schedule.Schedule, h time.Time, limit uint64) uint64 {
	var n uint64
	for t := s.Next(h); !t.IsZero() && n < limit; t = s.Next(t) {
		n++
	}
	return n
}

// RemainingFires is how many scheduled times job key, whose record is r,
// has left under its fire limit once it is handled through h, given the
// parsed schedule s of its spec; ok is false when it has no limit. A
// completed job has none left.
func (r *JobRecord) RemainingFires(key string, s schedule.Schedule, h time.Time) (n uint64, ok bool) {
	if r.Job.MaxFires == 0 {
		return 0, false
	}
	if r.Status == StatusCompleted {
		return 0, true
	}
	return CountAfter(JobSchedule(key, r, s), h, r.Quota), true
}
