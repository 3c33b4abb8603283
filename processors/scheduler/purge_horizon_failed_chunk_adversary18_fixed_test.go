package scheduler

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// downProducer fails every ProduceSync while down, else hands the
// messages to rec.
type downProducer struct {
	rec  *recordingProducer
	down bool
}

func (p *downProducer) ProduceSync(ctx context.Context, topic string, msgs []Msg) error {
	if p.down {
		return errors.New("broker: not enough replicas (transient)")
	}
	return p.rec.ProduceSync(ctx, topic, msgs)
}

// TestAdv18PurgeThenFailedChunkLosesHorizon: promise (docs/topics.md,
// "Repeats after a crash" and "Updates, deletes and versions"): a repeat
// changes nothing; a deleted job does not fire again or come back. Also
// docs/architecture.md "A command".
//
// fireChunk sends a chunk's loopbacks (j's purge among them) as soon as
// the chunk's fires are acknowledged; the purge horizon is written only
// when the callback ends (passDone) or yields (passYield). An advance runs
// several chunks in one callback (ChunkBudget): when a later chunk's
// dispatch fails (a transient producer error), the callback fails with
// j's purge already emitted and the shard record never written, not even
// on the local store. No new owner, no lost changelog write is needed: the
// partition restarts on the same store, the purge loopback removes j's
// tombstone, the advance is consumed again and no longer finds j, so the
// horizon is never raised to j's offset.
//
// Inputs: shard at t0 after an outage; backlog: put a (at t0+8d+30m) @0,
// put j (every 1h, fire_all, grace 168h, A) @1, put j (B) @2, delete j @3.
// ChunkSize 1, budget 1h: the advance to t0+8d+1h handles j's tombstone
// (due t0+8d) in chunk 1, emits its purge, and fails at chunk 2 (a's fire)
// with a producer error. Restart: the purge loopback, the advance again
// (the producer works now), then offsets 0-3 again (not committed).
//
// Expected: offsets 1-3 are repeats; j never fires. Got: the horizon is 0;
// offset 1 creates j again, offset 2 dispatches the ~193 fires it owes
// under payload A, offset 3 deletes it. Severity: high (ghost fires of a
// deleted job), same premise as adversary 17b (commands uncommitted when
// the purging advance runs) plus one transient producer error in the
// purging callback. Fails before e3e7121 too (as adversary 17b's break).
func TestAdv18PurgeThenFailedChunkLosesHorizon(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC)
	prod := &downProducer{rec: &recordingProducer{}}
	h := &partitionHarness{t: t, prod: prod.rec, now: t0, chunk: 1, budget: time.Hour}
	h.s, h.st = openPartition(t, Config{ChunkSize: 1, ChunkBudget: time.Hour, Producer: prod, Now: func() time.Time { return h.now }})
	h.advance(t0)
	h.drain()
	at := t0.Add(codecs.DeletedRetention + time.Hour)
	cmds := []struct{ id, js string }{
		{"a", `{"v":1,"op":"put","job":{"at":"` + t0.Add(codecs.DeletedRetention+30*time.Minute).Format(time.RFC3339) + `"}}`},
		{"j", `{"v":1,"op":"put","job":{"every":"1h","payload":{"p":"A"},"misfire_policy":"fire_all","misfire_grace":"168h"}}`},
		{"j", `{"v":1,"op":"put","job":{"every":"1h","payload":{"p":"B"},"misfire_policy":"fire_all","misfire_grace":"168h"}}`},
		{"j", `{"v":1,"op":"delete"}`},
	}
	ts := t0.Add(-time.Minute)
	for i, c := range cmds {
		h.commandAt(c.id, ts, c.js, int64(i))
		h.drain()
	}
	require.Empty(t, h.fired())

	// The purging advance: chunk 1 purges j (no fire: no produce), chunk
	// 2's dispatch (a's fire) fails.
	h.now = at
	prod.down = true
	h.off++
	ctx := &simCtx{topic: h.s.cfg.Layout.ShardTriggers(), key: h.shardKey(), table: h.st, ts: at, offset: h.off, ctx: context.Background()}
	err := ctx.run(h.s.onTrigger, codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: at}))
	require.Error(t, err, "the advance fails at its second chunk")
	var purges int
	for _, o := range ctx.outs {
		if o.Kind == simOutLoop {
			h.loops = append(h.loops, o) // emitted before the failure: in Kafka
			if o.Key == "j" {
				purges++
			}
		}
	}
	require.Equal(t, 1, purges, "j's purge went out before the failure")
	require.Equal(t, uint64(4), h.shard().Purged, "the horizon is written before the purge goes out, though the callback failed")

	// The partition restarts on the same store; the producer works again.
	prod.down = false
	h.drain()
	rec, err := h.st.Get("j")
	require.NoError(t, err)
	require.Nil(t, rec, "j's tombstone purged")
	h.advance(at) // the advance, consumed again
	h.drain()
	t.Logf("purge horizon after the advance ran again: %d", h.shard().Purged)
	before := len(h.fired())

	for i, c := range cmds {
		h.commandAt(c.id, ts, c.js, int64(i))
		h.drain()
	}
	h.advance(at.Add(time.Hour))
	h.drain()
	var ghosts []string
	for id, ps := range h.fired() {
		if len(id) > 2 && id[:2] == "j@" {
			ghosts = append(ghosts, id+" "+ps[0])
		}
	}
	if len(ghosts) > 0 {
		t.Errorf("j, deleted before any fire, dispatched %d fires after its commands were consumed again (e.g. %v); want none (fires before the repeats: %d)", len(ghosts), ghosts[:min(3, len(ghosts))], before)
	}
}
