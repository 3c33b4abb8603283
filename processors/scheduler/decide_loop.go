package scheduler

import (
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
)

// settledRecord is what a settle loopback does to rec, the record of the
// version that fired, given the shard's record and the job's local due
// entry (zero: none; everything before it has been dispatched): the record
// that says how far the job has been handled, or nil when it already says
// enough. Still behind the shard's time, an active job owes fires from
// there; caught up, it is an ordinary job again. A paused job's Through
// only moves forward. It changes nothing it is given.
func settledRecord(rec *codecs.JobRecord, shard codecs.ShardRecord, due time.Time) *codecs.JobRecord {
	next := *rec
	switch rec.Status {
	case codecs.StatusPaused:
		// Its fires owed before the pause are dispatched up to its due
		// entry, or all of them when it has none.
		h := rec.NotBefore
		if !due.IsZero() {
			h = due.Add(-time.Nanosecond)
		}
		if rec.Through.IsZero() || !h.After(rec.Through) {
			return nil
		}
		next.Through = h
		return &next
	case codecs.StatusActive:
	default:
		return nil
	}
	if due.IsZero() {
		return nil
	}
	now := shardNow(shard)
	h := due.Add(-time.Nanosecond)
	switch {
	case !h.After(rec.HandledThrough(shard.Watermark)):
		return nil // nothing new
	case h.Before(now):
		next.Through = h
	case rec.Through.IsZero():
		return nil // an ordinary job, caught up
	default:
		// Caught up. NotBefore stays at or below the shard's time, so a
		// later update starts after what was handled, not after the old
		// schedule's next time.
		next.Through, next.OwedAt, next.NotBefore = time.Time{}, time.Time{}, later(rec.NotBefore, earlier(h, now))
	}
	return &next
}

// sentRecord is what a settle's T, sent, does to rec: the fires of the
// job's schedule up to it have gone out under the version that fired, so no
// version may owe them again (it would send their fire_ids with its own
// payload). A settle of rec's own version brings it when rec's local due
// entry is behind (an index rebuilt from the record the settle had yet to
// reach); one of another version when a command changed the job while it
// was in flight (a late pause on such an index, then a put on the paused
// job: simulation seed 7794 x 800 operations). An active or paused job
// learns it as its own due entry would say it; a deleted one's tombstone so
// that a new job under its id starts after it. sent counts only up to the
// shard's time: no advance fires past it, and a settle said otherwise (a
// record forged onto the loopback) would mark the job handled for good.
// nil: rec already says enough.
func sentRecord(rec *codecs.JobRecord, shard codecs.ShardRecord, sent time.Time) *codecs.JobRecord {
	sent = earlier(sent, shardNow(shard))
	switch {
	case sent.IsZero():
		return nil
	case rec.Status == codecs.StatusDeleted:
		if !sent.After(rec.Through) {
			return nil
		}
		next := *rec
		next.Through = sent
		return &next
	}
	return settledRecord(rec, shard, sent.Add(time.Nanosecond))
}

// completedRecord is what a complete loopback does to rec: the active
// job of the version that fired its last fire is completed (nil: the
// loopback is stale, see staleLoop).
func completedRecord(rec *codecs.JobRecord, version uint64) *codecs.JobRecord {
	if rec == nil || rec.Version != version || rec.Status != codecs.StatusActive {
		return nil
	}
	next := *rec
	next.Status, next.Through, next.OwedAt = codecs.StatusCompleted, time.Time{}, time.Time{}
	return &next
}
