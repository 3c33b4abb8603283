package store

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// TestFloodMeasureFollowsTheWindow: seeded phases of random work (a
// registration, fires, a mix, nothing). After every tick the gate holds
// for a flood exactly when the last floodTicks ticks' counts make one by
// the rule (at least floodMinKeys new keys and at most one unit of other
// work for every floodShare of them, and at most floodMaxOther units in
// the last floodRecent ticks), computed here
// from a model of the window; and a gate without a meter never floods.
func TestFloodMeasureFollowsTheWindow(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		rng := rand.New(rand.NewPCG(seed, 66))
		m := &floodMeter{}
		g := newCompactionGate(32, false, m)
		none := newCompactionGate(32, false, nil)
		var ticks []floodSample
		floods, mode, left := 0, 0, 0
		for range 1500 {
			if left == 0 { // phases of one kind of work, 0.1 to 8 s long
				mode, left = rng.IntN(4), 1+rng.IntN(80)
			}
			left--
			var tick floodSample
			switch mode {
			case 0: // a registration: new keys, a few reads or many
				tick.fresh = uint64(rng.IntN(2000))
				tick.other = uint64(rng.IntN(4 + rng.IntN(2)*20))
			case 1: // fires or updates
				tick.other = uint64(rng.IntN(300))
			case 2: // mixed
				tick.fresh, tick.other = uint64(rng.IntN(100)), uint64(rng.IntN(30))
			}
			for range tick.fresh {
				m.addSet(true)
			}
			for n := tick.other; n > 0; {
				k := min(n, uint64(1+rng.IntN(7)))
				if rng.IntN(2) == 0 && k == 1 {
					m.addSet(false)
				} else {
					m.addOther(int(k))
				}
				n -= k
			}
			g.measure()
			none.measure()
			ticks = append(ticks, tick)
			var sum, sec floodSample
			for _, w := range ticks[max(0, len(ticks)-floodTicks):] {
				sum.fresh += w.fresh
				sum.other += w.other
			}
			for _, w := range ticks[max(0, len(ticks)-floodRecent):] {
				sec.other += w.other
			}
			want := sum.fresh >= floodMinKeys && sum.other*floodShare <= sum.fresh && sec.other <= floodMaxOther
			require.Equal(t, want, g.flooded(), "seed %d tick %d: last 5 s %+v, last second %+v", seed, len(ticks), sum, sec)
			require.False(t, none.flooded())
			if want {
				floods++
			}
		}
		require.Positive(t, floods, "seed %d: some seconds are floods", seed)
		require.False(t, g.held(), "a flood is not the recovery's hold")
	}
	var nilMeter *floodMeter
	nilMeter.addSet(true) // a store without a gate counts nothing
	nilMeter.addOther(3)
}

// floodStore opens a store that is not fresh (so the recovery's hold is
// off), with the scheduler's key filter and a small memtable, at the given
// threshold.
func floodStore(t *testing.T, threshold int) *Store {
	t.Helper()
	fs := vfs.NewMem()
	opts := Options{FS: fs, Indexer: testIndexer, Logger: quiet, KeyFilter: true, MemTableSize: 64 << 10, RecoveryL0CompactionThreshold: threshold, floodMinTableBytes: -1}
	s := New("/db", opts)
	require.NoError(t, s.Open())
	require.NoError(t, s.Set("seed", val(at(1), "b")))
	require.NoError(t, s.MarkRecovered())
	require.NoError(t, s.Close())
	s = New("/db", opts)
	require.NoError(t, s.Open())
	require.NoError(t, s.MarkRecovered())
	t.Cleanup(func() { _ = s.Close() })
	require.False(t, s.tuned(), "reopened: no recovery hold")
	return s
}

// notHeldDepth is the most sublevels of level 0 a paced store whose gate
// does not hold may reach: Pebble's threshold keeps it at 4-8 on a quiet
// machine, a loaded one lets flushes run ahead of the compactions (an
// ungated store reached 10-11 beside 3 busy loops, 2026-12-07), and a hold
// lets no compaction out before half the threshold (16 at 32).
const notHeldDepth = int32(10)

// TestFloodHoldsLevel0WhileNewKeysPour: a store that is not fresh takes new
// keys in no order with nothing else to do. Its gate holds (level 0 grows
// past the depth where Pebble's threshold compacts), lets level 0 down once
// it is as deep as the threshold allows, and releases when the keys stop;
// updates of the same keys (other work) compact at Pebble's threshold. At
// threshold 0 there is no gate. Every state read back is the model's.
func TestFloodHoldsLevel0WhileNewKeysPour(t *testing.T) {
	t.Parallel()
	done := watchdog(t, 60*time.Second, t.Name())
	defer done()
	for _, th := range []int{0, 32} {
		t.Run(fmt.Sprint(th), func(t *testing.T) {
			s := floodStore(t, th)
			rng := rand.New(rand.NewPCG(66, uint64(th)))
			state := map[string]string{"seed": string(val(at(1), "b"))}
			keys := rng.Perm(15000)
			var deepest int32
			sawFlood, counted := false, false // counted: OpenHeld saw a flood
			for i, n := range keys {
				k := keyN(n)
				v := string(val(at(rng.IntN(1000)), "b")) + string(randPad(rng, 100))
				require.NoError(t, s.Set(k, []byte(v)))
				state[k] = v
				if i%100 == 0 {
					deepest = max(deepest, s.metricsForTest().Levels[0].Sublevels)
					if s.gate != nil && s.gate.flooded() {
						sawFlood = true
						counted = counted || OpenHeld().Flood > 0
					}
					time.Sleep(20 * time.Millisecond) // ~5k keys/s at most: compactions keep up
				}
			}
			t.Logf("threshold %d: new keys: deepest level 0 %d sublevels, flood seen %v", th, deepest, sawFlood)
			if th == 0 {
				require.Nil(t, s.gate)
				require.LessOrEqual(t, deepest, int32(12), "Pebble's threshold, short of its write stall (12)")
			} else {
				require.True(t, sawFlood, "new keys with nothing else are a flood")
				require.True(t, counted, "chronos_stores_compactions_held{reason=\"flood\"} counts it")
				require.Greater(t, deepest, int32(8), "held: level 0 grows past Pebble's depth")
				require.Less(t, deepest, int32(4*th), "never to the write stall")
				// The keys stop: once they leave the gate's 5-s window the
				// flood ends, and level 0 comes down.
				require.Eventually(t, func() bool { return !s.gate.flooded() }, 20*time.Second, 20*time.Millisecond)
				require.Eventually(t, func() bool { return s.metricsForTest().Levels[0].Sublevels <= 2 }, 30*time.Second, 20*time.Millisecond, "level 0 comes down")
			}
			// Updates of the keys the store has: other work, no flood.
			deepest = 0
			for i := range 10000 {
				k := keyN(keys[rng.IntN(len(keys))])
				v := string(val(at(rng.IntN(1000)), "c")) + string(randPad(rng, 100))
				require.NoError(t, s.Set(k, []byte(v)))
				state[k] = v
				if i%100 == 0 {
					deepest = max(deepest, s.metricsForTest().Levels[0].Sublevels)
					require.False(t, s.gate != nil && s.gate.flooded(), "updates are not a flood")
					time.Sleep(20 * time.Millisecond)
				}
			}
			t.Logf("threshold %d: updates: deepest level 0 %d sublevels", th, deepest)
			require.LessOrEqual(t, deepest, notHeldDepth, "updates compact at Pebble's threshold")
			require.Equal(t, state, tableState(t, s))
			checkConsistent(t, s)
		})
	}
}

// TestFloodHoldsOnlyOnceTheStoreIsLarge: new keys pour into a store with
// nothing else to do, as in the test above, at two sizes for the hold. A
// store whose tables never reach it compacts at Pebble's threshold
// throughout; a store that grows past it is never held while its tables
// are well short of it, and is held once they pass it.
func TestFloodHoldsOnlyOnceTheStoreIsLarge(t *testing.T) {
	t.Parallel()
	done := watchdog(t, 60*time.Second, t.Name())
	defer done()
	for _, min := range []int64{1 << 30, 768 << 10} {
		t.Run(fmt.Sprint(min), func(t *testing.T) {
			fs := vfs.NewMem()
			opts := Options{FS: fs, Indexer: testIndexer, Logger: quiet, KeyFilter: true, MemTableSize: 64 << 10, RecoveryL0CompactionThreshold: 32, floodMinTableBytes: min}
			s := New("/db", opts)
			require.NoError(t, s.Open())
			require.NoError(t, s.MarkRecovered())
			t.Cleanup(func() { _ = s.Close() })
			rng := rand.New(rand.NewPCG(67, uint64(min)))
			state := map[string]string{}
			var deepestSmall, deepest int32
			var firstFlood int64 = -1 // the tables' size when a flood was first seen
			for i, n := range rng.Perm(15000) {
				k := keyN(n)
				v := string(val(at(rng.IntN(1000)), "b")) + string(randPad(rng, 100))
				require.NoError(t, s.Set(k, []byte(v)))
				state[k] = v
				if i%100 == 0 {
					m := s.metricsForTest()
					var size int64
					for _, l := range m.Levels {
						size += l.TablesSize
					}
					deepest = max(deepest, m.Levels[0].Sublevels)
					if size < min/2 {
						deepestSmall = max(deepestSmall, m.Levels[0].Sublevels)
					}
					if s.gate.flooded() && firstFlood < 0 {
						firstFlood = size
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			t.Logf("hold from %d bytes: flood first seen at %d bytes of tables; deepest level 0 %d sublevels, %d while under half", min, firstFlood, deepest, deepestSmall)
			require.LessOrEqual(t, deepestSmall, notHeldDepth, "a small store compacts at Pebble's threshold")
			if min == 1<<30 {
				require.Negative(t, firstFlood, "a store that never grows large is never held")
				require.LessOrEqual(t, deepest, notHeldDepth)
			} else {
				require.GreaterOrEqual(t, firstFlood, min/2, "held only once large (read once a second)")
				require.Greater(t, deepest, int32(8), "held once large: level 0 grows past Pebble's depth")
			}
			require.Equal(t, state, tableState(t, s))
			checkConsistent(t, s)
		})
	}
}
