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
	now := later(shard.Watermark, shard.Advancing)
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

// sentRecord is what a settle of another version than rec's does to rec:
// that version's fires of the job's schedule up to sent have gone out, so
// no version may owe them again (it would send their fire_ids with its own
// payload). Such a settle arrives when a command changed the job while it
// was in flight, on an owner whose due index was derived from the record
// the settle had yet to reach (a partition moved to an empty store: a late
// pause there handled the job only as far as that record said, and a put
// on the paused job then sent two fire_ids again with its own payload;
// simulation seed 7794 x 800 operations). An active or paused job learns it
// as a settle of its own version would; a deleted one's tombstone so that a
// new job under its id starts after it. nil: rec already says enough.
func sentRecord(rec *codecs.JobRecord, shard codecs.ShardRecord, sent time.Time) *codecs.JobRecord {
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
