package scheduler

import (
	"fmt"

	"github.com/lovoo/goka"

	"github.com/chronos-scheduler/chronos/codecs"
)

// fireBucket fires every active job of a bucket in this partition once, one
// chunk per callback, continuing through the loopback. Each fire's id is
// "<job id>@<trigger id>", so a repeated trigger or chunk repeats the same
// ids. Paused and completed jobs do not fire.
func (s *Scheduler) fireBucket(ctx goka.Context, tr codecs.ShardTrigger) error {
	st := s.Store(ctx.Partition())
	if st == nil {
		return fmt.Errorf("scheduler: no open store for partition %d", ctx.Partition())
	}
	keys, err := st.BucketKeys(tr.Bucket, tr.AfterKey, s.cfg.ChunkSize+1)
	if err != nil {
		return err
	}
	more := len(keys) > s.cfg.ChunkSize
	if more {
		keys = keys[:s.cfg.ChunkSize]
	}
	now := s.cfg.Now()
	msgs := make([]Msg, 0, len(keys))
	values, err := st.GetMany(keys)
	if err != nil {
		return err
	}
	for i, k := range keys {
		rec, err := codecs.DecodeJobRecord(values[i])
		if err != nil || rec.Status != codecs.StatusActive || rec.Job.Bucket != tr.Bucket {
			continue
		}
		payload := rec.Job.Payload
		if tr.Payload != nil {
			payload = tr.Payload
		}
		ev := codecs.Dispatch{FireID: codecs.TriggeredFireID(k, tr.TriggerID), JobID: k, Trigger: codecs.TriggerBucket,
			ScheduledAt: tr.T, FiredAt: now, Bucket: tr.Bucket, TriggerID: tr.TriggerID, Payload: payload}
		msgs = append(msgs, Msg{Key: k, Value: codecs.AppendDispatch(make([]byte, 0, 192+len(payload)), &ev)})
	}
	if len(msgs) > 0 {
		if err := s.cfg.Producer.ProduceSync(ctx.Context(), string(s.cfg.Layout.Dispatch()), msgs); err != nil {
			return fmt.Errorf("scheduler: producing %d bucket fires: %w", len(msgs), err)
		}
	}
	s.cfg.Metrics.fired(codecs.TriggerBucket, len(msgs), 0)
	s.cfg.Metrics.fanout(len(msgs))
	if more {
		next := tr
		next.AfterKey = keys[len(keys)-1]
		ctx.Loopback(ctx.Key(), codecs.EncodeInternal(next))
	}
	return nil
}
