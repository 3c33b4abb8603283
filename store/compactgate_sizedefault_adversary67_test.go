package store

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// TestAdversary67DefaultSizeSmallStoreNeverHeld: with Options'
// floodMinTableBytes left zero (the default, 4 MiB since 2026-12-07's
// night), a store taking a flood of new keys that stays under it is never
// held for it:
// level 0 stays at Pebble's depth, OpenHeld counts no flood, and the gate
// did read the size (the counts made a flood).
func TestAdversary67DefaultSizeSmallStoreNeverHeld(t *testing.T) {
	done := watchdog(t, 60*time.Second, t.Name())
	defer done()
	fs := vfs.NewMem()
	opts := Options{FS: fs, Indexer: testIndexer, Logger: quiet, KeyFilter: true, MemTableSize: 64 << 10, RecoveryL0CompactionThreshold: 32}
	s := New("/db", opts)
	require.NoError(t, s.Open())
	require.NoError(t, s.MarkRecovered())
	defer func() { require.NoError(t, s.Close()) }()
	require.Equal(t, int64(floodMinTableBytes), s.gate.minTableBytes)
	rng := rand.New(rand.NewPCG(67, 3))
	var deepest int32
	readWhileFlood := false
	for i, n := range rng.Perm(12000) { // ~2 MiB of tables: under the 4 MiB default with room to spare
		require.NoError(t, s.Set(keyN(n), append(val(at(rng.IntN(1000)), "b"), randPad(rng, 100)...)))
		if i%100 == 0 {
			require.False(t, s.gate.flooded(), "a store of %d bytes held for a flood", tablesSize67(s))
			require.Zero(t, OpenHeld().Flood)
			deepest = max(deepest, s.metricsForTest().Levels[0].Sublevels)
			s.gate.mu.Lock()
			if s.gate.sizeWait > 0 {
				readWhileFlood = true
			}
			s.gate.mu.Unlock()
			time.Sleep(15 * time.Millisecond)
		}
	}
	size := tablesSize67(s)
	t.Logf("tables %d bytes, deepest level 0 %d sublevels", size, deepest)
	require.Less(t, size, int64(floodMinTableBytes))
	require.True(t, readWhileFlood, "the counts never made a flood")
	require.LessOrEqual(t, deepest, notHeldDepth)
}

// TestAdversary67RecoveryHoldIgnoresSize: a fresh store, not yet marked
// recovered, is held for its recovery however small its tables and however
// large the flood size: level 0 grows past Pebble's depth, OpenHeld counts
// a recovery; MarkRecovered releases it (small: no flood hold follows).
func TestAdversary67RecoveryHoldIgnoresSize(t *testing.T) {
	done := watchdog(t, 60*time.Second, t.Name())
	defer done()
	fs := vfs.NewMem()
	opts := Options{FS: fs, Indexer: testIndexer, Logger: quiet, KeyFilter: true, MemTableSize: 32 << 10, RecoveryL0CompactionThreshold: 32, floodMinTableBytes: 1 << 40}
	s := New("/db", opts)
	require.NoError(t, s.Open())
	defer func() { require.NoError(t, s.Close()) }()
	require.True(t, s.tuned())
	rng := rand.New(rand.NewPCG(67, 4))
	var deepest int32
	for i, n := range rng.Perm(6000) {
		require.NoError(t, s.Set(keyN(n), append(val(at(rng.IntN(1000)), "b"), randPad(rng, 100)...)))
		if i%100 == 0 {
			require.Equal(t, Held{Recovery: 1}, OpenHeld())
			deepest = max(deepest, s.metricsForTest().Levels[0].Sublevels)
			time.Sleep(10 * time.Millisecond)
		}
	}
	require.Greater(t, deepest, int32(8), "recovery held: level 0 past Pebble's depth")
	require.NoError(t, s.MarkRecovered())
	require.False(t, s.tuned())
	time.Sleep(300 * time.Millisecond)
	require.False(t, s.gate.flooded(), "small: no flood hold after the recovery")
	require.Equal(t, Held{}, OpenHeld())
	deadline := time.Now().Add(10 * time.Second)
	for s.metricsForTest().Levels[0].Sublevels > 8 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	require.LessOrEqual(t, s.metricsForTest().Levels[0].Sublevels, int32(8), "released: level 0 compacts down")
}
