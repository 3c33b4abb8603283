package scheduler

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/lovoo/goka"

	"github.com/chronos-scheduler/chronos/codecs"
)

// onCommand applies one chronos-jobs record. Invalid commands go to
// chronos-rejects; nothing else changes.
func (s *Scheduler) onCommand(ctx goka.Context, msg any) {
	s.guard(ctx)
	raw, _ := msg.([]byte)
	cmd, err := s.decodeCommand(ctx, raw)
	if err != nil {
		s.reject(ctx, raw, err)
		s.cfg.Metrics.command("invalid", "rejected")
		return
	}
	old, err := s.current(ctx)
	if err != nil {
		s.reject(ctx, raw, err)
		s.cfg.Metrics.command(cmd.Op, "rejected")
		return
	}
	var tomb *codecs.JobRecord // a deleted job of this id, still remembered
	if old != nil && old.Status == codecs.StatusDeleted {
		tomb, old = old, nil
	}
	if cmd.IfVersion != nil {
		var have uint64
		if old != nil {
			have = old.Version
		}
		if have != *cmd.IfVersion {
			s.reject(ctx, raw, &codecs.Error{Code: codecs.CodeVersionConflict, Field: "if_version",
				Reason: fmt.Sprintf("job %q is at version %d, not %d", cmd.ID, have, *cmd.IfVersion)})
			s.cfg.Metrics.command(cmd.Op, "rejected")
			return
		}
	}
	ts := ctx.Timestamp().UTC()
	switch cmd.Op {
	case codecs.OpPut:
		rec := &codecs.JobRecord{Job: cmd.Job, CreatedAt: ts, UpdatedAt: ts, Version: uint64(max(ctx.Offset(), 0)) + 1}
		from := ts
		if tomb != nil {
			// A new job under a deleted one's id: it starts after what the
			// deleted job handled (none of its fire_ids is reused with
			// another payload), at a greater version.
			from = later(ts, tomb.Through)
			rec.Version = max(rec.Version, tomb.Version+1)
		}
		if old != nil {
			rec.Version, rec.CreatedAt = old.Version+1, old.CreatedAt
			h, err := s.handled(ctx, old, farFuture)
			if err != nil {
				failed(ctx, err)
				return
			}
			// An update continues exactly where the old definition
			// stopped: a late one re-sends nothing, one ahead of the
			// shard's time drops none of the times in between (they go
			// out under the new definition). A paused job stays clear of
			// its pause; a completed one is put again like a new job, from
			// its ts (but never before what it handled).
			from = h
			if old.Status != codecs.StatusActive && !s.owesBeforePause(old, h) {
				from = later(ts, h)
			}
		}
		if err := s.activate(ctx, rec, from); err != nil {
			failed(ctx, err)
			return
		}
		s.setValue(ctx, codecs.EncodeJobRecord(rec))
	case codecs.OpDelete:
		if old != nil {
			if err := s.delete(ctx, old, ts); err != nil {
				failed(ctx, err)
				return
			}
		}
	case codecs.OpPause, codecs.OpResume, codecs.OpFire:
		if old == nil {
			s.reject(ctx, raw, &codecs.Error{Code: codecs.CodeUnknownJob, Field: "id", Reason: "no job " + strconv.Quote(cmd.ID)})
			s.cfg.Metrics.command(cmd.Op, "rejected")
			return
		}
		if err := s.apply(ctx, cmd, old, ts); err != nil {
			failed(ctx, err)
			return
		}
	}
	s.cfg.Metrics.command(cmd.Op, "applied")
}

func (s *Scheduler) apply(ctx goka.Context, cmd codecs.Command, rec *codecs.JobRecord, ts time.Time) error {
	switch {
	case cmd.Op == codecs.OpPause && rec.Status == codecs.StatusActive:
		h, err := s.handled(ctx, rec, ts)
		if err != nil {
			return err
		}
		// The pause applies from its record time: fires the job owed up to
		// ts and has not dispatched yet (an advance under way, a catch-up)
		// still go out; NotBefore keeps ts for that.
		rec.Status, rec.Version, rec.UpdatedAt, rec.Through, rec.NotBefore = codecs.StatusPaused, rec.Version+1, ts, h, ts
		s.setValue(ctx, codecs.EncodeJobRecord(rec))
	case cmd.Op == codecs.OpResume && rec.Status == codecs.StatusPaused:
		h, err := s.handled(ctx, rec, farFuture)
		if err != nil {
			return err
		}
		from := later(ts, h)
		if s.owesBeforePause(rec, h) {
			// It still owes fires from before its pause: they are not
			// dropped (the times of the pause go out with them).
			from = h
		}
		rec.Version, rec.UpdatedAt = rec.Version+1, ts
		if err := s.activate(ctx, rec, from); err != nil {
			return err
		}
		s.setValue(ctx, codecs.EncodeJobRecord(rec))
	case cmd.Op == codecs.OpFire:
		return s.fireManual(ctx, cmd, rec, ts)
	}
	return nil
}

// delete replaces a job by its tombstone: the time it was handled through,
// its version, and (in NotBefore) the shard's time of the delete, after which
// it is kept for codecs.DeletedRetention and then purged.
func (s *Scheduler) delete(ctx goka.Context, old *codecs.JobRecord, ts time.Time) error {
	shard, err := s.shard(ctx.Partition())
	if err != nil {
		return err
	}
	// Whatever an active deleted job had or had not dispatched up to the
	// shard's time, a new job under its id starts after it. A paused one
	// dispatched nothing after its pause: a late re-put owes those times.
	h := later(old.HandledThrough(shard.Watermark), later(shard.Watermark, shard.Advancing))
	if old.Status == codecs.StatusPaused && !old.Through.IsZero() {
		if h, err = s.pausedHandled(ctx, shard, old); err != nil {
			return err
		}
	}
	s.setValue(ctx, codecs.EncodeJobRecord(&codecs.JobRecord{Status: codecs.StatusDeleted, Version: old.Version + 1,
		Job: codecs.Job{Spec: old.Job.Spec}, Through: h, NotBefore: later(shard.Watermark, shard.Advancing),
		CreatedAt: old.CreatedAt, UpdatedAt: ts}))
	return nil
}

// purge removes a deleted job's tombstone once its retention has passed, if
// the id has not been put again since.
func (s *Scheduler) purge(ctx goka.Context, version uint64) {
	rec, err := s.current(ctx)
	if err == nil && rec != nil && rec.Status == codecs.StatusDeleted && rec.Version == version {
		s.deleteValue(ctx)
	}
}

// activate makes rec active and owe the fires of its schedule after from
// (its handled-through time). When the first of them is at or before the
// shard's time (the command was consumed late, or an advance is under way),
// the record says so in Through, so that any instance rebuilding the due
// index from the table owes the same fires; those are then dispatched by
// the next advance as late fires under the misfire policy. A schedule with
// no fire after from completes the job.
func (s *Scheduler) activate(ctx goka.Context, rec *codecs.JobRecord, from time.Time) error {
	rec.Status, rec.NotBefore, rec.Through = codecs.StatusActive, from, time.Time{}
	sched, err := s.schedules.Get(rec.Job.Spec)
	if err != nil {
		return nil // the indexer logs it; the job never fires
	}
	first := sched.Next(from)
	if first.IsZero() {
		rec.Status = codecs.StatusCompleted
		return nil
	}
	shard, err := s.shard(ctx.Partition())
	if err != nil {
		return err
	}
	if !first.After(later(shard.Watermark, shard.Advancing)) {
		rec.Through = from
	}
	return nil
}

// owesBeforePause reports whether rec, a paused job handled through h, still
// owes fires from before its pause (NotBefore is the pause's time).
func (s *Scheduler) owesBeforePause(rec *codecs.JobRecord, h time.Time) bool {
	if rec.Status != codecs.StatusPaused {
		return false
	}
	sched, err := s.schedules.Get(rec.Job.Spec)
	if err != nil {
		return false
	}
	first := sched.Next(h)
	return !first.IsZero() && !first.After(rec.NotBefore)
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
func (s *Scheduler) handled(ctx goka.Context, rec *codecs.JobRecord, upTo time.Time) (time.Time, error) {
	shard, err := s.shard(ctx.Partition())
	if err != nil {
		return time.Time{}, err
	}
	if rec.Status == codecs.StatusPaused && !rec.Through.IsZero() {
		return s.pausedHandled(ctx, shard, rec)
	}
	now := later(shard.Watermark, shard.Advancing)
	base := later(rec.HandledThrough(shard.Watermark), now)
	if rec.Status != codecs.StatusActive {
		return base, nil
	}
	due, err := s.localDue(ctx, shard)
	if err != nil {
		return time.Time{}, err
	}
	until := earlier(now, upTo)
	if due.IsZero() {
		return later(rec.HandledThrough(shard.Watermark), until), nil
	}
	if due.After(until) {
		// Nothing owed up to until. Everything before its due entry, up to
		// the shard's time, has gone out (a late pause: well past until),
		// even if its record has not learnt it yet (a settle in flight).
		return later(later(rec.HandledThrough(shard.Watermark), until), earlier(due.Add(-time.Nanosecond), now)), nil
	}
	sched, err := s.schedules.Get(rec.Job.Spec)
	if err != nil {
		return base, nil
	}
	// Everything it owes up to until goes out under this definition, in
	// batches of at most ChunkBytes of events like fan-out chunks (a job
	// with more than one plan takes, e.g. a late `every 1s` job with a long
	// grace, continues where the last batch stopped): the next definition
	// starts after until, so any owed fire left here would be lost.
	est := eventOverhead + 2*len(ctx.Key()) + len(rec.Job.Bucket) + len(rec.Job.Payload)
	var buf []Fire
	for {
		plan := planFires(sched, due, until, rec.Job.MisfireGrace, rec.Job.MisfirePolicy, s.cfg.MaxCatchUp, s.cfg.ChunkBytes/est, buf)
		if len(plan.Fires) > 0 {
			fired := s.cfg.Now()
			msgs := make([]Msg, 0, len(plan.Fires))
			for _, f := range plan.Fires {
				msgs = append(msgs, scheduledEvent(ctx.Key(), rec, f, fired))
				s.cfg.Metrics.delay(fired.Sub(f.At))
			}
			if err := s.dispatch(ctx, msgs); err != nil {
				return time.Time{}, fmt.Errorf("scheduler: producing %d dispatch events before a command: %w", len(msgs), err)
			}
		}
		s.cfg.Metrics.fired(codecs.TriggerSchedule, len(plan.Fires), plan.Missed)
		if plan.Next.IsZero() || plan.Next.After(until) {
			return until, nil
		}
		if !plan.Next.After(due) {
			return plan.Next.Add(-time.Nanosecond), nil // no progress (never expected): the next definition continues
		}
		due, buf = plan.Next, plan.Fires
	}
}

// pausedHandled is how far rec, a paused job of ctx's key, has been handled.
// Fires it owed before its pause may have gone out since its record last
// said how far it got (a settle in flight): its local due entry knows, and
// every advance that completed since the pause sent them up to its T.
// localDue returns the due entry of ctx's key in its partition's index
// (zero: none), after making sure the index is derived for shard.
func (s *Scheduler) localDue(ctx goka.Context, shard codecs.ShardRecord) (time.Time, error) {
	st := s.Store(ctx.Partition())
	if err := s.ensureIndex(st, shard.Watermark); err != nil {
		return time.Time{}, err
	}
	return st.DueOf(ctx.Key())
}

func (s *Scheduler) pausedHandled(ctx goka.Context, shard codecs.ShardRecord, rec *codecs.JobRecord) (time.Time, error) {
	due, err := s.localDue(ctx, shard)
	if err != nil {
		return time.Time{}, err
	}
	h := later(rec.Through, earlier(shard.Watermark, rec.NotBefore))
	if due.IsZero() {
		// No entry: it owes nothing from before its pause (any it owed
		// went out), so it is handled through the pause.
		return later(h, rec.NotBefore), nil
	}
	return later(h, due.Add(-time.Nanosecond)), nil
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

// fireManual dispatches one fire now, through the same producer as every
// other fire, acknowledged before the command is committed. Its fire_id is
// stable across redelivery: the command's trigger id, or one derived from
// the record's partition and offset.
func (s *Scheduler) fireManual(ctx goka.Context, cmd codecs.Command, rec *codecs.JobRecord, ts time.Time) error {
	trigger := cmd.TriggerID
	if trigger == "" {
		trigger = "m-" + strconv.Itoa(int(ctx.Partition())) + "-" + strconv.FormatInt(ctx.Offset(), 10)
	}
	payload := rec.Job.Payload
	if cmd.Payload != nil {
		payload = cmd.Payload
	}
	msg := triggeredEvent(cmd.ID, rec, codecs.TriggerManual, trigger, ts, s.cfg.Now(), payload)
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
