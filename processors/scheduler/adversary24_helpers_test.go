package scheduler

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// adv24Base is when adversary round 24's histories start.
var adv24Base = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// adv24ChunkBytes is the chunks' event bytes in round 24's histories: a
// plan of ~200-byte payloads stops after 2 fires, the same cut as the
// 10,000-fire bound, cheaply.
const adv24ChunkBytes = 1 << 10

// adv24Harness is one partition with adv24ChunkBytes chunks, one chunk a
// callback (a 1 ns budget), advanced to adv24Base.
func adv24Harness(t *testing.T) *partitionHarness {
	h := &partitionHarness{t: t, prod: &recordingProducer{}, now: adv24Base, chunk: 25000, budget: time.Nanosecond}
	adv24Open(h)
	h.advance(adv24Base)
	h.drain()
	return h
}

// adv24Open opens h's partition on an empty store with h's chunk and budget.
func adv24Open(h *partitionHarness) {
	h.s, h.st = openPartition(h.t, Config{ChunkSize: h.chunk, ChunkBudget: h.budget, ChunkBytes: adv24ChunkBytes, Producer: h.prod,
		Now: func() time.Time { return h.now }})
}

// adv24Restore hands h's partition to an empty store holding the shard
// record and keys as the table has them now, as a new owner (after a crash
// or a clean rebalance) restores them from the changelog.
func adv24Restore(h *partitionHarness, keys ...string) {
	h.t.Helper()
	vals := map[string][]byte{}
	keys = append([]string{h.shardKey()}, keys...)
	for _, k := range keys {
		v, err := h.st.Get(k)
		require.NoError(h.t, err)
		vals[k] = append([]byte(nil), v...)
	}
	adv24Open(h)
	for _, k := range keys {
		require.NoError(h.t, h.st.Set(k, vals[k]))
	}
}

// adv24Missing returns, sorted, the fire_ids of ctrl (a history without
// the crash) that got never dispatched.
func adv24Missing(ctrl, got map[string][]string) []string {
	var miss []string
	for id := range ctrl {
		if _, ok := got[id]; !ok {
			miss = append(miss, id)
		}
	}
	sort.Strings(miss)
	return miss
}

// adv24CutsLostPass runs round 24's history of a pass whose cuts overflow
// (TestAdv24CutsLostCleanRebalanceRepeats): a000..a004, cron "3,15 * * *
// * *", put at 10:00:00 (one plan each: handled through T, record
// unchanged), and j000..j069, every 1s, put at 10:00:05 (cut after 2 fires
// each, ~200-byte payloads), then the advance to T = 10:00:20 one chunk a
// callback. When the yield first records PassCutsLost with only the
// continuation left, the partition moves cleanly to a store restored from
// the table (adv24Restore) and atMove runs; the pass then completes. It
// returns the harness and T.
func adv24CutsLostPass(t *testing.T, atMove func(h *partitionHarness)) (*partitionHarness, time.Time) {
	t.Helper()
	base := adv24Base
	h := adv24Harness(t)
	pay := strings.Repeat("x", 200)
	var keys []string
	for i := range 5 {
		k := fmt.Sprintf("a%03d", i)
		keys = append(keys, k)
		h.command(k, base, `{"v":1,"op":"put","job":{"cron":"3,15 * * * * *","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"p":"`+pay+`"}}}`)
	}
	for i := range 70 {
		k := fmt.Sprintf("j%03d", i)
		keys = append(keys, k)
		h.command(k, base.Add(5*time.Second), `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"p":"`+pay+`"}}}`)
	}
	h.drain()
	T := base.Add(20 * time.Second)
	h.advance(T)
	moved := false
	for len(h.loops) > 0 {
		if sh := h.shard(); !moved && sh.PassCutsLost && len(h.loops) == 1 && h.loops[0].Key == h.shardKey() {
			// A clean rebalance: every loopback before the continuation
			// consumed; the new owner's store restored from the changelog.
			moved = true
			adv24Restore(h, keys...)
			atMove(h)
		}
		l := h.loops[0]
		h.loops = h.loops[1:]
		h.deliver(h.s.onLoop, h.s.cfg.Layout.SchedulerLoop(), l.Key, h.now, l.Value)
	}
	require.True(t, moved, "the pass never recorded PassCutsLost")
	return h, T
}
