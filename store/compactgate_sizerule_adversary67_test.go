package store

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// tablesSize67 sums the store's tables over every level.
func tablesSize67(s *Store) int64 {
	var n int64
	for _, l := range s.metricsForTest().Levels {
		n += l.TablesSize
	}
	return n
}

// TestAdversary67SizeWaitCountdown drives measure() tick by tick with a
// fake size reader: the size is read on the first flood tick and then at
// most once every floodRecent ticks while the flood lasts; ticks with no
// flood never read; a flood that resumes after a pause of at least a
// second reads on its first tick; a store that crosses the size mid-flood
// is held within floodRecent ticks of the crossing.
func TestAdversary67SizeWaitCountdown(t *testing.T) {
	m := &floodMeter{}
	g := newCompactionGate(32, false, m)
	g.minTableBytes = 1000
	var size int64
	reads := 0
	g.tables = func() int64 { reads++; return size }
	tick := func(fresh, other int) {
		m.fresh.Add(uint64(fresh))
		m.other.Add(uint64(other))
		g.measure()
	}
	// Flood from the first tick (200 new keys, nothing else).
	tick(200, 0)
	require.Equal(t, 1, reads, "read on the first flood tick")
	require.False(t, g.flooded(), "small: not held")
	for range floodRecent - 1 {
		tick(200, 0)
	}
	require.Equal(t, 1, reads, "no read within the second")
	tick(200, 0)
	require.Equal(t, 2, reads, "read again after a second")
	// Crossing mid-flood: held within floodRecent ticks.
	size = 1000
	heldAfter := -1
	for i := range floodRecent + 1 {
		tick(200, 0)
		if g.flooded() {
			heldAfter = i + 1
			break
		}
	}
	require.Positive(t, heldAfter, "held within a second of the crossing")
	require.LessOrEqual(t, heldAfter, floodRecent)

	// A fresh gate: a flood, then a pause (other work), then the flood resumes.
	m2 := &floodMeter{}
	g2 := newCompactionGate(32, false, m2)
	g2.minTableBytes = 1000
	var size2 int64
	reads2 := 0
	g2.tables = func() int64 { reads2++; return size2 }
	tick2 := func(fresh, other int) {
		m2.fresh.Add(uint64(fresh))
		m2.other.Add(uint64(other))
		g2.measure()
	}
	tick2(200, 0)
	require.Equal(t, 1, reads2)
	// Other work breaks the flood for a second and more: no reads then;
	// the store grows meanwhile.
	tick2(200, 100)
	require.False(t, g2.flooded())
	size2 = 5000
	resumedAfter := -1
	for i := range 2 * floodRecent {
		tick2(200, 0)
		if reads2 > 1 {
			resumedAfter = i + 1
			break
		}
	}
	require.Positive(t, resumedAfter, "the resumed flood reads the size")
	require.Equal(t, floodRecent, resumedAfter, "no reads while the counts make no flood (the last second's other work)")
	require.True(t, g2.flooded(), "resumed flood read at once: held")
	require.Equal(t, 2, reads2)
}

// TestAdversary67CrossingHeldWithinASecond: a real store whose tables pass
// floodMinTableBytes mid-flood is held within about a second of passing
// it, never while clearly under it, and OpenHeld's flood count follows the
// gate (no flood counted for a store the size rule lets compact).
func TestAdversary67CrossingHeldWithinASecond(t *testing.T) {
	done := watchdog(t, 60*time.Second, t.Name())
	defer done()
	const min = 768 << 10
	fs := vfs.NewMem()
	opts := Options{FS: fs, Indexer: testIndexer, Logger: quiet, KeyFilter: true, MemTableSize: 64 << 10, RecoveryL0CompactionThreshold: 32, floodMinTableBytes: min}
	s := New("/db", opts)
	require.NoError(t, s.Open())
	require.NoError(t, s.MarkRecovered())
	defer func() { require.NoError(t, s.Close()) }()
	rng := rand.New(rand.NewPCG(67, 1))
	state := map[string]string{}
	var crossedAt, heldAt time.Time
	// The gate's ticks at each: a slow machine stretches the time, not the
	// ticks (the size is read once every floodRecent ticks).
	var crossedTick, heldTick int
	ticks := func() int {
		s.gate.mu.Lock()
		defer s.gate.mu.Unlock()
		return s.gate.measured
	}
	var sawFloodCountsSmall bool
	for i, n := range rng.Perm(20000) {
		k := keyN(n)
		v := string(val(at(rng.IntN(1000)), "b")) + string(randPad(rng, 100))
		require.NoError(t, s.Set(k, []byte(v)))
		state[k] = v
		if i%100 == 0 {
			size := tablesSize67(s)
			flooded := s.gate.flooded()
			h := OpenHeld()
			if flooded {
				require.GreaterOrEqual(t, size, int64(min)*9/10, "held while the tables are %d bytes (min %d)", size, min)
			} else {
				require.Zero(t, h.Flood, "OpenHeld counts a flood the gate does not hold")
				s.gate.mu.Lock()
				if !s.gate.large && size < min {
					sawFloodCountsSmall = true
				}
				s.gate.mu.Unlock()
			}
			if crossedAt.IsZero() && size >= min {
				crossedAt, crossedTick = time.Now(), ticks()
			}
			if heldAt.IsZero() && flooded {
				heldAt, heldTick = time.Now(), ticks()
				require.Equal(t, 1, h.Flood, "OpenHeld counts the held store")
			}
			if !heldAt.IsZero() && !crossedAt.IsZero() && i > 0 && time.Since(heldAt) > time.Second {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	require.True(t, sawFloodCountsSmall)
	require.False(t, crossedAt.IsZero(), "tables never crossed %d", min)
	require.False(t, heldAt.IsZero(), "never held after crossing")
	delay := heldAt.Sub(crossedAt)
	t.Logf("held %v (%d ticks) after the tables crossed %d bytes", delay, heldTick-crossedTick, min)
	// The size is read every floodRecent ticks: the crossing is seen at the
	// next read, and the flag the test reads is set by that tick's measure
	// (one more for the test's own sampling between two of its reads).
	require.LessOrEqual(t, heldTick-crossedTick, floodRecent+1, "held within a second's ticks")
	got := tableState(t, s)
	for k, v := range state {
		require.Equal(t, v, got[k], k)
	}
	checkConsistent(t, s)
}

// TestAdversary67ShrunkStoreHeldForFlood: "once large, stays large". A
// store grows past the size (held for its flood), the flood ends, all its
// keys are deleted and compacted away (tables far under the size), and a
// second flood of new keys comes: the promise "a store whose tables are
// under the size (16 MiB then) is never held for a flood" says it
// compacts at Pebble's threshold.
func TestAdversary67ShrunkStoreHeldForFlood(t *testing.T) {
	done := watchdog(t, 60*time.Second, t.Name())
	defer done()
	const min = 512 << 10
	fs := vfs.NewMem()
	opts := Options{FS: fs, Indexer: testIndexer, Logger: quiet, KeyFilter: true, MemTableSize: 64 << 10, RecoveryL0CompactionThreshold: 32, floodMinTableBytes: min}
	s := New("/db", opts)
	require.NoError(t, s.Open())
	require.NoError(t, s.MarkRecovered())
	defer func() { require.NoError(t, s.Close()) }()
	rng := rand.New(rand.NewPCG(67, 2))
	var keys []string
	for i, n := range rng.Perm(12000) {
		k := keyN(n)
		require.NoError(t, s.Set(k, append(val(at(rng.IntN(1000)), "b"), randPad(rng, 100)...)))
		keys = append(keys, k)
		if i%100 == 0 {
			if s.gate.flooded() {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	require.True(t, s.gate.flooded(), "grew large: held (size %d)", tablesSize67(s))
	for _, k := range keys {
		require.NoError(t, s.Delete(k))
	}
	require.NoError(t, s.db.Compact(context.Background(), []byte{0}, []byte{0xff, 0xff, 0xff}, false))
	small := tablesSize67(s)
	t.Logf("tables after deletes and compaction: %d bytes", small)
	require.Less(t, small, int64(min)/4)
	// Let the deletes leave the window: no flood.
	deadline := time.Now().Add(10 * time.Second)
	for s.gate.flooded() && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	require.False(t, s.gate.flooded())
	time.Sleep(5500 * time.Millisecond)
	// A second flood of new keys on the small store.
	var heldSmall int64 = -1
	for i := range 3000 {
		require.NoError(t, s.Set("new-"+keyN(i), append(val(at(rng.IntN(1000)), "b"), randPad(rng, 100)...)))
		if i%100 == 0 {
			if size := tablesSize67(s); s.gate.flooded() && size < min/2 && heldSmall < 0 {
				heldSmall = size
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	require.Negative(t, heldSmall, "a store of %d bytes of tables (min %d) held for a flood: once large, stays large", heldSmall, min)
}
