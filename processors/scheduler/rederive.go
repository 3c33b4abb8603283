package scheduler

import (
	"sync"
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
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
	// restored: restoreCuts has gone through every entry behind the
	// cursor on st for this pass; until then, restoreAfter is the last
	// entry it read (restoreCuts resumes after it).
	restored     bool
	restoreAfter store.Due
	// rederiveAfter is the last entry rederive read on st for this pass,
	// when it took more than one callback.
	rederiveAfter store.Due
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

// restoreFrom reports whether partition p's store, for the pass it notes
// now (note), still has entries of jobs the pass cut short to put back
// (restoreCuts), and after which entry to resume. Once through is enough,
// since the store follows the pass from then on; with more than
// codecs.MaxPassCuts cut jobs it reads every entry behind the cursor (2-6
// µs each, adversary rounds 24b and 25b: 102-154 ms for 50,000), which
// every later callback of the pass would otherwise read again. It takes as
// many callbacks as the chunk budget needs (restoredTo).
func (ps *passes) restoreFrom(p int32) (after store.Due, ok bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	cur := ps.by[p]
	return cur.restoreAfter, cur.inherited && !cur.restored
}

// restoredTo records how far restoreCuts got on partition p's store for
// the pass it notes: through every entry (done), or up to after.
func (ps *passes) restoredTo(p int32, st *store.Store, after store.Due, done bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	cur, ok := ps.by[p]
	if !ok || cur.st != st {
		return
	}
	cur.restoreAfter, cur.restored = after, done
	ps.by[p] = cur
}

// rederiveFrom is the entry after which rederive resumes on partition p's
// store for the pass it notes (zero: from the start).
func (ps *passes) rederiveFrom(p int32) store.Due {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.by[p].rederiveAfter
}

// rederivedTo records how far rederive got on partition p's store st.
func (ps *passes) rederivedTo(p int32, st *store.Store, after store.Due) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if cur, ok := ps.by[p]; ok && cur.st == st {
		cur.rederiveAfter = after
		ps.by[p] = cur
	}
}

// rederive moves every due entry at or before t whose record, under the
// watermark t, is due elsewhere (codecs.JobRecord.Due), recordGroup
// records at a time from the entry after, each group stored with
// indexedUpTo t, until the callback's budget (began) is spent: all is false
// when entries may remain after next, where the pass's next callback
// resumes (a moved entry goes past t, out of the range read). Called when
// a pass to t has handled everything up to t on a store that followed it
// only from the middle; the pass completes once all is true.
func (s *Scheduler) rederive(st *store.Store, t time.Time, after store.Due, began time.Time) (moved int, next store.Due, all bool, err error) {
	const group = recordGroup
	for {
		due, err := st.DueUpTo(t, after, group)
		if err != nil || len(due) == 0 {
			return moved, after, err == nil, err
		}
		keys := make([]string, len(due))
		for i, d := range due {
			keys[i] = d.Key
		}
		values, err := st.GetMany(keys)
		if err != nil {
			return moved, after, false, err
		}
		var moves []store.Move
		for i, d := range due {
			rec, err := codecs.DecodeJobRecord(values[i])
			if err != nil {
				continue // the advance that reaches it removes it
			}
			sched, _ := jobSchedule(s.schedules, d.Key, rec) // nil if its spec no longer parses
			if to := rec.Due(t, sched); !to.Equal(d.At) {
				moves = append(moves, store.Move{Key: d.Key, To: to})
			}
		}
		if err := st.ApplyMoves(moves, t); err != nil {
			return moved, after, false, err
		}
		moved += len(moves)
		after = due[len(due)-1]
		if len(due) < group {
			return moved, after, true, nil
		}
		if time.Since(began) >= s.cfg.ChunkBudget {
			return moved, after, false, nil
		}
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
// T, move where rederive would put them when the pass completes (before
// adversary round 27 they stayed for it, and a continuation sent twice,
// the copy behind the other's cursor, fired them again).
//
// The entries are read after the entry after, recordGroup records at a
// time, until the callback's budget (began) is spent (a group is a few
// hundred µs, far below a budget; with a 1 ns budget, as in the
// simulations, each group is a callback): done is
// false when entries behind the cursor may remain after next, where the
// pass's next callback resumes (an entry moved goes past the cursor, out
// of the range read; one a command writes meanwhile is one the pass did
// not handle, which stays wherever it is read).
func (s *Scheduler) restoreCuts(st *store.Store, shard codecs.ShardRecord, after store.Due, began time.Time) (next store.Due, done bool, err error) {
	cursor := store.Due{At: shard.PassAt, Key: shard.PassKey}
	const group = recordGroup
	for {
		due, err := st.DueUpTo(shard.PassAt, after, group)
		if err != nil {
			return after, false, err
		}
		n := len(due)
		for len(due) > 0 && !due[len(due)-1].NotAfter(cursor) {
			due = due[:len(due)-1]
		}
		if err := s.restore(st, shard, due); err != nil {
			return after, false, err
		}
		if len(due) < group || n < group {
			return after, true, nil
		}
		after = due[len(due)-1]
		if time.Since(began) >= s.cfg.ChunkBudget {
			return after, false, nil
		}
	}
}

// restore moves each of the due entries cands, at or behind the cursor of
// the pass under way, to the first of its job's times the pass may not
// have sent (see restoreCuts): after the pass's T for a job it handled
// through T.
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
		if !ok {
			continue // not handled by the pass: it stays
		}
		sched, err := jobSchedule(s.schedules, d.Key, rec)
		if !through.Before(shard.Advancing) {
			// Handled through the pass's T: it goes where rederive puts it
			// when the pass completes, now, before any continuation of the
			// pass runs on this store. Left behind the cursor, it was due
			// again for a continuation sent twice (after maxQueuedWaits
			// advances waited), the copy behind the other one's cursor:
			// after a clean rebalance it fired the jobs between the two
			// cursors again (adversary round 27).
			if to := rec.Due(shard.Advancing, sched); !to.Equal(d.At) {
				moves = append(moves, store.Move{Key: d.Key, To: to})
			}
			continue
		}
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
