package store

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// Promise 3: crashes while the gate holds (level 0 deep, compactions
// granted by the gate's loop and Done), during MarkRecovered (index build,
// release) and while the released DB compacts level 0 down: each crash
// leaves a prefix of the writes, an offset not ahead of it, and indexes
// that a rebuild reproduces.
func TestAdv60CrashAroundTheGate(t *testing.T) {
	for seed := uint64(1); seed <= 2; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { adv60CrashAroundTheGate(t, seed) })
	}
}

func adv60CrashAroundTheGate(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 60))
	cc := newCrashCloner(seed, 61) // MarkRecovered's ingest links while it clones
	cc.limit.Store(50)
	cc.every.Store(40)
	fs := cc.FS
	optsOf := func(fs vfs.FS) Options {
		o := deferOpts(fs)
		o.RecoveryL0CompactionThreshold = 6 // the gate opens at 3 sublevels, writes stall at 24
		o.MemTableSize = 64 << 10
		return o
	}
	s := New("/db", optsOf(fs))
	require.NoError(t, s.Open())
	require.True(t, s.tuned())
	state := map[string]string{}
	states := []map[string]string{maps.Clone(state)}
	pad := string(randPad(rng, 800))
	var deepest int32
	for i := 0; i < 12000; i++ {
		k := keyN(rng.IntN(600))
		if rng.IntN(6) == 0 {
			require.NoError(t, s.Delete(k))
			delete(state, k)
		} else {
			v := append(val(at(rng.IntN(100)), fmt.Sprint("b", rng.IntN(3))), pad[:rng.IntN(800)]...)
			require.NoError(t, s.Set(k, v))
			state[k] = string(v)
		}
		states = append(states, maps.Clone(state))
		require.NoError(t, s.SetOffset(int64(i)))
		if i%500 == 0 {
			deepest = max(deepest, s.metricsForTest().Levels[0].Sublevels)
		}
		if rng.IntN(200) == 0 {
			if off, ok := s.localOffset(); ok {
				require.NoError(t, s.putOffset(off))
			}
		}
	}
	m := s.metricsForTest()
	t.Logf("held: deepest L0 seen %d sublevels", deepest)
	t.Logf("held: L0 %d sublevels, %d files; %d compactions", m.Levels[0].Sublevels, m.Levels[0].TablesCount, m.Compact.Count)
	cc.every.Store(7)
	cc.limit.Store(110)
	require.NoError(t, s.MarkRecovered())
	require.Eventually(t, func() bool { return s.metricsForTest().Levels[0].Sublevels <= 1 }, 10*time.Second, 10*time.Millisecond)
	cc.every.Store(0)
	require.NoError(t, s.Close())
	crashes := cc.taken()
	t.Logf("%d crash points", len(crashes))
	for ci, c := range crashes {
		s2 := New("/db", optsOf(c))
		require.NoError(t, s2.Open(), "crash point %d", ci)
		got := tableState(t, s2)
		prefix := -1
		for i := len(states) - 1; i >= 0; i-- {
			if maps.Equal(states[i], got) {
				prefix = i
				break
			}
		}
		require.GreaterOrEqual(t, prefix, 0, "crash point %d: not a prefix", ci)
		off, err := s2.GetOffset(-1)
		require.NoError(t, err)
		require.GreaterOrEqual(t, int64(prefix), off+1, "crash point %d: offset %d ahead of the writes (%d)", ci, off, prefix)
		require.NoError(t, s2.MarkRecovered())
		checkConsistent(t, s2)
		idx := dumpIndexes(t, s2)
		require.NoError(t, s2.RebuildIndexes(time.Time{}))
		require.Equal(t, idx, dumpIndexes(t, s2), "crash point %d: indexes", ci)
		require.NoError(t, s2.Close())
	}
}
