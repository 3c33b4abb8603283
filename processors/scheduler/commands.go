package scheduler

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/lovoo/goka"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/store"
)

// onCommand applies one chronos-jobs record. Invalid commands go to
// chronos-rejects; nothing else changes.
func (s *Scheduler) onCommand(ctx goka.Context, msg any) {
	raw, _ := msg.([]byte)
	cmd, err := codecs.DecodeCommand([]byte(ctx.Key()), raw, s.cfg.Limits)
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
		rec := &codecs.JobRecord{Status: codecs.StatusActive, Job: cmd.Job, NotBefore: ts, CreatedAt: ts, UpdatedAt: ts, Version: 1}
		if old != nil {
			rec.Version, rec.CreatedAt = old.Version+1, old.CreatedAt
		}
		if sched, err := s.schedules.Get(cmd.Job.Spec); err == nil && sched.Next(ts).IsZero() {
			// A one-shot time or an end bound at or before the put: nothing
			// will ever fire.
			rec.Status = codecs.StatusCompleted
		}
		ctx.SetValue(codecs.EncodeJobRecord(rec))
		s.owedSince(ctx, rec)
	case codecs.OpDelete:
		if old != nil {
			ctx.Delete()
		}
	case codecs.OpPause, codecs.OpResume, codecs.OpFire:
		if old == nil {
			s.reject(ctx, raw, &codecs.Error{Code: codecs.CodeUnknownJob, Field: "id", Reason: "no job " + strconv.Quote(cmd.ID)})
			s.cfg.Metrics.command(cmd.Op, "rejected")
			return
		}
		s.apply(ctx, cmd, old, ts)
	}
	s.cfg.Metrics.command(cmd.Op, "applied")
}

func (s *Scheduler) apply(ctx goka.Context, cmd codecs.Command, rec *codecs.JobRecord, ts time.Time) {
	switch {
	case cmd.Op == codecs.OpPause && rec.Status == codecs.StatusActive:
		rec.Status, rec.Version, rec.UpdatedAt = codecs.StatusPaused, rec.Version+1, ts
		ctx.SetValue(codecs.EncodeJobRecord(rec))
	case cmd.Op == codecs.OpResume && rec.Status == codecs.StatusPaused:
		rec.Status, rec.Version, rec.UpdatedAt, rec.NotBefore = codecs.StatusActive, rec.Version+1, ts, ts
		ctx.SetValue(codecs.EncodeJobRecord(rec))
		s.owedSince(ctx, rec)
	case cmd.Op == codecs.OpFire:
		s.fireManual(ctx, cmd, rec, ts)
	}
}

// owedSince makes a job that became active at NotBefore owe its fires from
// then on, even when the shard's watermark is already past it (the command
// was consumed late): the indexer starts after the watermark, so the entry
// is moved back to the first fire after NotBefore. Those fires are then
// dispatched by the next advance, as late fires under the misfire policy.
func (s *Scheduler) owedSince(ctx goka.Context, rec *codecs.JobRecord) {
	st := s.Store(ctx.Partition())
	if st == nil || rec.Status != codecs.StatusActive {
		return
	}
	sched, err := s.schedules.Get(rec.Job.Spec)
	if err != nil {
		return
	}
	first := sched.Next(rec.NotBefore)
	if first.IsZero() {
		return
	}
	due, err := st.DueOf(ctx.Key())
	if err != nil {
		ctx.Fail(err)
		return
	}
	if !due.IsZero() && !first.Before(due) {
		return
	}
	indexed, err := st.IndexedUpTo()
	if err == nil {
		err = st.ApplyMoves([]store.Move{{Key: ctx.Key(), To: first}}, indexed)
	}
	if err != nil {
		ctx.Fail(err)
	}
}

// fireManual dispatches one fire now. Its fire_id is stable across
// redelivery: the command's trigger id, or one derived from the record's
// partition and offset.
func (s *Scheduler) fireManual(ctx goka.Context, cmd codecs.Command, rec *codecs.JobRecord, ts time.Time) {
	trigger := cmd.TriggerID
	if trigger == "" {
		trigger = "m-" + strconv.Itoa(int(ctx.Partition())) + "-" + strconv.FormatInt(ctx.Offset(), 10)
	}
	payload := rec.Job.Payload
	if cmd.Payload != nil {
		payload = cmd.Payload
	}
	d := codecs.Dispatch{FireID: codecs.TriggeredFireID(cmd.ID, trigger), JobID: cmd.ID, Trigger: codecs.TriggerManual,
		ScheduledAt: ts, FiredAt: s.cfg.Now(), Bucket: rec.Job.Bucket, TriggerID: trigger, Payload: payload}
	ctx.Emit(s.cfg.Layout.Dispatch(), cmd.ID, codecs.AppendDispatch(nil, &d))
	s.cfg.Metrics.fired(codecs.TriggerManual, 1, 0)
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

// reject writes the input to chronos-rejects with the reason.
func (s *Scheduler) reject(ctx goka.Context, raw []byte, err error) {
	r := codecs.RejectOf(err, string(ctx.Topic()), ctx.Partition(), ctx.Offset(), []byte(ctx.Key()), raw, ctx.Timestamp())
	s.cfg.Logger.Warn("rejected input", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "code", r.Code, "reason", r.Reason)
	ctx.Emit(s.cfg.Layout.Rejects(), ctx.Key(), codecs.EncodeReject(r))
	s.cfg.Metrics.rejected(r.Code)
}
