package scheduler

import (
	"fmt"

	"github.com/lovoo/goka"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/store"
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
	last, more, err := s.bucketChunk(ctx, st, tr)
	if err != nil {
		return err
	}
	if more {
		next := tr
		next.AfterKey = last
		ctx.Loopback(ctx.Key(), codecs.EncodeInternal(next))
	}
	return nil
}

// bucketChunk fires the bucket's jobs after tr.AfterKey, reading keys and
// records recordGroup at a time, up to ChunkSize jobs or (after at least
// one fire) ChunkBytes of events, and produces them in one batch. It
// returns the last job it handled and whether the bucket has more.
func (s *Scheduler) bucketChunk(ctx goka.Context, st *store.Store, tr codecs.ShardTrigger) (last string, more bool, err error) {
	var (
		msgs    []Msg
		size    int
		handled int
		now     = s.cfg.Now()
	)
	last = tr.AfterKey
scan:
	for handled < s.cfg.ChunkSize && size < s.cfg.ChunkBytes {
		want := min(recordGroup, s.cfg.ChunkSize-handled)
		keys, err := st.BucketKeys(tr.Bucket, last, want+1)
		if err != nil {
			return last, false, err
		}
		more = len(keys) > want
		keys = keys[:min(len(keys), want)]
		values, err := st.GetMany(keys)
		if err != nil {
			return last, false, err
		}
		for i, k := range keys {
			if size >= s.cfg.ChunkBytes {
				more = true
				break scan
			}
			handled++
			last = k
			if msg, ok := bucketEvent(k, values[i], tr, now); ok {
				msgs = append(msgs, msg)
				size += len(msg.Value)
			}
		}
		if !more {
			break
		}
	}
	if len(msgs) > 0 {
		if err := s.dispatch(ctx, msgs); err != nil {
			return last, false, fmt.Errorf("scheduler: producing %d bucket fires (%d bytes): %w", len(msgs), size, err)
		}
	}
	s.cfg.Metrics.fired(codecs.TriggerBucket, len(msgs), 0)
	s.cfg.Metrics.fanout(len(msgs))
	return last, more, nil
}
