package scheduler

import (
	"fmt"
	"sync"
	"time"

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
	key := tr.Bucket + "\x00" + tr.TriggerID
	s.pending.start(ctx.Partition(), key, s.announcedNow())
	last, more, err := s.bucketChunk(ctx, st, tr)
	if err != nil {
		return err
	}
	if !more {
		s.pending.done(ctx.Partition(), key)
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

// pendingBuckets notes, per partition, the announced time each bucket
// fan-out under way on it started, for the lateness gauge
// (PartitionTimes.Pending): a bucket's chunks go out between the advances,
// whose watermark keeps up meanwhile, so without it a slow bucket fan-out
// would read as on time (adversary 19f). In memory: a fan-out a new owner
// continues counts from when it first ran there. Safe for concurrent use.
type pendingBuckets struct {
	mu sync.Mutex
	m  map[int32]map[string]time.Time
}

// start notes that the fan-out key runs on partition p, started at
// announced unless already noted.
func (b *pendingBuckets) start(p int32, key string, announced time.Time) {
	if announced.IsZero() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[int32]map[string]time.Time{}
	}
	if b.m[p] == nil {
		b.m[p] = map[string]time.Time{}
	}
	if _, ok := b.m[p][key]; !ok {
		b.m[p][key] = announced
	}
}

// done forgets the fan-out key of partition p.
func (b *pendingBuckets) done(p int32, key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m[p], key)
}

// reset forgets every fan-out of partition p (it was recovered again: a
// fan-out still under way continues from the loopback and is noted anew).
func (b *pendingBuckets) reset(p int32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, p)
}

// oldest returns when the oldest fan-out under way on partition p started
// (zero: none).
func (b *pendingBuckets) oldest(p int32) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	var t time.Time
	for _, s := range b.m[p] {
		if t.IsZero() || s.Before(t) {
			t = s
		}
	}
	return t
}
