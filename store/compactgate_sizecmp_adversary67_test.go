package store

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// TestAdversary67SmallStoreDepthAgainstUngated: the same flood on a small
// store, gated (default size rule) and ungated (Pebble's own scheduler):
// the gated store's level 0 gets no deeper than the ungated one's plus a
// little (the gate, not holding, schedules as Pebble's default would).
func TestAdversary67SmallStoreDepthAgainstUngated(t *testing.T) {
	done := watchdog(t, 60*time.Second, t.Name())
	defer done()
	depth := map[int]int32{}
	ths := []int{0, 32}
	// Both stores take each key in the same round, so that a slow stretch
	// of the machine falls on both alike.
	stores := map[int]*Store{}
	for _, th := range ths {
		opts := Options{FS: vfs.NewMem(), Indexer: testIndexer, Logger: quiet, KeyFilter: true, MemTableSize: 64 << 10, RecoveryL0CompactionThreshold: th}
		s := New("/db", opts)
		require.NoError(t, s.Open())
		require.NoError(t, s.MarkRecovered())
		stores[th] = s
	}
	rng := rand.New(rand.NewPCG(67, 3))
	for i, n := range rng.Perm(20000) {
		v := append(val(at(rng.IntN(1000)), "b"), randPad(rng, 100)...)
		for _, th := range ths {
			require.NoError(t, stores[th].Set(keyN(n), v))
		}
		if i%100 == 0 {
			require.False(t, stores[32].gate.flooded())
			for _, th := range ths {
				depth[th] = max(depth[th], stores[th].metricsForTest().Levels[0].Sublevels)
			}
			time.Sleep(15 * time.Millisecond)
		}
	}
	for _, th := range ths {
		require.NoError(t, stores[th].Close())
	}
	t.Logf("deepest level 0: ungated %d, gated %d", depth[0], depth[32])
	// Where the ungated store kept clear of its write stall (under 10),
	// the machine kept up and the gated one must match it; a hold (checked
	// at every sample above) would let no compaction out before 16.
	if depth[0] < 10 {
		require.LessOrEqual(t, depth[32], max(8, depth[0]+2))
	}
	require.Less(t, depth[32], int32(16))
}
