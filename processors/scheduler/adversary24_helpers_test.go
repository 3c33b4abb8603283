package scheduler

import (
	"sort"
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
