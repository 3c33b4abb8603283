package scheduler

import (
	"sync"
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
	"github.com/chronos-scheduler/chronos/store"
)

// An advance spread over several callbacks may change hands in the middle:
// a clean rebalance, a crash, a restart reopen the partition's store, whose
// due index is then derived (restored, or rebuilt by ensureIndex) from a
// table whose watermark the pass has not moved yet. Every job the pass had
// already fired, behind its cursor, is then due again at the time it fired.
// The continuation does not fire them again (its cursor is past them), and
// when the pass completes they are re-derived from their records under the
// new watermark: the index is again the one a rebuild from the table gives,
// and the next advance does not send them again. Entries still owed behind
// the cursor (a command applied during the pass: its record says so in
// Through) derive to where they are and stay.

// passes remembers, per partition, the pass its open store began (saw as a
// trigger, not a continuation from the loopback), so that a continuation can
// tell whether its store followed the whole pass. Safe for concurrent use.
type passes struct {
	mu sync.Mutex
	by map[int32]passState
}

type passState struct {
	st        *store.Store
	t         time.Time
	inherited bool
	restored  bool // restoreCuts has run on st for this pass
}

// note records a callback of the pass to t on partition p's store st
// (continuation: from the loopback) and reports whether st has followed the pass
// only from the middle (opened, or rebuilt, since it began).
func (ps *passes) note(p int32, st *store.Store, t time.Time, continuation, rebuilt bool) (inherited bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.by == nil {
		ps.by = map[int32]passState{}
	}
	cur, ok := ps.by[p]
	switch {
	case !continuation:
		cur = passState{st: st, t: t}
	case !ok || cur.st != st || !cur.t.Equal(t) || rebuilt:
		cur = passState{st: st, t: t, inherited: true}
	}
	ps.by[p] = cur
	return cur.inherited
}

// restoring reports, the first time only for partition p's store and the
// pass it notes now (note), that the store's entries of jobs the pass cut
// short are to be put back (restoreCuts): once is enough, since the store
// follows the pass from then on, and with more than codecs.MaxPassCuts cut
// jobs it reads every entry behind the cursor (2-3 µs each, adversary
// round 24b: 102-154 ms for 50,000), which every later callback of the
// pass would otherwise read again.
func (ps *passes) restoring(p int32) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	cur := ps.by[p]
	if !cur.inherited || cur.restored {
		return false
	}
	cur.restored = true
	ps.by[p] = cur
	return true
}

// rederive moves every due entry at or before t whose record, under the
// watermark t, is due elsewhere (codecs.JobRecord.Due), in batches, each
// stored with indexedUpTo t. Called when a pass to t completes on a store
// that followed it only from the middle.
func rederive(st *store.Store, t time.Time, schedules *schedule.Cache) (moved int, err error) {
	after := store.Due{}
	for {
		due, err := st.DueUpTo(t, after, recordGroup)
		if err != nil || len(due) == 0 {
			return moved, err
		}
		keys := make([]string, len(due))
		for i, d := range due {
			keys[i] = d.Key
		}
		values, err := st.GetMany(keys)
		if err != nil {
			return moved, err
		}
		var moves []store.Move
		for i, d := range due {
			rec, err := codecs.DecodeJobRecord(values[i])
			if err != nil {
				continue // the advance that reaches it removes it
			}
			var sched schedule.Schedule
			if s, err := jobSchedule(schedules, d.Key, rec); err == nil {
				sched = s
			}
			if to := rec.Due(t, sched); !to.Equal(d.At) {
				moves = append(moves, store.Move{Key: d.Key, To: to})
			}
		}
		if err := st.ApplyMoves(moves, t); err != nil {
			return moved, err
		}
		moved += len(moves)
		after = due[len(due)-1]
	}
}

// restoreCuts puts back, on a store that did not follow the pass under way
// (shard.Advancing) from its start, the jobs that pass cut short at their
// per-advance bound where it left them (the first fire it had yet to
// send). Derived from their records, whose settles may still be in flight,
// their entries sit at or behind the pass's cursor, where the continuation
// does not go back; the pass then completed past their remaining fires,
// and a settle arriving after it found nothing owed behind the watermark
// (simulation seeds 700077 and 700096 x 1500 operations lost the 1,396 and
// 1,116 fires after a job's first 10,000 so: a crash after the callback
// that cut the job, the store restored from the changelog).
//
// The shard record names the cut jobs (PassCuts), up to codecs.MaxPassCuts
// of them. Beyond that (PassCutsLost) it knows only the cursor, so every
// job behind it may have been cut anywhere after the cursor's time: each
// such entry moves to its first time after that, as passedThrough (the
// rule commands use) has it. Jobs the pass did handle through its T then
// repeat those times, with the same fire_ids and payload; none is lost (a
// chunk's event bytes cut a plan too: 70 jobs cut after 2 fires each,
// TestAdv24CutsLostCrashLosesFires). That repeats even after a clean
// rebalance, which otherwise repeats nothing: open, docs/reliability.md
// (TestAdv24CutsLostCleanRebalanceRepeats, tagged adversary24open).
//
// Paused jobs too: the times they owe from before their pause are fired and
// cut the same way (adversary round 24 lost 13 of them so), up to the
// pause. A job written since the pass began (a command: passedThrough
// declines) keeps its entry, as do entries already past the cursor. A job
// whose record owes since the watermark's time or later moves to its first
// time after the cursor's time too (restoredThrough: the settle of the pass
// to the watermark may have been lost, seed 190 x 800). Every entry behind
// the cursor is read, once per store and pass; the others, handled through
// T, stay for rederive.
func (s *Scheduler) restoreCuts(st *store.Store, shard codecs.ShardRecord) error {
	// Every entry behind the cursor, a group at a time: the moved ones go
	// past the cursor, where the scan stops.
	cursor := store.Due{At: shard.PassAt, Key: shard.PassKey}
	for after := (store.Due{}); ; {
		due, err := st.DueUpTo(shard.PassAt, after, recordGroup)
		if err != nil {
			return err
		}
		n := len(due)
		for len(due) > 0 && !due[len(due)-1].NotAfter(cursor) {
			due = due[:len(due)-1]
		}
		if err := s.restore(st, shard, due); err != nil {
			return err
		}
		if len(due) < recordGroup || n < recordGroup {
			return nil
		}
		after = due[len(due)-1]
	}
}

// restore moves each of the due entries cands, at or behind the cursor of
// the pass under way, to the first of its job's times the pass may not
// have sent (see restoreCuts).
func (s *Scheduler) restore(st *store.Store, shard codecs.ShardRecord, cands []store.Due) error {
	if len(cands) == 0 {
		return nil
	}
	keys := make([]string, len(cands))
	for i, d := range cands {
		keys[i] = d.Key
	}
	values, err := st.GetMany(keys)
	if err != nil {
		return err
	}
	cursor := store.Due{At: shard.PassAt, Key: shard.PassKey}
	var moves []store.Move
	for i, d := range cands {
		rec, err := codecs.DecodeJobRecord(values[i])
		if err != nil || (rec.Status != codecs.StatusActive && rec.Status != codecs.StatusPaused) {
			continue
		}
		through, ok := restoredThrough(shard, rec, d.Key, d.At)
		if !ok || !through.Before(shard.Advancing) {
			continue // not handled by the pass, or through its T: it stays for rederive
		}
		sched, err := jobSchedule(s.schedules, d.Key, rec)
		if err != nil {
			continue
		}
		to := sched.Next(through)
		if to.Equal(d.At) {
			continue
		}
		if !to.IsZero() && (store.Due{At: to, Key: d.Key}).NotAfter(cursor) {
			// A job cut short is always left after the cursor: at the
			// cursor's time, only after its key.
			to = sched.Next(to)
		}
		if rec.Status == codecs.StatusPaused && to.After(rec.NotBefore) {
			continue // a paused job owes its times up to its pause only
		}
		if !to.IsZero() && to.After(d.At) && !to.After(shard.Advancing) {
			moves = append(moves, store.Move{Key: d.Key, To: to})
		}
	}
	if len(moves) == 0 {
		return nil
	}
	indexed, err := st.IndexedUpTo()
	if err != nil {
		return err
	}
	return st.ApplyMoves(moves, indexed)
}
