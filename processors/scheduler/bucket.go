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
// "<job id>@<trigger id>", so a trigger sent again repeats the same ids.
// Paused and completed jobs do not fire.
//
// The shard record names each fan-out under way and the member its next
// chunk continues after (codecs.FanoutRef), written with every chunk: a
// continuation handled twice (a crash that kept its output, then the
// redelivery) runs the next chunk, not the same one again, so no member
// fires twice with a payload an update changed in between (simulation
// seed 9077), and a redelivered trigger whose fan-out is done fires
// nothing.
func (s *Scheduler) fireBucket(ctx goka.Context, tr codecs.ShardTrigger) error {
	st := s.Store(ctx.Partition())
	if st == nil {
		return fmt.Errorf("scheduler: no open store for partition %d", ctx.Partition())
	}
	shard := s.decodeShard(ctx.Key(), valueBytes(ctx))
	run, ok := fanoutStep(shard.Fanouts, tr)
	if !ok {
		// Done (or forgotten): delivered again after a crash, which may
		// have kept the local write that says so and lost its changelog
		// record, leaving the changelog with the fan-out open (adversary
		// 31: a later command on a new owner then sent a member's fire
		// as it had changed since). Write it again, durably, as a
		// chunk's end is.
		if len(valueBytes(ctx)) == 0 {
			return nil
		}
		s.keepShard(ctx)
		return s.durable(ctx, "the end of bucket %q's fan-out (trigger %q) again", tr.Bucket, tr.TriggerID)
	}
	// A chunk run again after a crash keeps the members the lost one may
	// have fired covered until the fan-out has passed them, whatever the
	// bucket holds now (a member put before the last one the lost chunk
	// fired shortens the chunk run again: adversary 31).
	var openThrough string
	for _, f := range shard.Fanouts {
		if f.Names(tr) && f.Open {
			openThrough = f.OpenThrough
		}
	}
	// The fan-out's start travels in its continuations and its table
	// entry, so a rebalance (which resets the in-memory notes) or another
	// owner does not start it over, and two fan-outs of one trigger id (a
	// resent trigger) are told apart (adversary 19g). A first chunk takes
	// none from its record.
	started := run.Started
	if started.IsZero() {
		started = s.announcedNow()
	}
	key := fmt.Sprintf("%s\x00%s\x00%d", run.Bucket, run.TriggerID, started.UnixNano())
	s.pending.start(ctx.Partition(), key, started)
	msgs, last, more, err := s.bucketChunk(st, run)
	if err != nil {
		return err
	}
	if len(msgs) > 0 {
		if shard, err = s.openFanout(ctx, shard, run, started, max(last, openThrough)); err != nil {
			return err
		}
		if err := s.dispatch(ctx, msgs); err != nil {
			return fmt.Errorf("scheduler: producing %d bucket fires: %w", len(msgs), err)
		}
	}
	s.cfg.Metrics.fired(codecs.TriggerBucket, len(msgs), 0)
	s.cfg.Metrics.fanout(len(msgs))
	ref := codecs.FanoutRef{TriggerID: run.TriggerID, Bucket: run.Bucket, T: run.T, Started: started, After: last}
	if openThrough > last && more {
		ref.Open, ref.OpenThrough = true, openThrough
	}
	if !more {
		s.pending.done(ctx.Partition(), key)
		// When, by the clock's announced time (the trigger's own time only
		// before any: a trigger stamped far ahead would never be forgotten).
		ref.Done, ref.Finished = true, s.announcedNow()
		if ref.Finished.IsZero() {
			ref.Finished = run.T
		}
	}
	fanouts, tracked := withFanout(shard.Fanouts, ref)
	if tracked || len(fanouts) != len(shard.Fanouts) {
		shard.Fanouts = fanouts
		s.setValue(ctx, codecs.EncodeShardRecord(shard))
		// Durable before the trigger is committed and any later input of
		// this partition runs: a command on this store then finds the
		// changelog saying what its store says (adversary 31: the end of
		// a chunk lost, a put of a member committed here and kept by the
		// changelog, the fan-out run again by a new owner with the put's
		// payload).
		if len(msgs) > 0 || openThrough != "" {
			if err := s.durable(ctx, "bucket %q's chunk (trigger %q)", run.Bucket, run.TriggerID); err != nil {
				return err
			}
		}
	}
	if more {
		next := run
		next.AfterKey, next.Started, next.Step = last, started, 0
		if tracked {
			next.Step = 1 // the table names it: without an entry it is done
		}
		ctx.Loopback(ctx.Key(), codecs.EncodeInternal(next))
	}
	return nil
}

// maxFanouts bounds the fan-outs a shard record names. One that is done
// stays named for fanoutKeep of the shard's time and fanoutKeepPasses
// completed advances (about as long while the clock ticks each second), so
// that its trigger redelivered (a crash, a rebalance, the router
// forwarding it again) fires nothing. Both: the shard's time leaps over an
// outage at its first advance, while a router that crashed before its
// commit forwards the trigger again only once it is back (adversary 15b).
const (
	maxFanouts       = 256
	fanoutKeep       = 10 * time.Minute
	fanoutKeepPasses = 600
)

// fanoutStep decides how bucket trigger tr (a first chunk or a
// continuation) runs given the shard's fan-outs: the trigger to run the
// chunk of (continuing after the member the table names, whatever tr
// says), or ok false when there is nothing to run (the fan-out is done,
// or tr continues one the table no longer names).
func fanoutStep(fanouts []codecs.FanoutRef, tr codecs.ShardTrigger) (run codecs.ShardTrigger, ok bool) {
	run = tr
	for _, f := range fanouts {
		if !f.Names(tr) {
			continue
		}
		if f.Done {
			return run, false
		}
		run.AfterKey, run.Started = f.After, f.Started
		return run, true
	}
	if tr.AfterKey != "" && tr.Step > 0 {
		return run, false // named once, done and forgotten since
	}
	if tr.AfterKey == "" {
		run.Started = time.Time{} // a first chunk: its start is now
	}
	// A first chunk, or a continuation the table never named (sent by an
	// earlier release, or while the table named maxFanouts): it runs after
	// its own cursor.
	return run, true
}

// withFanout returns fanouts with ref recorded (replacing the entry that
// names the same fan-out) and whether it is: a new fan-out is not when
// maxFanouts are under way (it runs untracked, as before the table named
// them), and done ones past the limit make room, oldest first. fanouts is
// not changed.
func withFanout(fanouts []codecs.FanoutRef, ref codecs.FanoutRef) ([]codecs.FanoutRef, bool) {
	out := make([]codecs.FanoutRef, 0, len(fanouts)+1)
	found := false
	for _, f := range fanouts {
		if f.Same(ref) {
			f, found = ref, true
		}
		out = append(out, f)
	}
	if found {
		return out, true
	}
	if ref.Done && len(out) < maxFanouts {
		// A fan-out done in one chunk is named too: a redelivered
		// trigger then fires nothing.
		return append(out, ref), true
	}
	for len(out) >= maxFanouts {
		oldest := -1
		for i, f := range out {
			if f.Done && (oldest < 0 || f.Finished.Before(out[oldest].Finished)) {
				oldest = i
			}
		}
		if oldest < 0 {
			return out, false
		}
		out = append(out[:oldest], out[oldest+1:]...)
	}
	return append(out, ref), true
}

// prunedFanouts is fanouts once a pass to t has completed: each done one
// has seen one more, and is forgotten once it has seen fanoutKeepPasses and
// finished before t minus fanoutKeep (nil when none is left). fanouts is not
// changed.
func prunedFanouts(fanouts []codecs.FanoutRef, t time.Time) []codecs.FanoutRef {
	var out []codecs.FanoutRef
	for _, f := range fanouts {
		if f.Done {
			f.Passes++
			if f.Passes >= fanoutKeepPasses && f.Finished.Before(t.Add(-fanoutKeep)) {
				continue
			}
		}
		out = append(out, f)
	}
	return out
}

// openFanout writes the shard record naming run's fan-out as open through
// member last (codecs.FanoutRef.Open) and waits until it has reached the
// changelog (Config.Durable), before the chunk's fires go out: a command
// on any store then knows that a member up to last may have fired, and
// sends that fire itself before it changes the member (fannedOut). Not
// when the trigger carries its own payload (no command changes what it
// fires), nor for a fan-out the table does not name (maxFanouts under
// way). It returns the shard record as written.
func (s *Scheduler) openFanout(ctx goka.Context, shard codecs.ShardRecord, run codecs.ShardTrigger, started time.Time, last string) (codecs.ShardRecord, error) {
	if run.Payload != nil {
		return shard, nil
	}
	ref := codecs.FanoutRef{TriggerID: run.TriggerID, Bucket: run.Bucket, T: run.T, Started: started, After: run.AfterKey, Open: true, OpenThrough: last}
	fanouts, tracked := withFanout(shard.Fanouts, ref)
	if !tracked {
		return shard, nil
	}
	shard.Fanouts = fanouts
	s.setValue(ctx, codecs.EncodeShardRecord(shard))
	return shard, s.durable(ctx, "the start of bucket %q's chunk (trigger %q)", run.Bucket, run.TriggerID)
}

// durable waits until the table writes made so far, ctx's key's among
// them, have reached the changelog (Config.Durable); what names the write
// being waited for, for the error.
func (s *Scheduler) durable(ctx goka.Context, what string, args ...any) error {
	if s.cfg.Durable == nil {
		return nil
	}
	start := time.Now()
	err := s.cfg.Durable(ctx, ctx.Key())
	s.cfg.Metrics.changelogWait(time.Since(start))
	if err != nil {
		return fmt.Errorf("scheduler: writing %s: %w", fmt.Sprintf(what, args...), err)
	}
	return nil
}

// bucketChunk returns the fires of the bucket's jobs after tr.AfterKey,
// reading keys and records recordGroup at a time, up to ChunkSize jobs or
// (after at least one fire) ChunkBytes of events, the last job it handled
// and whether the bucket has more.
func (s *Scheduler) bucketChunk(st *store.Store, tr codecs.ShardTrigger) (msgs []Msg, last string, more bool, err error) {
	var (
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
			return nil, last, false, err
		}
		more = len(keys) > want
		keys = keys[:min(len(keys), want)]
		values, err := st.GetMany(keys)
		if err != nil {
			return nil, last, false, err
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
	return msgs, last, more, nil
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

// fannedOut sends, before a command changes job live (ctx's key; nil: no
// live job), the job's fire of each bucket fan-out whose open chunk may
// have fired it before a crash (codecs.FanoutRef.Covers) and that no
// command has sent for it yet, as the chunk would have. It returns the
// marks the job's new record keeps (codecs.JobRecord.Fanned): those of
// old, the record the command replaces (a tombstone too), for fan-outs the
// shard still names as under way, and the new ones. The chunk run again
// then skips the job rather than fire it as the command left it.
func (s *Scheduler) fannedOut(ctx goka.Context, shard codecs.ShardRecord, old, live *codecs.JobRecord) ([]codecs.FanoutMark, error) {
	var marks []codecs.FanoutMark
	if old != nil {
		for _, m := range old.Fanned {
			if fanoutUnderWay(shard, m) {
				marks = append(marks, m)
			}
		}
	}
	if live == nil || live.Status != codecs.StatusActive || live.Job.Bucket == "" {
		return marks, nil
	}
	var msgs []Msg
	for _, f := range shard.Fanouts {
		if f.Bucket != live.Job.Bucket || !f.Covers(ctx.Key()) || markedIn(marks, f) {
			continue
		}
		tr := codecs.ShardTrigger{Kind: codecs.KindBucket, TriggerID: f.TriggerID, Bucket: f.Bucket, T: f.T}
		msgs = append(msgs, bucketFire(ctx.Key(), live, tr, s.cfg.Now()))
		marks = append(marks, codecs.FanoutMark{TriggerID: f.TriggerID, T: f.T})
	}
	if len(msgs) > 0 {
		if err := s.dispatch(ctx, msgs); err != nil {
			return nil, fmt.Errorf("scheduler: producing the bucket fires an open fan-out may have sent: %w", err)
		}
		s.cfg.Metrics.fired(codecs.TriggerBucket, len(msgs), 0)
	}
	return marks, nil
}

// fanoutUnderWay reports whether the shard names the fan-out m marks as not
// done.
func fanoutUnderWay(shard codecs.ShardRecord, m codecs.FanoutMark) bool {
	for _, f := range shard.Fanouts {
		if m.Marks(f) && !f.Done {
			return true
		}
	}
	return false
}

func markedIn(marks []codecs.FanoutMark, f codecs.FanoutRef) bool {
	for _, m := range marks {
		if m.Marks(f) {
			return true
		}
	}
	return false
}
