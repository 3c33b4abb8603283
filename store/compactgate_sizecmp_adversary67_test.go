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
	for _, th := range []int{0, 32} {
		fs := vfs.NewMem()
		opts := Options{FS: fs, Indexer: testIndexer, Logger: quiet, KeyFilter: true, MemTableSize: 64 << 10, RecoveryL0CompactionThreshold: th}
		s := New("/db", opts)
		require.NoError(t, s.Open())
		require.NoError(t, s.MarkRecovered())
		rng := rand.New(rand.NewPCG(67, 3))
		var deepest int32
		for i, n := range rng.Perm(20000) {
			require.NoError(t, s.Set(keyN(n), append(val(at(rng.IntN(1000)), "b"), randPad(rng, 100)...)))
			if i%100 == 0 {
				if s.gate != nil {
					require.False(t, s.gate.flooded())
				}
				deepest = max(deepest, s.metricsForTest().Levels[0].Sublevels)
				time.Sleep(15 * time.Millisecond)
			}
		}
		depth[th] = deepest
		require.NoError(t, s.Close())
	}
	t.Logf("deepest level 0: ungated %d, gated %d", depth[0], depth[32])
	// The two stores run one after the other: where the ungated one kept
	// clear of its write stall (under 10), the machine kept up and the
	// gated one must match it; a hold (checked at every sample above)
	// would let no compaction out before 16.
	if depth[0] < 10 {
		require.LessOrEqual(t, depth[32], max(8, depth[0]+2))
	}
	require.Less(t, depth[32], int32(16))
}
