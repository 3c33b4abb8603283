package scheduler

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/store"
	"github.com/chronos-scheduler/chronos/topology"
)

// recordingProducer acknowledges every dispatch event at once and keeps
// them.
type recordingProducer struct{ msgs []Msg }

func (p *recordingProducer) ProduceSync(_ context.Context, _ string, msgs []Msg) error {
	p.msgs = append(p.msgs, msgs...)
	return nil
}

// partitionHarness drives one partition of the scheduler through its real
// callbacks (onTrigger, onLoop, onCommand) on a real Pebble store, with a
// producer that acknowledges and keeps every dispatch event. Loopbacks are
// kept in a queue the test delivers when it wants (their order is the
// test's: the loopback is another topic than the input that produced them).
type partitionHarness struct {
	t      *testing.T
	s      *Scheduler
	st     *store.Store
	prod   *recordingProducer
	now    time.Time
	off    int64
	loops  []simOut
	chunk  int
	budget time.Duration
}

func newPartitionHarness(t *testing.T, chunk int, now time.Time) *partitionHarness {
	return newPartitionHarnessBudget(t, chunk, time.Hour, now)
}

// newPartitionHarnessBudget is newPartitionHarness with an advance's budget per
// callback (1ns: every chunk of an advance is a callback of its own).
func newPartitionHarnessBudget(t *testing.T, chunk int, budget time.Duration, now time.Time) *partitionHarness {
	t.Helper()
	h := &partitionHarness{t: t, prod: &recordingProducer{}, now: now, chunk: chunk, budget: budget}
	h.open()
	return h
}

// open gives the harness a scheduler on a new, empty data dir.
func (h *partitionHarness) open() {
	h.s, h.st = openPartition(h.t, Config{ChunkSize: h.chunk, ChunkBudget: h.budget, Producer: h.prod,
		Now: func() time.Time { return h.now }})
}

// openPartition makes a one-partition scheduler of cfg (its layout, data
// dir and logger set here) and opens partition 0's store on disk,
// recovered: the store its callbacks run on.
func openPartition(tb testing.TB, cfg Config) (*Scheduler, *store.Store) {
	tb.Helper()
	cfg.Layout = topology.Layout{Names: topology.Names{Prefix: "p1."}, Partitions: 1, Replication: 1}
	cfg.DataDir, cfg.Logger = tb.TempDir(), slog.New(slog.NewTextHandler(io.Discard, nil))
	if cfg.Durable == nil {
		cfg.Durable = simDurable
	}
	s, err := New(cfg)
	require.NoError(tb, err)
	gst, err := s.StorageBuilder()(string(s.cfg.Layout.SchedulerTable()), 0)
	require.NoError(tb, err)
	require.NoError(tb, gst.Open())
	tb.Cleanup(func() { _ = gst.Close() })
	require.NoError(tb, gst.MarkRecovered())
	return s, s.Store(0)
}

// moveToEmptyStore hands the partition to another instance with an empty
// data dir: its table is restored from the changelog (the values of keys,
// as this store holds them), its due index derived from it. Queued
// loopbacks stay queued (they are in Kafka).
func (h *partitionHarness) moveToEmptyStore(keys ...string) {
	h.t.Helper()
	vals := map[string][]byte{}
	for _, k := range append([]string{h.shardKey()}, keys...) {
		v, err := h.st.Get(k)
		require.NoError(h.t, err)
		if v != nil {
			vals[k] = append([]byte(nil), v...)
		}
	}
	h.open()
	// The shard record first: the indexer reads its watermark.
	require.NoError(h.t, h.st.Set(h.shardKey(), vals[h.shardKey()]))
	for _, k := range keys {
		if v, ok := vals[k]; ok {
			require.NoError(h.t, h.st.Set(k, v))
		}
	}
}

func (h *partitionHarness) deliver(cb func(goka.Context, any), topic goka.Stream, key string, ts time.Time, msg []byte) {
	h.t.Helper()
	h.off++
	ctx := &simCtx{topic: topic, key: key, table: h.st, ts: ts, offset: h.off, ctx: context.Background()}
	require.NoError(h.t, ctx.run(cb, msg))
	for _, o := range ctx.outs {
		if o.Kind == simOutLoop {
			h.loops = append(h.loops, o)
		}
	}
}

func (h *partitionHarness) shardKey() string { return h.s.shardKeys[0] }

// advance delivers "advance to t" on chronos-shard-triggers and then every
// loopback it (and earlier inputs) left, until none is left.
func (h *partitionHarness) advance(t time.Time) {
	h.now = t
	h.deliver(h.s.onTrigger, h.s.cfg.Layout.ShardTriggers(), h.shardKey(), t,
		codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: t}))
}

// bucketTrigger delivers a bucket trigger as the router forwards it.
func (h *partitionHarness) bucketTrigger(tr codecs.ShardTrigger) {
	h.deliver(h.s.onTrigger, h.s.cfg.Layout.ShardTriggers(), h.shardKey(), tr.T, codecs.EncodeInternal(tr))
}

// command delivers a chronos-jobs record for job id with record time ts.
func (h *partitionHarness) command(id string, ts time.Time, js string) {
	h.deliver(h.s.onCommand, h.s.cfg.Layout.Jobs(), id, ts, []byte(js))
}

// drain delivers the queued loopbacks, oldest first, until none is left.
func (h *partitionHarness) drain() {
	for len(h.loops) > 0 {
		l := h.loops[0]
		h.loops = h.loops[1:]
		h.deliver(h.s.onLoop, h.s.cfg.Layout.SchedulerLoop(), l.Key, h.now, l.Value)
	}
}

// fired is every dispatched fire_id with the payloads it went out with, in
// order.
func (h *partitionHarness) fired() map[string][]string {
	out := map[string][]string{}
	for _, m := range h.prod.msgs {
		d, err := codecs.DecodeDispatch(m.Value)
		require.NoError(h.t, err)
		out[d.FireID] = append(out[d.FireID], string(d.Payload))
	}
	return out
}

// requireOnePayload fails for every fire_id dispatched with two payloads.
func (h *partitionHarness) requireOnePayload() {
	h.t.Helper()
	for id, ps := range h.fired() {
		for _, p := range ps[1:] {
			if p != ps[0] {
				h.t.Errorf("fire_id %s dispatched with two payloads: %q", id, ps)
				break
			}
		}
	}
}

func (h *partitionHarness) shard() codecs.ShardRecord {
	sh, err := h.s.shard(0)
	require.NoError(h.t, err)
	return sh
}

// deliverLoops delivers the queued loopbacks of key (in order) and leaves
// the others queued; ones they produce are queued after them.
func (h *partitionHarness) deliverLoops(key string) {
	h.t.Helper()
	var mine, rest []simOut
	for _, l := range h.loops {
		if l.Key == key {
			mine = append(mine, l)
		} else {
			rest = append(rest, l)
		}
	}
	h.loops = rest
	for _, l := range mine {
		h.deliver(h.s.onLoop, h.s.cfg.Layout.SchedulerLoop(), l.Key, h.now, l.Value)
	}
}
