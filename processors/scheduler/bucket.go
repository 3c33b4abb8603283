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
	// The fan-out's start travels in its continuations, so a rebalance
	// (which resets the in-memory notes) or another owner does not start
	// it over, and two fan-outs of one trigger id (a resent trigger) are
	// told apart (adversary 19g). A first chunk takes none from its
	// record.
	started := tr.Started
	if tr.AfterKey == "" || started.IsZero() {
		started = s.announcedNow()
	}
	key := fmt.Sprintf("%s\x00%s\x00%d", tr.Bucket, tr.TriggerID, started.UnixNano())
	s.pending.start(ctx.Partition(), key, started)
	last, more, err := s.bucketChunk(ctx, st, tr)
	if err != nil {
		return err
	}
	if !more {
		s.pending.done(ctx.Partition(), key)
	}
	if more {
		next := tr
		next.AfterKey, next.Started = last, started
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
// would read as on time (adversary 19f). Each chunk notes its fan-out
// with the start its continuation carries (ShardTrigger.Started), so a
// fan-out continued after a rebalance or by another owner keeps its age.
// In memory. When the partition recovers again (every rebalance
// re-recovers every partition) its notes are kept for pendingGrace unless
// a chunk renews them: until the continuation is consumed again they
// still read (adversary 19g), and a fan-out another owner finished
// meanwhile reads no longer than that. Safe for concurrent use.
type pendingBuckets struct {
	mu sync.Mutex
	m  map[int32]map[string]pendingBucket
}

// pendingBucket is one fan-out under way: its start and, after its
// partition recovered again, until when it counts without a chunk
// renewing it (zero: no limit).
type pendingBucket struct {
	start, expires time.Time
}

// pendingGrace is how long after its partition recovered again a bucket
// fan-out's note counts without a chunk renewing it.
const pendingGrace = 10 * time.Second

// start notes (or renews) that the fan-out key runs on partition p,
// started at announced.
func (b *pendingBuckets) start(p int32, key string, announced time.Time) {
	if announced.IsZero() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[int32]map[string]pendingBucket{}
	}
	if b.m[p] == nil {
		b.m[p] = map[string]pendingBucket{}
	}
	b.m[p][key] = pendingBucket{start: announced}
}

// done forgets the fan-out key of partition p.
func (b *pendingBuckets) done(p int32, key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m[p], key)
}

// recovered limits the notes of partition p, which recovered again at now,
// to pendingGrace from now unless a chunk renews them (one already past
// its limit stays expired).
func (b *pendingBuckets) recovered(p int32, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k, e := range b.m[p] {
		if e.expires.IsZero() || e.expires.After(now) {
			e.expires = now.Add(pendingGrace)
			b.m[p][k] = e
		}
	}
}

// oldest returns when the oldest fan-out under way on partition p started
// (zero: none), at now.
func (b *pendingBuckets) oldest(p int32, now time.Time) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	var t time.Time
	for k, e := range b.m[p] {
		if !e.expires.IsZero() && !now.Before(e.expires) {
			delete(b.m[p], k)
			continue
		}
		if t.IsZero() || e.start.Before(t) {
			t = e.start
		}
	}
	return t
}
