package scheduler

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/lovoo/goka"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
	"github.com/chronos-scheduler/chronos/store"
)

// onCommand applies one chronos-jobs record. Invalid commands go to
// chronos-rejects; nothing else changes.
func (s *Scheduler) onCommand(ctx goka.Context, msg any) {
	s.guard(ctx)
	raw, _ := msg.([]byte)
	if ctx.Key() == s.shardKeys[ctx.Partition()] && raw != nil {
		s.resolve(ctx, raw, "bulk_done", s.bulkBarrier(ctx, raw))
		return
	}
	op, err := s.command(ctx, raw)
	s.resolve(ctx, raw, op, err)
}

// command applies the command raw and returns its op ("invalid" when it
// cannot be decoded) and what went wrong, for resolve: it reads the job's
// record and the shard's, has the job settle what it owes first when the
// command needs it (owedUpTo), decides (applyCommand), and writes the new
// record or dispatches the manual fire.
func (s *Scheduler) command(ctx goka.Context, raw []byte) (string, error) {
	cmd, err := s.decodeCommand(ctx, raw)
	if err != nil {
		return "invalid", invalid(err)
	}
	cur, err := s.current(ctx)
	if err != nil {
		return cmd.Op, invalid(err)
	}
	in := commandInput{Cmd: cmd, TS: ctx.Timestamp().UTC(), Partition: ctx.Partition(), Offset: ctx.Offset(),
		Actor: codecs.Truncate(string(ctx.Headers()[codecs.ActorHeader]), codecs.HistoryActorBytes)}
	in.Old, in.Tomb = liveRecord(cur)
	applied := uint64(max(in.Offset, 0)) + 1 // JobRecord.Applied of a record this command writes
	if cur != nil && in.Offset >= 0 && uint64(in.Offset) < cur.Applied {
		return cmd.Op, s.repeated(ctx, cmd, cur)
	}
	if cur == nil {
		// A job with no record: new, or deleted and its tombstone purged
		// since. Before the purge horizon, the command was consumed before
		// (ShardRecord.Purged).
		if in.Shard, err = s.shard(ctx.Partition()); err != nil {
			return cmd.Op, err
		}
		if in.Offset >= 0 && uint64(in.Offset) < in.Shard.Purged {
			return cmd.Op, s.repeatedPurged(ctx, cmd, in.Shard.Purged)
		}
	}
	if err := checkCommand(cmd, in.Old); err != nil {
		switch skipped, repeat, serr := s.bulkSkip(ctx, cmd, err, in.Old, in.Tomb); {
		case serr != nil:
			return cmd.Op, serr
		case repeat:
			// Written again by a chunk run again after a crash.
			s.cfg.Metrics.command(cmd.Op, "repeated")
			return cmd.Op, errBulkSkipped
		case skipped:
			s.cfg.Metrics.command(cmd.Op, "skipped")
			return cmd.Op, errBulkSkipped
		}
		return cmd.Op, err
	}
	if cur != nil { // else read above
		if in.Shard, err = s.shard(ctx.Partition()); err != nil {
			return cmd.Op, err
		}
	}
	if upTo, owed := owedUpTo(cmd, in.Old, in.TS); owed {
		if in.Handled, err = s.handled(ctx, in.Shard, in.Old, upTo, cmd.Op != codecs.OpDelete); err != nil {
			return cmd.Op, err
		}
	}
	eff, err := applyCommand(in, s.schedules)
	if err != nil {
		if classify(err) == outcomeRejected && cur != nil {
			// Refused against state that more than commands change (a
			// backfill in progress, the shard's backfills): its repeat is not
			// decided again (repeated). A version conflict or an unknown
			// job is not recorded: only a later command could change that
			// answer, and it makes the repeat one, so the repeat of a
			// refused command that is still the record's last is refused
			// again, its reject sent again.
			next := *cur
			stampApplied(&next, applied, in.Shard)
			if err := s.keepEntry(ctx, in.Shard, &next); err != nil {
				return cmd.Op, err
			}
			s.setValue(ctx, codecs.EncodeJobRecord(&next))
		}
		return cmd.Op, err
	}
	if eff.Record != nil {
		// Before the record changes: a bucket fan-out's chunk may have
		// fired the job before a crash, and be run again (fannedOut).
		if eff.Record.Fanned, err = s.fannedOut(ctx, in.Shard, cur, in.Old); err != nil {
			return cmd.Op, err
		}
	}
	if eff.Fire != nil {
		if err := s.fireManual(ctx, cmd.ID, in.Old, eff.Fire); err != nil {
			return cmd.Op, err
		}
	}
	if eff.Record != nil {
		stampApplied(eff.Record, applied, in.Shard)
		if cmd.Op == codecs.OpBackfill || cmd.Op == codecs.OpCancelBackfill {
			// A copy of the record, the job not settled first (owedUpTo).
			if err := s.keepEntry(ctx, in.Shard, eff.Record); err != nil {
				return cmd.Op, err
			}
		}
		s.setValue(ctx, codecs.EncodeJobRecord(eff.Record))
	}
	if eff.Loop != nil {
		ctx.Loopback(s.shardKeys[ctx.Partition()], codecs.EncodeInternal(*eff.Loop))
	}
	return cmd.Op, nil
}

// stampApplied records on rec the command that writes it (Applied). A
// record an earlier release wrote that owes fires behind the watermark
// (Through without OwedAt, no Applied) is stamped with since when it owes
// them too, the shard's time now: with Applied set, Through without OwedAt
// reads as an advance's settle, handled through the watermark once it is
// past (codecs.JobRecord.owedThrough), and a command that copies the
// record without settling the job first (a backfill, its cancel, a refusal
// it records) would have lost those fires (adversary round 26b,
// TestAdv26bLegacyOwedRecordLosesFiresToRecordedCommand).
func stampApplied(rec *codecs.JobRecord, applied uint64, shard codecs.ShardRecord) {
	if rec.Applied == 0 && !rec.Through.IsZero() && rec.OwedAt.IsZero() && (rec.Status == codecs.StatusActive || rec.Status == codecs.StatusPaused) {
		rec.OwedAt = shardNow(shard)
	}
	rec.Applied = applied
}

// errRepeated is the outcome of a command consumed again after a crash
// before its commit (JobRecord.Applied): committed, nothing changed, no
// reject.
var errRepeated = fmt.Errorf("%w: a command consumed again after a crash; the job's record already holds its effect or a later one", errStale)

// repeatWindow is how far behind a record's Applied a repeat is expected
// at most: a crash repeats what one partition consumed since its last
// commit (about a second's worth).
const repeatWindow = 1_000_000

// repeated handles cmd, a command of ctx's job consumed again after a
// crash: its offset is before the record's Applied, so it was decided
// before (applied, or refused against the job's state and recorded), at
// or before the command that last wrote the record. It is not decided again:
// applied a second time, a put would be an update of itself (it would
// settle what the job owed, or complete a one-shot job, and so change what
// the next command owes: simulation seeds 70180 and 100351 x 3000 lost
// fires that way), a conditional command would fail on the version it set
// itself, a command before a delete would find no job, and a command
// rejected before could be accepted now (a backfill refused while another
// ran, adversary 17: such a refusal records its offset). What the crash
// may have lost besides is sent again:
// the record itself when this command wrote it last (goka writes the
// local store before the changelog, so the changelog may lack it: a new
// owner would not have the job, adversary 17), and a backfill's entry in
// the shard's registry (the registry ignores a repeat). A reject it had is
// not sent again: a command refused by its version or for want of a job
// is a repeat only when a later command followed it before the crash.
func (s *Scheduler) repeated(ctx goka.Context, cmd codecs.Command, cur *codecs.JobRecord) error {
	if uint64(ctx.Offset())+1 == cur.Applied {
		s.setValue(ctx, codecs.EncodeJobRecord(cur))
	}
	if cmd.Op == codecs.OpBackfill && cur.Backfill != nil && cur.Backfill.ID == codecs.BackfillID(ctx.Partition(), ctx.Offset()) {
		ctx.Loopback(s.shardKeys[ctx.Partition()], codecs.EncodeInternal(codecs.ShardTrigger{
			Kind: codecs.KindBackfillJoin, T: ctx.Timestamp().UTC(), Job: cmd.ID, TriggerID: cur.Backfill.ID}))
	}
	if gap := cur.Applied - uint64(ctx.Offset()); gap > repeatWindow {
		// Far more than a crash leaves uncommitted: chronos-jobs was
		// probably recreated under the scheduler's table (docs/operations.md).
		s.cfg.Logger.Warn("a command far behind the offset its job's record holds was taken for a repeat and dropped; was chronos-jobs recreated?",
			"key", ctx.Key(), "partition", ctx.Partition(), "offset", ctx.Offset(), "record_offset", cur.Applied-1)
	}
	s.cfg.Metrics.command(cmd.Op, "repeated")
	return errRepeated
}

// repeatedPurged handles cmd, a command consumed again after a crash (or
// after the group's committed offsets were lost) whose job has no record:
// its offset is before purged, the highest offset a tombstone this shard
// purged held, so it was decided before, and the job was deleted after it
// (the tombstone's delete, or a later one). Decided again, a put would
// bring the deleted job back until the replay reached its delete, and
// fire it meanwhile (adversary 17b).
func (s *Scheduler) repeatedPurged(ctx goka.Context, cmd codecs.Command, purged uint64) error {
	if gap := purged - uint64(ctx.Offset()); gap > repeatWindow {
		s.cfg.Logger.Warn("a command of a job without a record, far behind the shard's purge horizon, was taken for a repeat and dropped; was chronos-jobs recreated?",
			"key", ctx.Key(), "partition", ctx.Partition(), "offset", ctx.Offset(), "purge_horizon", purged-1)
	}
	s.cfg.Metrics.command(cmd.Op, "repeated")
	return errRepeated
}

// keepEntry makes next, a copy of the job's record written without the job
// settling first (a backfill started, cancelled or stepped, a refusal
// recorded), say how far the job has been handled as its local due entry shows
// (settledRecord), when the entry the written record derives would be
// behind it. In the middle of an advance the pass has moved the entry past
// the times it fired while the record still says only the watermark: the
// write re-derived the entry there, and the pass's continuation or the
// next advance sent those times again (adversary 17b, a refused backfill
// between an advance's callbacks; a backfill started or cancelled there
// did the same).
func (s *Scheduler) keepEntry(ctx goka.Context, shard codecs.ShardRecord, next *codecs.JobRecord) error {
	if next.Status != codecs.StatusActive && next.Status != codecs.StatusPaused {
		return nil
	}
	due, err := s.localDue(ctx, shard)
	if err != nil {
		return err
	}
	if next.Status == codecs.StatusPaused {
		if settled := settledRecord(next, shard, due); settled != nil {
			*next = *settled
		}
		return nil
	}
	sched, err := jobSchedule(s.schedules, ctx.Key(), next)
	if err != nil || due.IsZero() || !next.Due(shard.Watermark, sched).Before(due) {
		return nil
	}
	// Handled through just before its entry, and never past the shard's
	// time: a later update applies from there (adversary 17c: a Through at
	// the old schedule's next time made an update skip the new
	// definition's times in between). Owed since the shard's time, so once
	// an advance completes past it the watermark says the rest
	// (codecs.JobRecord.OwedAt).
	now := shardNow(shard)
	next.Through, next.OwedAt = earlier(due.Add(-time.Nanosecond), now), now
	return nil
}

// purge removes a deleted job's tombstone once its retention has passed, if
// the id has not been put again since (else errStale), and once the
// shard's purge horizon holds the tombstone's offset (else errStale too).
// The advance wrote the horizon before it sent the purge, but a crash can
// deliver the purge to an owner whose table lacks that write (goka writes
// the changelog and the loopback independently): the tombstone then stays,
// and the advance, delivered again, finds it due, writes the horizon and
// purges it again (adversary 18: the job's commands consumed again after
// the purge brought it back).
func (s *Scheduler) purge(ctx goka.Context, version uint64) error {
	rec, err := s.current(ctx)
	if err != nil || rec == nil || rec.Status != codecs.StatusDeleted || rec.Version != version {
		return staleLoop("purge", version, rec, err)
	}
	shard, err := s.shard(ctx.Partition())
	if err != nil {
		return err
	}
	if rec.Applied > shard.Purged {
		return fmt.Errorf("%w: purge of version %d: the shard's purge horizon (%d) is behind the tombstone's offset (%d); the next advance purges it", errStale, version, shard.Purged, rec.Applied)
	}
	s.deleteValue(ctx)
	return nil
}

// staleLoop is the errStale of a loopback of kind for version that finds
// rec (nil: none, or unreadable with err).
func staleLoop(kind string, version uint64, rec *codecs.JobRecord, err error) error {
	if err != nil {
		return fmt.Errorf("%w: %s of version %d: the record is unreadable: %w", errStale, kind, version, err)
	}
	if rec == nil {
		return fmt.Errorf("%w: %s of version %d: no record", errStale, kind, version)
	}
	return fmt.Errorf("%w: %s of version %d: the record is %s at version %d", errStale, kind, version, rec.Status, rec.Version)
}

// farFuture is the upTo of handled for commands that dispatch everything
// owed up to the shard's time.
var farFuture = time.Unix(1<<40, 0)

// handled settles what rec, the job's current record, owes before a command
// changes it, and returns the time it is then handled through: every time
// of its schedule up to it has been dispatched or counted as missed.
//
// An active job first dispatches, under its current definition, every fire
// it still owes up to the shard's time (its watermark, or an advance under
// way) and upTo: a command never leaves a due fire to nobody, and never
// makes the next definition re-send a fire_id the current one sent. The
// job's due entry is read from a local index that is current with the
// table (rebuilt first if another instance fired this shard meanwhile); a
// fire another owner dispatched in an advance it did not finish may go out
// again, with the same payload. A paused job is handled through its
// Through; any other job through its shard's time.
func (s *Scheduler) handled(ctx goka.Context, shard codecs.ShardRecord, rec *codecs.JobRecord, upTo time.Time, send bool) (time.Time, error) {
	if rec.Status == codecs.StatusPaused && !rec.Through.IsZero() {
		return s.pausedHandled(ctx, shard, rec, send)
	}
	now := shardNow(shard)
	base := later(rec.HandledThrough(shard.Watermark), now)
	if rec.Status != codecs.StatusActive {
		return base, nil
	}
	due, err := s.localDue(ctx, shard)
	if err != nil {
		return time.Time{}, err
	}
	due, passed := s.pastPass(ctx.Key(), shard, rec, due)
	until := earlier(now, upTo)
	reached := maybeSent(shard, ctx.Key(), due, passed)
	if reached {
		// The pass under way may have sent the job's fires up to its T
		// (a callback whose shard record was lost): they go out again now
		// under this definition, as if the pass had reached the job before
		// the command, so that no later definition owes them with its own
		// payload (a pause whose ts is before them, then a put).
		until = later(until, earlier(shard.Advancing, now))
	}
	if due.IsZero() {
		// No entry: it owes nothing, and whatever it had up to the shard's
		// time has gone out (a late pause: an advance under way sent a
		// one-shot job's time after the pause's ts and its complete is in
		// flight), so it is handled through the shard's time. Handled only
		// through until, a put on the paused job sent that time again with
		// its own payload (simulation seed 8959 x 800 operations).
		return later(rec.HandledThrough(shard.Watermark), now), nil
	}
	if due.After(until) {
		// Nothing owed up to until. Everything before its due entry, up to
		// the shard's time, has gone out (a late pause: well past until),
		// even if its record has not learnt it yet (a settle in flight).
		return later(later(rec.HandledThrough(shard.Watermark), until), earlier(due.Add(-time.Nanosecond), now)), nil
	}
	sched, err := jobSchedule(s.schedules, ctx.Key(), rec)
	if err != nil {
		return base, nil
	}
	return s.sendOwed(ctx, shard, rec, sched, rec.HandledThrough(shard.Watermark), due, until, reached)
}

// sendOwed dispatches the fires of rec (schedule sched, its due entry due)
// up to until and returns the time it is then handled through (base, when
// the calendars it names exclude every time up to until). reached: the
// pass under way may have reached the job already (maybeSent): its times
// go out as that pass plans them, wherever the cursor says the entry is.
func (s *Scheduler) sendOwed(ctx goka.Context, shard codecs.ShardRecord, rec *codecs.JobRecord, sched schedule.Schedule, base, due, until time.Time, reached bool) (time.Time, error) {
	// Everything it owes up to until goes out under this definition, in
	// batches of at most ChunkBytes of events like fan-out chunks (a job
	// with more than one batch, e.g. a late `every 1s` job with a long
	// grace, continues where the last batch stopped): the next definition
	// starts after until, so any owed fire left here would be lost. A time
	// a named calendar it excludes holds is not sent, as in an advance
	// (decideDue; adversary 16 saw a put between an advance's callbacks
	// send one).
	//
	// Each time is planned as the pass that would reach it plans it
	// (passOf): the pass under way or one waiting for it, judged against
	// that pass's T, not against the command's time (a late pause, ts
	// 10:16:15.152, sent a 10:16:15 of a grace-3s skip job that the advance
	// to 10:16:19 waiting for the pass had skipped: simulation seed
	// 4100273), in one plan per pass (a catch-up coalesced, counted and
	// bounded as that pass would: adversary round 41).
	entry := due
	planned, due := plannedFrom(sched, rec, s.cfg.Calendars, until, due)
	if due.IsZero() || due.After(until) {
		return later(base, until), nil // only times a calendar excludes
	}
	est := eventOverhead + 2*len(ctx.Key()) + len(rec.Job.Bucket) + len(rec.Job.Payload)
	limit := max(s.cfg.ChunkBytes/est, 1)
	var (
		buf    []Fire
		msgs   []Msg
		missed int64
		enc    codecs.DispatchEncoder
		fired  time.Time
	)
	end, ref := passOf(shard, ctx.Key(), entry, until, reached)
	for {
		plan := planFires(planned, due, end, graceAt(rec.Job.MisfireGrace, end, ref), rec.Job.MisfirePolicy, s.cfg.MaxCatchUp, limit-len(msgs), buf)
		withScheduled(sched, plan.Fires)
		if len(msgs) == 0 {
			fired = s.cfg.Now()
		}
		for _, f := range plan.Fires {
			msgs = append(msgs, scheduledEvent(&enc, ctx.Key(), rec, f, fired))
			s.cfg.Metrics.delay(fired.Sub(f.At))
		}
		missed += plan.Missed
		done := plan.Next.IsZero() || plan.Next.After(until)
		stuck := !done && !plan.Next.After(due) // no progress (never expected): the next definition continues
		if done || stuck || len(msgs) >= limit {
			if len(msgs) > 0 {
				if err := s.dispatch(ctx, msgs); err != nil {
					return time.Time{}, fmt.Errorf("scheduler: producing %d dispatch events before a command: %w", len(msgs), err)
				}
			}
			s.cfg.Metrics.fired(codecs.TriggerSchedule, len(msgs), missed)
			msgs, missed = nil, 0 // the producer may keep the batch it was given
			switch {
			case done:
				return until, nil
			case stuck:
				return plan.Next.Add(-time.Nanosecond), nil
			}
			// More batches to go: the record learns how far they went, as
			// a settle would, so that the command consumed again after a
			// failed produce resumes here, on this store or any other,
			// instead of sending them all again: with 1 KiB chunks and a
			// produce failing now and then, one that needs hundreds of
			// batches never completed (simulation seed 15 x 800 with
			// -sim.smallchunks; adversary round 41, one batch a waiting
			// advance). The command's own record, written last, replaces
			// it.
			if next := settledRecord(rec, shard, plan.Next); next != nil {
				s.setValue(ctx, codecs.EncodeJobRecord(next))
			}
		}
		if plan.Next.After(end) {
			// The next pass's times: planned against its own T.
			end, ref = passOf(shard, ctx.Key(), plan.Next, until, false)
		}
		due, buf = plan.Next, plan.Fires
	}
}

// passOf is the pass that would plan a job's times from entry, where its
// due entry is (or its first time after the last pass planned it), up to
// until: how far that pass plans them in one piece, end, and the time
// their lateness is measured against, ref (ref - at > grace: late). It is
// the pass under way (Advancing) when the job's entry is at or before its
// T and ahead of its cursor, which it has yet to reach; else the first
// advance waiting for it (Queued) at or after entry, whose pass plans
// every time of the job up to its T from the start of the index (a job
// behind the cursor, or behind the watermark, included); else none
// announced: until, the command's own time, for both. reached: the pass
// under way may have reached the job already (maybeSent: the entry is
// where pastPass put it, from the cursor's time alone, when the pass's
// cuts were too many to keep), so it is that pass's whatever the cursor
// says (adversary round 43: judged against the advance waiting, 45 of a
// late job's times were skipped that the pass sends on time).
func passOf(shard codecs.ShardRecord, key string, entry, until time.Time, reached bool) (end, ref time.Time) {
	if a := shard.Advancing; a.After(shard.Watermark) && !entry.After(a) &&
		(reached || (shard.PassAt.IsZero() && shard.PassKey == "") || !(store.Due{At: entry, Key: key}).NotAfter(store.Due{At: shard.PassAt, Key: shard.PassKey})) {
		return earlier(a, until), a
	}
	q := shard.Queued // ascending
	for i := sort.Search(len(q), func(i int) bool { return !q[i].Before(entry) }); i < len(q); i++ {
		if q[i].After(shard.Watermark) && q[i].After(shard.Advancing) {
			return earlier(q[i], until), q[i]
		}
	}
	return until, until
}

// graceAt is the grace that has planFires, planning up to end, judge
// lateness against ref (at or after end) instead: ref - at > grace exactly
// when end - at > graceAt. Below zero every time up to end is late; it is
// kept at -1ns, so that a late every schedule's closed form counts no
// time after end.
func graceAt(grace time.Duration, end, ref time.Time) time.Duration {
	return max(grace-ref.Sub(end), -time.Nanosecond)
}

// pastPass is job key's due entry due (its record rec), or, when the
// advance under way already handled that entry on a store this one did not
// follow (its last owner, or this one before a rebuild from the table;
// passedThrough), the job's first time after what it handled there (zero:
// none): the entry derived here is stale, and a command must not owe
// those fires again (a clean rebalance mid-advance repeated the fire at
// due with a command, adversary 17b "update"; a late pause there, then a
// put, sent them again with the put's payload, adversary 16, for active
// and paused jobs alike).
// passed reports whether it was so.
func (s *Scheduler) pastPass(key string, shard codecs.ShardRecord, rec *codecs.JobRecord, due time.Time) (time.Time, bool) {
	through, ok := passedThrough(shard, rec, key, due)
	if !ok {
		return due, false
	}
	sched, err := jobSchedule(s.schedules, key, rec)
	if err != nil {
		return due, false
	}
	return sched.Next(through), true
}

// localDue returns the due entry of ctx's key in its partition's index
// (zero: none), after making sure the index is derived for shard.
func (s *Scheduler) localDue(ctx goka.Context, shard codecs.ShardRecord) (time.Time, error) {
	st := s.Store(ctx.Partition())
	if err := s.ensureIndex(st, shard.Watermark); err != nil {
		return time.Time{}, err
	}
	return st.DueOf(ctx.Key())
}

// pausedHandled is how far rec, a paused job of ctx's key, has been handled.
// Fires it owed before its pause may have gone out since its record last
// said how far it got (a settle in flight): its local due entry knows, and
// every advance that completed since the pause sent them up to its T.
// Those a pass left open may have sent (maybeSent) go out again first when
// send is set; a delete (send unset, its owed fires dropped by contract)
// counts them handled.
func (s *Scheduler) pausedHandled(ctx goka.Context, shard codecs.ShardRecord, rec *codecs.JobRecord, send bool) (time.Time, error) {
	due, err := s.localDue(ctx, shard)
	if err != nil {
		return time.Time{}, err
	}
	h := later(rec.Through, earlier(shard.Watermark, rec.NotBefore))
	d, passed := s.pastPass(ctx.Key(), shard, rec, due)
	if !d.Equal(due) {
		if due = d; due.After(rec.NotBefore) {
			due = time.Time{} // all it owed from before its pause went out
		}
	}
	if due.IsZero() {
		// No entry: it owes nothing from before its pause (any it owed
		// went out), so it is handled through the pause.
		return later(h, rec.NotBefore), nil
	}
	if until := earlier(shard.Advancing, rec.NotBefore); maybeSent(shard, ctx.Key(), due, passed) && !due.After(until) {
		// The pass under way may have sent what it owed from before its
		// pause up to the pass's T (see handled): those go out again now.
		if !send {
			return later(h, until), nil
		}
		sched, err := jobSchedule(s.schedules, ctx.Key(), rec)
		if err == nil {
			through, err := s.sendOwed(ctx, shard, rec, sched, h, due, until, true)
			if err != nil {
				return time.Time{}, err
			}
			return later(h, through), nil
		}
	}
	return later(h, due.Add(-time.Nanosecond)), nil
}

// maybeSent reports whether the pass under way (shard.Advancing) may have
// sent a job's fires from due on (at or before the pass's T), though the
// shard record does not say so:
//   - passed (pastPass moved the job's entry, behind the cursor, to due)
//     and the cuts were too many to keep (PassCutsLost): the pass handled
//     the job through its T, or cut it somewhere after the cursor; only
//     the cursor's time is known (adversary 29: a late pause, then a put,
//     sent the times between with two payloads);
//   - or a callback of the pass began dispatching and never yielded
//     (PassOpen: it died, with or without its store), and due is after
//     the cursor its last yield recorded (behind it, passedThrough knows),
//     where passedThrough may have moved it (a job the pass cut short).
func maybeSent(shard codecs.ShardRecord, key string, due time.Time, passed bool) bool {
	t := shard.Advancing
	if t.IsZero() || !t.After(shard.Watermark) || due.IsZero() || due.After(t) {
		return false
	}
	if passed && shard.PassCutsLost {
		return true
	}
	if !shard.PassOpen {
		return false
	}
	// After the cursor (a job the pass cut short is there too, at where
	// its cut left it: adversary 30, the callback that died continued it).
	cursor := store.Due{At: shard.PassAt, Key: shard.PassKey}
	return shard.PassAt.IsZero() || !(store.Due{At: due, Key: key}).NotAfter(cursor)
}

// shard returns partition p's shard record from the local store.
func (s *Scheduler) shard(p int32) (codecs.ShardRecord, error) {
	st := s.Store(p)
	if st == nil || p < 0 || int(p) >= len(s.shardKeys) {
		return codecs.ShardRecord{}, fmt.Errorf("scheduler: no open store for partition %d", p)
	}
	b, err := st.Get(s.shardKeys[p])
	if err != nil {
		return codecs.ShardRecord{}, err
	}
	return s.decodeShard(s.shardKeys[p], b), nil
}

// shardNow is the shard's time: its watermark, or the time of an advance
// under way, or of the last one waiting for it (Queued), if that is later. A
// command consumed after an advance owes what is due up to it, whether its
// pass has begun or not.
func shardNow(shard codecs.ShardRecord) time.Time {
	now := later(shard.Watermark, shard.Advancing)
	if n := len(shard.Queued); n > 0 {
		now = later(now, shard.Queued[n-1])
	}
	return now
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// fireManual dispatches f, a manual fire of job id (record rec), through the same
// producer as every other fire, acknowledged before the command is
// committed.
func (s *Scheduler) fireManual(ctx goka.Context, id string, rec *codecs.JobRecord, f *manualFire) error {
	msg := triggeredEvent(id, rec, codecs.TriggerManual, f.TriggerID, f.At, s.cfg.Now(), f.Payload)
	if err := s.dispatch(ctx, []Msg{msg}); err != nil {
		return fmt.Errorf("scheduler: producing a manual fire: %w", err)
	}
	s.cfg.Metrics.fired(codecs.TriggerManual, 1, 0)
	return nil
}

// current decodes the table value of the message's key (nil: no job).
func (s *Scheduler) current(ctx goka.Context) (*codecs.JobRecord, error) {
	v, _ := ctx.Value().([]byte)
	if len(v) == 0 {
		return nil, nil
	}
	rec, err := codecs.DecodeJobRecord(v)
	if errors.Is(err, codecs.ErrNotJob) {
		return nil, &codecs.Error{Code: codecs.CodeReservedID, Field: "id", Reason: "the key belongs to a shard record"}
	}
	return rec, err
}
