package scheduler

import (
	"slices"
	"strings"
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
	"github.com/chronos-scheduler/chronos/store"
)

// dueDecision is what one due entry does in an advance to t: the fires it
// dispatches (Plan), where its index entry moves once they are
// acknowledged, the loopback it then sends (a complete, a purge or a
// settle; nil: none), and whether it stays due at or before t (Cut: the
// chunk ends at it and the advance continues it).
type dueDecision struct {
	Rec  *codecs.JobRecord // the job's record (nil: unreadable)
	Plan Plan
	Move store.Move
	Loop *codecs.ShardTrigger // its AfterKey is unset; the loopback's key is the job's
	Cut  bool
}

// decideDue decides what the due entry d of job record value does in an
// advance to t, with bytesLeft of the chunk's event budget (at least one
// fire is planned whatever it is). buf is reused for the plan's fires.
// Entries of jobs that are gone, not active or paused, or whose schedule
// no longer parses, are stale: they are removed, and a deleted job's
// tombstone, due once its retention has passed, is purged. cals answers
// for the named calendars the job excludes, read now (nil: none).
func decideDue(d store.Due, value []byte, t time.Time, bytesLeft, maxCatchUp int, schedules *schedule.Cache, cals schedule.CalendarSource, buf []Fire) dueDecision {
	dec := dueDecision{Move: store.Move{Key: d.Key}, Plan: Plan{Fires: buf[:0]}}
	rec, err := codecs.DecodeJobRecord(value)
	if err != nil {
		return dec
	}
	dec.Rec = rec
	// The scan found the entry at d.At and the record says its bucket
	// entry: the move need not read them back.
	dec.Move.From, dec.Move.Bucket = d.At, indexedBucket(rec)
	if rec.Status == codecs.StatusDeleted {
		dec.Loop = &codecs.ShardTrigger{Kind: codecs.KindPurge, T: t, Version: rec.Version} // its retention has passed
		return dec
	}
	if rec.Status != codecs.StatusActive && rec.Status != codecs.StatusPaused {
		return dec
	}
	sched, err := jobSchedule(schedules, d.Key, rec)
	if err != nil {
		return dec
	}
	upTo := t
	if rec.Status == codecs.StatusPaused {
		// A paused job is due only for fires it owed before its pause
		// (NotBefore is the pause's time): those, and no later ones, each
		// late or not against this advance's T, as an active job's and as
		// a command's (sendOwed) are: judged against the pause's time, a
		// fire's fate depended on whether the pause was consumed before
		// the pass or during it, and a resume consumed ahead of a pass
		// delivered again lost the times the pass would have sent
		// (adversary round 42).
		upTo = earlier(t, rec.NotBefore)
	}
	est := eventOverhead + 2*len(d.Key) + len(rec.Job.Bucket) + len(rec.Job.Payload)
	planned, first := plannedFrom(sched, rec, cals, upTo, d.At)
	plan := planFires(planned, first, upTo, graceAt(rec.Job.MisfireGrace, upTo, t), rec.Job.MisfirePolicy, maxCatchUp, bytesLeft/est, buf)
	plan.Next = indexNext(sched, rec, plan.Next, upTo)
	withScheduled(sched, plan.Fires)
	if rec.Status == codecs.StatusPaused {
		// Its record learns how far it got after every fire, so that a
		// resume, a put or a new owner never sends one again.
		if plan.Next.After(rec.NotBefore) {
			plan.Next = time.Time{}
		}
		got := upTo // how far its fires went (sentRecord reads it)
		if !plan.Next.IsZero() {
			got = earlier(plan.Next.Add(-time.Nanosecond), upTo)
		}
		dec.Loop = &codecs.ShardTrigger{Kind: codecs.KindSettle, Version: rec.Version, T: got, Jitter: rec.Job.Jitter}
	} else {
		switch {
		case plan.Next.IsZero():
			dec.Loop = &codecs.ShardTrigger{Kind: codecs.KindComplete, T: t, Version: rec.Version}
		case !rec.Through.IsZero() || !plan.Next.After(t):
			dec.Loop = &codecs.ShardTrigger{Kind: codecs.KindSettle, Version: rec.Version, T: earlier(plan.Next.Add(-time.Nanosecond), t), Jitter: rec.Job.Jitter}
		}
	}
	dec.Plan, dec.Move.To = plan, plan.Next
	dec.Cut = !plan.Next.IsZero() && !plan.Next.After(t)
	return dec
}

// maxQueuedWaits is how many advances may arrive while the pass under way
// does not continue (yield again, or complete) before its continuation is
// sent again. The clock sends one a second, and a pass continues every
// ChunkBudget or so: a minute's worth is only reached by a continuation
// that is not coming, or by a backlog of advances consumed ahead of it (a
// new owner after an outage), when the two continuations share the pass.
const maxQueuedWaits = 60

// queueAdvance is the shard record after an advance to t arrives while
// the pass to shard.Advancing is under way: t waits in Queued (one at or
// before the pass's T needs nothing), and wait is true, unless
// maxQueuedWaits advances already waited since the pass last continued
// (then the record is returned unchanged, for the caller to send the
// pass's continuation again).
func queueAdvance(shard codecs.ShardRecord, t time.Time) (codecs.ShardRecord, bool) {
	if shard.QueuedWaits >= maxQueuedWaits {
		return shard, false
	}
	shard.QueuedWaits++
	if t.After(shard.Advancing) {
		shard.Queued = withQueued(shard.Queued, t)
	}
	return shard, true
}

// withQueued is q (ascending) with t in its place, once; past
// codecs.MaxQueuedAdvances the newest replaces the one before it (their
// passes become one, to the newest).
func withQueued(q []time.Time, t time.Time) []time.Time {
	i, found := slices.BinarySearchFunc(q, t, func(a, b time.Time) int { return a.Compare(b) })
	if found {
		return q
	}
	q = slices.Insert(slices.Clone(q), i, t)
	if len(q) > codecs.MaxQueuedAdvances {
		q = slices.Delete(q, len(q)-2, len(q)-1)
	}
	return q
}

// nextPass is the T of the pass an advance to t begins now, when no pass is
// under way, and what then waits: t joins the advances waiting, and the
// earliest of them goes first (each advance has its own pass, in order).
// Those at or before the watermark are dropped.
func nextPass(shard codecs.ShardRecord, t time.Time) (time.Time, []time.Time) {
	q := shard.Queued
	if t.After(shard.Watermark) {
		q = withQueued(q, t)
	}
	for len(q) > 0 && !q[0].After(shard.Watermark) {
		q = q[1:]
	}
	if len(q) == 0 {
		return t, nil
	}
	return q[0], slices.Clone(q[1:])
}

// passStart decides how the advance trigger tr starts on a shard: skip
// when the shard has fired up to tr.T (a pass to tr.T or later completed,
// so a continuation of one to tr.T, run again after a crash, or overtaken
// by a pass that overlapped it, has nothing left to do); else the
// cursor to continue after, and whether the pass restarts from the start
// of the due index at every continuation (fromStart: it began while
// another pass was under way, see Scheduler.advance).
func passStart(tr codecs.ShardTrigger, shard codecs.ShardRecord) (cursor store.Due, fromStart, skip bool) {
	if !tr.T.After(shard.Watermark) {
		return store.Due{}, false, true
	}
	cursor = store.Due{At: tr.AfterAt, Key: tr.AfterKey}
	return cursor, cursor == (store.Due{}) && !shard.Advancing.IsZero(), false
}

// passCuts is where a callback of the pass to t starts its record of the
// jobs that pass has cut short and not handled again (noteCuts): the
// shard record's, if it is that pass's, else none.
func passCuts(shard codecs.ShardRecord, t time.Time) map[string]time.Time {
	cuts := map[string]time.Time{}
	if shard.Advancing.Equal(t) {
		for _, c := range shard.PassCuts {
			cuts[c.Key] = c.To
		}
	}
	return cuts
}

// noteCuts updates cuts with a chunk's moves: a job cut short (its entry
// moved to a time at or before t) is added with that time, one handled
// through t leaves. Nothing is written per fire while no job is cut.
func noteCuts(cuts map[string]time.Time, moves []store.Move, t time.Time) {
	for _, m := range moves {
		if !m.To.IsZero() && !m.To.After(t) {
			cuts[m.Key] = m.To
		} else if len(cuts) > 0 {
			delete(cuts, m.Key)
		}
	}
}

// passYield decides what a pass to t that stops after its budget, with its
// last handled entry last, leaves behind: the shard record saying an
// advance to t is under way and how far it got (nil: a later one is under
// way, whose cursor stays), and the loopback trigger that continues the
// pass. Every entry up to last in the index this callback scanned was
// handled: through t, or cut short with its entry moved past last. cuts
// are the jobs the pass has cut short and not handled again (passCuts,
// then noteCuts), kept in the shard record (PassCuts). A store that did
// not follow the pass reads all that back (passedThrough).
func passYield(shard codecs.ShardRecord, t time.Time, last store.Due, fromStart bool, cuts map[string]time.Time) (*codecs.ShardRecord, codecs.ShardTrigger) {
	next := codecs.ShardTrigger{Kind: codecs.KindAdvance, T: t, AfterAt: last.At, AfterKey: last.Key}
	if fromStart {
		next.AfterAt, next.AfterKey = time.Time{}, ""
	}
	if shard.Advancing.After(t) {
		return nil, next
	}
	if shard.Advancing.Equal(t) && !shard.PassAt.IsZero() {
		// Passes to the same t (one begun while the other was under way)
		// each handled everything up to their own cursor: the later of the
		// two holds for both. A cut is a fact of the index, whichever pass
		// made it.
		if cursor := (store.Due{At: shard.PassAt, Key: shard.PassKey}); !cursor.NotAfter(last) {
			last = cursor
		}
	} else {
		// A new pass. If the last one is still under way (a pass to an
		// earlier T: this one began during it), it moves entries the table
		// does not hear of (its cursor and cuts are no longer recorded), so
		// an entry a store derives behind this pass's cursor may be one
		// that pass handled and this one has not reached yet: only the
		// cursor's time is known then (simulation seed 80157 x 1500 lost a
		// fire when this pass's T was read for it).
		shard.PassCutsLost = !shard.Advancing.IsZero()
	}
	shard.Advancing, shard.PassAt, shard.PassKey, shard.PassCuts = t, last.At, last.Key, nil
	if len(cuts) > codecs.MaxPassCuts {
		shard.PassCutsLost = true
	}
	if !shard.PassCutsLost {
		for k, to := range cuts {
			shard.PassCuts = append(shard.PassCuts, codecs.PassCut{Key: k, To: to})
		}
		slices.SortFunc(shard.PassCuts, func(a, b codecs.PassCut) int { return strings.Compare(a.Key, b.Key) })
	}
	return &shard, next
}

// passedThrough reports whether the advance under way (shard.Advancing)
// has handled job key's due entry due, as a store that did not follow it
// derives it from rec, and through when. It has when the entry is at or
// before the cursor its last yield recorded, no later than its T, and rec
// was not written during that advance (a command then writes a record
// owing fires behind the shard's time with OwedAt = Advancing: its entry
// may sit behind the cursor, never handled). It handled the job through
// its T, or, cut short, up to the entry it left (PassCuts); when the cuts
// were too many to keep, through the cursor's time at least (a cut
// job's entry is always after the cursor).
func passedThrough(shard codecs.ShardRecord, rec *codecs.JobRecord, key string, due time.Time) (time.Time, bool) {
	if shard.Advancing.IsZero() || !shard.Advancing.After(shard.Watermark) || shard.PassAt.IsZero() || due.IsZero() || due.After(shard.Advancing) {
		return time.Time{}, false
	}
	if !rec.OwedAt.IsZero() && !rec.OwedAt.Before(shard.Advancing) {
		return time.Time{}, false
	}
	if !(store.Due{At: due, Key: key}).NotAfter(store.Due{At: shard.PassAt, Key: shard.PassKey}) {
		return time.Time{}, false
	}
	if shard.PassCutsLost {
		return later(due, shard.PassAt.Add(-time.Nanosecond)), true
	}
	if i, found := slices.BinarySearchFunc(shard.PassCuts, key, func(c codecs.PassCut, k string) int { return strings.Compare(c.Key, k) }); found {
		return later(due, shard.PassCuts[i].To.Add(-time.Nanosecond)), true
	}
	return shard.Advancing, true
}

// restoredThrough is passedThrough as a store that begins to follow the
// pass under way (restoreCuts) reads it: a record that owes since the
// watermark's time or later is handled only through the cursor's time.
// The pass that completed to the watermark may have fired the job (it
// began after the write) or not (it was under way), and its settle may
// have been lost in a crash, so the entry derived here may lie behind the
// one this pass saw, after its cursor: simulation seed 190 x 800 (small
// chunks) lost a fire when it was read as handled through T (a resume
// while advances were queued, the settle of the pass to the last of them
// lost, the store wiped). Commands keep passedThrough's answer: read so
// by a command consumed before the job's settle, it repeated fires after
// a clean rebalance and, with a put that changed the job's jitter, sent
// them with the put's payload (adversary round 25b). The job's entry,
// once moved here, is after the cursor, where a command reads it as is.
func restoredThrough(shard codecs.ShardRecord, rec *codecs.JobRecord, key string, due time.Time) (time.Time, bool) {
	through, ok := passedThrough(shard, rec, key, due)
	if ok && through.Equal(shard.Advancing) && !rec.Through.IsZero() && !rec.OwedAt.IsZero() && !rec.OwedAt.Before(shard.Watermark) {
		return later(due, shard.PassAt.Add(-time.Nanosecond)), true
	}
	return through, ok
}

// passDone is the shard record once a pass to t has fired everything due
// up to t: the watermark moves to t (never back), a later pass under way
// stays recorded, and bucket fan-outs done long enough are forgotten.
func passDone(shard codecs.ShardRecord, t time.Time) codecs.ShardRecord {
	done := shard // the rest (backfills, bulk operations) as it was
	done.Watermark, done.Advancing = later(t, shard.Watermark), time.Time{}
	done.PassAt, done.PassKey, done.PassCuts, done.PassCutsLost, done.PassOpen = time.Time{}, "", nil, false, false
	done.QueuedWaits, done.BegunBy = 0, time.Time{}
	for len(done.Queued) > 0 && !done.Queued[0].After(done.Watermark) {
		done.Queued = done.Queued[1:]
	}
	done.Fanouts = prunedFanouts(shard.Fanouts, t)
	if shard.Advancing.After(t) {
		// A later pass is still under way, with its cursor.
		done.Advancing, done.PassAt, done.PassKey, done.PassCuts, done.PassCutsLost, done.PassOpen = shard.Advancing, shard.PassAt, shard.PassKey, shard.PassCuts, shard.PassCutsLost, shard.PassOpen
		done.QueuedWaits, done.BegunBy = shard.QueuedWaits, shard.BegunBy
	}
	return done
}

// bucketEvent is the dispatch event a bucket trigger tr makes of the job
// key with record value, fired at firedAt; ok is false when the job does
// not fire (unreadable, not active, or in another bucket now).
func bucketEvent(key string, value []byte, tr codecs.ShardTrigger, firedAt time.Time) (msg Msg, ok bool) {
	rec, err := codecs.DecodeJobRecord(value)
	if err != nil || rec.Status != codecs.StatusActive || rec.Job.Bucket != tr.Bucket || fanned(rec, tr) {
		return Msg{}, false
	}
	return bucketFire(key, rec, tr, firedAt), true
}

// fanned reports whether a command sent rec's fire of bucket trigger tr
// itself (codecs.JobRecord.Fanned).
func fanned(rec *codecs.JobRecord, tr codecs.ShardTrigger) bool {
	return markedIn(rec.Fanned, codecs.FanoutRef{TriggerID: tr.TriggerID, T: tr.T})
}

// bucketFire is the dispatch event of job key (record rec) for bucket
// trigger tr.
func bucketFire(key string, rec *codecs.JobRecord, tr codecs.ShardTrigger, firedAt time.Time) Msg {
	payload := rec.Job.Payload
	if tr.Payload != nil {
		payload = tr.Payload
	}
	return triggeredEvent(key, rec, codecs.TriggerBucket, tr.TriggerID, tr.T, firedAt, payload)
}
