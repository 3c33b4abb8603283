package store

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// Promises 1 and 3: MarkRecovered's index build ingests one sstable per
// run while the gate still holds (endRecovery runs before untune). With
// tiny runs it ingests hundreds of overlapping files into level 0, far
// past the write stall (4t). Nothing may stall for good: MarkRecovered
// returns, the gate is released, level 0 comes down, writes after it go
// through, and disk usage ends where a store never gated ends.
// Not parallel: it sets indexBuildRunBytes.
func TestAdv60IndexBuildIngestsPastTheStall(t *testing.T) {
	old := indexBuildRunBytes
	indexBuildRunBytes = 1 << 10
	defer func() { indexBuildRunBytes = old }()
	for _, th := range []int{0, 1, 64} {
		t.Run(fmt.Sprint(th), func(t *testing.T) {
			done := watchdog(t, 50*time.Second, t.Name())
			defer done()
			opts := deferOpts(vfs.NewMem())
			opts.RecoveryL0CompactionThreshold = th
			opts.MemTableSize = 128 << 10
			s := New("/db", opts)
			require.NoError(t, s.Open())
			defer s.Close()
			rng := rand.New(rand.NewPCG(60, uint64(th)))
			state := map[string]string{}
			for i := 0; i < 8000; i++ {
				k := keyN(rng.IntN(20000))
				v := string(val(at(rng.IntN(1000)), fmt.Sprint("b", rng.IntN(5))))
				require.NoError(t, s.Set(k, []byte(v)))
				state[k] = v
			}
			start := time.Now()
			require.NoError(t, s.MarkRecovered())
			m := s.metricsForTest()
			t.Logf("t=%d: MarkRecovered in %v; right after: L0 %d sublevels, %d files (stall at %d)", th, time.Since(start).Round(time.Millisecond), m.Levels[0].Sublevels, m.Levels[0].TablesCount, max(12, 4*th))
			// Writes after it (stall until level 0 comes down, then go on).
			for i := 0; i < 2000; i++ {
				k := fmt.Sprintf("after-%05d", i)
				v := string(val(at(i%100), "a"))
				require.NoError(t, s.Set(k, []byte(v)))
				state[k] = v
			}
			require.Eventually(t, func() bool { return s.metricsForTest().Levels[0].Sublevels <= 2 }, 30*time.Second, 20*time.Millisecond, "level 0 comes down")
			require.Equal(t, state, tableState(t, s))
			checkConsistent(t, s)
			// Disk: compare the live sstable bytes with the logical size.
			m = s.metricsForTest()
			var total int64
			for _, l := range m.Levels {
				total += l.TablesSize
			}
			t.Logf("t=%d: tables %d bytes after level 0 came down; %d compactions", th, total, m.Compact.Count)
		})
	}
}

// Promise 5: a store never marked recovered (a recovery a rebalance cut
// short) keeps working behind the held gate: reads, writes, iterators,
// level 0 bounded by the gate, Close; reopened on the same directory (now
// not empty: no gate) it holds everything.
func TestAdv60NeverRecoveredStoreWorks(t *testing.T) {
	t.Parallel()
	done := watchdog(t, 50*time.Second, t.Name())
	defer done()
	fs := vfs.NewMem()
	opts := deferOpts(fs)
	opts.RecoveryL0CompactionThreshold = 16
	opts.MemTableSize = 64 << 10
	s := New("/db", opts)
	require.NoError(t, s.Open())
	rng := rand.New(rand.NewPCG(60, 5))
	pad := string(randPad(rng, 500))
	state := map[string]string{}
	var deepest int32
	deepestAmp := 0
	for i := 0; i < 30000; i++ {
		k := keyN(rng.IntN(5000))
		v := string(val(at(rng.IntN(1000)), "b")) + pad[:rng.IntN(500)]
		require.NoError(t, s.Set(k, []byte(v)))
		state[k] = v
		require.NoError(t, s.SetOffset(int64(i)))
		if i%200 == 0 {
			deepest = max(deepest, s.metricsForTest().Levels[0].Sublevels)
			deepestAmp = max(deepestAmp, s.l0ReadAmpForTest())
			got, err := s.Get(k)
			require.NoError(t, err)
			require.Equal(t, v, string(got))
		}
	}
	require.True(t, s.gate.held())
	t.Logf("deepest level 0: %d sublevels, read amplification %d", deepest, deepestAmp)
	// Pebble stalls on the read amplification; the sublevels can stack
	// past it (TestAdversary66EndlessFloodStaysBounded).
	require.Less(t, deepestAmp, 4*16, "level 0 never reached the write stall")
	require.Less(t, deepest, int32(4*16+8), "level 0's sublevels far past the write stall")
	require.Equal(t, state, tableState(t, s))
	off, err := s.GetOffset(-1)
	require.NoError(t, err)
	require.Equal(t, int64(29999), off)
	require.NoError(t, s.Close())
	s2 := New("/db", opts)
	require.NoError(t, s2.Open())
	require.False(t, s2.tuned())
	require.Equal(t, state, tableState(t, s2))
	off, err = s2.GetOffset(-1)
	require.NoError(t, err)
	require.Equal(t, int64(29999), off)
	require.NoError(t, s2.MarkRecovered())
	checkConsistent(t, s2)
	require.NoError(t, s2.Close())
}
