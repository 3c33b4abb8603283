package scheduler

import (
	"fmt"
	"time"

	"github.com/lovoo/goka"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
)

// A backfill dispatches every scheduled time of a job in a past range
// [from, to), with the fire_ids those fires have, flagged backfill. Its
// progress is state in the job's record (codecs.Backfill), so whoever owns
// the partition continues it; the partition's shard record lists the
// backfills in progress (codecs.ShardRecord.Backfills), so the owner knows
// them without scanning the table. Every completed advance of the shard
// sends each listed backfill one step (a record with the job's key on the
// group's backfill topic, not the loopback: see topology.SchedulerBackfill);
// a step dispatches at most BackfillRate fires per second of shard time since
// the backfill's last step, acknowledged before its record moves forward.
// A crash between the two repeats that step's fires with the same
// fire_ids. A backfill never holds its shard longer than one step: other
// jobs fire between its steps.

// Defaults and bounds of backfills.
const (
	// DefaultBackfillRate is Config.BackfillRate's default.
	DefaultBackfillRate = 100
	// MaxBackfillRate is the largest Config.BackfillRate.
	MaxBackfillRate = 100_000
	// maxBackfillStep bounds the fires of one step whatever the rate and
	// the time since the last one (also bounded by ChunkBytes).
	maxBackfillStep = 10_000
	// maxBackfillElapsed bounds the shard time one step makes up for
	// (after an outage the shard's time jumps): the largest clock
	// resolution, so a step of an ordinary advance is never cut by it.
	maxBackfillElapsed = time.Minute
)

// planBackfill returns the times of s from next (a time of s, or zero) that
// are before to, at most n of them, and the first time after them (zero or
// not before to: the backfill is done).
func planBackfill(s schedule.Schedule, next, to time.Time, n int, buf []time.Time) (times []time.Time, after time.Time) {
	times = buf[:0]
	t := next
	for !t.IsZero() && t.Before(to) && len(times) < n {
		times = append(times, t)
		t = s.Next(t)
	}
	return times, t
}

// backfillDone reports whether a backfill whose next time is next has
// dispatched its whole range [.., to).
func backfillDone(next, to time.Time) bool { return next.IsZero() || !next.Before(to) }

// startBackfill decides a backfill command: the job's record with the
// backfill in progress and the loopback that lists it in the shard's
// registry. It refuses a job with a backfill in progress, a range reaching
// past the command's time, one with no scheduled time or more than
// codecs.MaxBackfillFires, and a shard with MaxBackfillsPerShard already.
func startBackfill(in commandInput, schedules *schedule.Cache) (commandEffect, error) {
	cmd, old := in.Cmd, in.Old
	if old.Backfill != nil {
		return commandEffect{}, &codecs.Error{Code: codecs.CodeInvalidField, Field: "from", Reason: fmt.Sprintf(
			"job %q has a backfill in progress (%s, %d of %d dispatched); cancel it first (op cancel_backfill)",
			cmd.ID, old.Backfill.ID, old.Backfill.Done, old.Backfill.Total)}
	}
	if cmd.To.After(in.TS) {
		return commandEffect{}, &codecs.Error{Code: codecs.CodeInvalidField, Field: "to", Reason: fmt.Sprintf(
			"to (%s) is after the command's time (%s): a backfill covers past times only; the schedule fires the future",
			cmd.To.Format(time.RFC3339Nano), in.TS.Format(time.RFC3339Nano))}
	}
	if n := len(in.Shard.Backfills); n >= codecs.MaxBackfillsPerShard {
		return commandEffect{}, &codecs.Error{Code: codecs.CodeInvalidField, Field: "from", Reason: fmt.Sprintf(
			"partition %d already has %d backfills in progress (the most is %d); wait for some to finish",
			in.Partition, n, codecs.MaxBackfillsPerShard)}
	}
	sched, err := schedules.Get(old.Job.Spec)
	if err != nil {
		return commandEffect{}, &codecs.Error{Code: codecs.CodeInvalidSchedule, Field: "schedule", Reason: "the job's schedule is invalid: " + err.Error()}
	}
	limit := codecs.BackfillLimit(old.Job.Spec)
	n, first := codecs.CountBackfill(sched, cmd.From, cmd.To, limit)
	if err := codecs.CheckBackfillCount(n, limit, cmd.From, cmd.To); err != nil {
		return commandEffect{}, err
	}
	bf := &codecs.Backfill{ID: codecs.BackfillID(in.Partition, in.Offset), From: cmd.From, To: cmd.To, Next: first, Total: n}
	rec := *old
	rec.Backfill = bf
	return commandEffect{Record: &rec, Loop: &codecs.ShardTrigger{Kind: codecs.KindBackfillJoin, T: in.TS, Job: cmd.ID, TriggerID: bf.ID}}, nil
}

// cancelBackfill decides a cancel_backfill command: the job's record
// without its backfill, and the loopback that drops it from the shard's
// registry (no effect when there is none).
func cancelBackfill(in commandInput) commandEffect {
	if in.Old.Backfill == nil {
		return commandEffect{}
	}
	rec := *in.Old
	rec.Backfill = nil
	return commandEffect{Record: &rec, Loop: &codecs.ShardTrigger{Kind: codecs.KindBackfillLeave, T: in.TS, Job: in.Cmd.ID, TriggerID: in.Old.Backfill.ID}}
}

// resumedBackfill is b (nil: none) for a job being resumed: its next step
// dispatches one second's worth, not the time it was paused.
func resumedBackfill(b *codecs.Backfill) *codecs.Backfill {
	if b == nil {
		return nil
	}
	r := *b
	r.LastStep = time.Time{}
	return &r
}

// backfillStep is what one step of a backfill does.
type backfillStep struct {
	Fires []time.Time       // scheduled times to dispatch, in order
	Rec   *codecs.JobRecord // the job's record after them (nil: unchanged)
	Leave bool              // the shard's registry drops the step's backfill
}

// decideBackfillStep decides step tr (its T the shard time that sent it,
// its TriggerID the backfill) for the job's record rec (nil: none): a job
// without that backfill leaves the registry; a paused job waits; a step
// for a shard time not after the backfill's last waits for the next (at
// most one step per shard time); else it dispatches up to rate fires per
// second of shard time since the last step (the first step: one second's
// worth), at most limit, from where the backfill stands. The last step
// removes the backfill from the record and leaves the registry. It changes
// nothing it is given.
func decideBackfillStep(rec *codecs.JobRecord, tr codecs.ShardTrigger, rate, limit int, schedules *schedule.Cache, buf []time.Time) backfillStep {
	if rec == nil || rec.Backfill == nil || rec.Backfill.ID != tr.TriggerID || rec.Status == codecs.StatusDeleted {
		return backfillStep{Leave: true}
	}
	bf := *rec.Backfill
	if rec.Status == codecs.StatusPaused || !tr.T.After(bf.LastStep) {
		return backfillStep{}
	}
	n := stepBudget(bf.LastStep, tr.T, rate, limit)
	if n == 0 {
		return backfillStep{} // too soon at this rate: the time accumulates
	}
	next := *rec
	next.Backfill = &bf
	sched, err := schedules.Get(rec.Job.Spec)
	if err != nil {
		next.Backfill = nil // the job cannot fire; nothing to continue
		return backfillStep{Rec: &next, Leave: true}
	}
	var after time.Time
	if !backfillDone(bf.Next, bf.To) {
		buf, after = planBackfill(sched, bf.Next, bf.To, n, buf)
	}
	bf.Next, bf.Done, bf.LastStep = after, bf.Done+int64(len(buf)), tr.T
	st := backfillStep{Fires: buf, Rec: &next}
	if backfillDone(after, bf.To) {
		next.Backfill, st.Leave = nil, true
	}
	return st
}

// stepBudget is how many fires a step at shard time t may dispatch after
// one at last (zero: none yet, counted as one second before): rate per
// second of the time between, at most limit.
func stepBudget(last, t time.Time, rate, limit int) int {
	elapsed := time.Second
	if !last.IsZero() {
		elapsed = min(t.Sub(last), maxBackfillElapsed)
	}
	n := int64(rate) * int64(elapsed) / int64(time.Second)
	return int(min(n, int64(max(limit, 1))))
}

// backfillEvent is the dispatch event of a backfill's fire of job key at
// its scheduled time at: the fire_id and content of the scheduled fire
// (with a jitter, its due_at), flagged backfill. The times are the job's
// schedule's, not cut by a fire limit (max_fires does not count them).
func backfillEvent(key string, rec *codecs.JobRecord, at, firedAt time.Time) Msg {
	ev := codecs.Dispatch{FireID: codecs.ScheduledFireID(key, at), JobID: key, Trigger: codecs.TriggerSchedule,
		ScheduledAt: at, FiredAt: firedAt, Bucket: rec.Job.Bucket, Payload: rec.Job.Payload, Backfill: true}
	if rec.Job.Jitter > 0 {
		ev.DueAt = at.Add(codecs.JitterOffset(ev.FireID, rec.Job.Jitter)) // the due time it had
	}
	return Msg{Key: key, Value: codecs.AppendDispatch(make([]byte, 0, eventOverhead+len(key)+len(rec.Job.Bucket)+len(rec.Job.Payload)), &ev)}
}

// stepBackfill runs one backfill step (a record of the backfill topic, or of
// the loopback from an earlier release, with the job's key).
func (s *Scheduler) stepBackfill(ctx goka.Context, tr codecs.ShardTrigger) error {
	if ctx.Context().Err() != nil {
		return errRevoked
	}
	rec, err := s.current(ctx)
	if err != nil {
		rec = nil // unreadable: it cannot be continued
	}
	est := eventOverhead + 2*len(ctx.Key())
	if rec != nil {
		est += len(rec.Job.Bucket) + len(rec.Job.Payload)
	}
	limit := min(maxBackfillStep, max(s.cfg.ChunkBytes/est, 1))
	st := decideBackfillStep(rec, tr, s.cfg.BackfillRate, limit, s.schedules, nil)
	if len(st.Fires) > 0 {
		now := s.cfg.Now()
		msgs := make([]Msg, len(st.Fires))
		for i, at := range st.Fires {
			msgs[i] = backfillEvent(ctx.Key(), rec, at, now)
		}
		if err := s.dispatch(ctx, msgs); err != nil {
			return fmt.Errorf("scheduler: producing %d backfill fires: %w", len(msgs), err)
		}
		s.cfg.Metrics.fired("backfill", len(msgs), 0)
	}
	if st.Rec != nil {
		// A copy of the record with the backfill's progress: between an
		// advance's callbacks it must not put the job's entry back on
		// times the pass sent (adversary 17c).
		shard, err := s.shard(ctx.Partition())
		if err != nil {
			return err
		}
		if err := s.keepEntry(ctx, shard, st.Rec); err != nil {
			return err
		}
		s.setValue(ctx, codecs.EncodeJobRecord(st.Rec))
	}
	if st.Leave {
		ctx.Loopback(s.shardKeys[ctx.Partition()], codecs.EncodeInternal(codecs.ShardTrigger{
			Kind: codecs.KindBackfillLeave, T: tr.T, Job: ctx.Key(), TriggerID: tr.TriggerID}))
	}
	return nil
}

// backfillRegistry applies a backfill_join or backfill_leave to the shard
// record's registry of backfills in progress.
func (s *Scheduler) backfillRegistry(ctx goka.Context, tr codecs.ShardTrigger) error {
	if want := s.shardKeys[ctx.Partition()]; ctx.Key() != want {
		return &codecs.Error{Code: codecs.CodeInvalidID, Reason: fmt.Sprintf("%s key %q is not partition %d's shard key %q", tr.Kind, ctx.Key(), ctx.Partition(), want)}
	}
	if tr.Job == "" || tr.TriggerID == "" {
		return &codecs.Error{Code: codecs.CodeInvalidField, Field: "job", Reason: tr.Kind + " needs a job and a trigger_id"}
	}
	shard := s.decodeShard(ctx.Key(), valueBytes(ctx))
	before := len(shard.Backfills)
	if tr.Kind == codecs.KindBackfillJoin {
		shard.Backfills = codecs.WithBackfill(shard.Backfills, tr.Job, tr.TriggerID)
	} else {
		shard.Backfills = codecs.WithoutBackfill(shard.Backfills, tr.Job, tr.TriggerID)
		if len(shard.Backfills) == before {
			return nil
		}
	}
	s.setValue(ctx, codecs.EncodeShardRecord(shard))
	return nil
}

// stepBackfills sends every backfill in progress on the shard one step for
// shard time t (after an advance to t completed), on the group's backfill
// topic (topology.Names.SchedulerBackfill), keyed by the job.
func stepBackfills(ctx goka.Context, topic goka.Stream, refs []codecs.BackfillRef, t time.Time) {
	for _, r := range refs {
		ctx.Emit(topic, r.Job, codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindBackfill, T: t, TriggerID: r.ID}))
	}
}

// onBackfill handles a record of the backfill topic: one step of a
// backfill (the job's key). Any other kind is rejected.
func (s *Scheduler) onBackfill(ctx goka.Context, msg any) {
	s.guard(ctx)
	raw, _ := msg.([]byte)
	s.resolve(ctx, raw, "", s.backfillInput(ctx, raw))
}

func (s *Scheduler) backfillInput(ctx goka.Context, raw []byte) error {
	tr, err := s.decodeTrigger(raw)
	if err != nil {
		return invalid(err)
	}
	if tr.Kind != codecs.KindBackfill {
		return &codecs.Error{Code: codecs.CodeUnknownOp, Field: "kind", Reason: "only backfill steps are read from the backfill topic, not " + tr.Kind}
	}
	return s.stepBackfill(ctx, tr)
}
