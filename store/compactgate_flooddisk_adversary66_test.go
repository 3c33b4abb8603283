package store

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Promise (bounded resources: disk usage ends where an ungated store's
// ends) and the change's point (held, each compaction out of level 0
// carries more: fewer bytes written). The same seeded, paced registration
// into an ungated store (threshold 0) and a gated one (threshold 32);
// then quiet until level 0 is down and compactions stop. The gated
// store's live tables end within 15% of the ungated store's, and its
// compactions wrote no more than the ungated store's (10% slack).
func TestAdversary66FloodDiskEndsAsUngated(t *testing.T) {
	done := watchdog(t, 90*time.Second, t.Name())
	defer done()
	type end struct {
		live, disk     uint64
		written, flood int
	}
	ths := []int{0, 32}
	// Both stores take each key in the same round, so that a slow
	// stretch of the machine (which changes how many compactions run)
	// falls on both alike: run one after the other, their bytes moved
	// 1.10x apart with the code unchanged.
	stores := map[int]*Store{}
	for _, th := range ths {
		stores[th] = floodStore(t, th)
	}
	gated := stores[32]
	rng := rand.New(rand.NewPCG(66, 9))
	floods := 0
	for i := range 400 {
		for range 60 {
			k := fmt.Sprintf("job-%08x", rng.Uint32())
			v := []byte(string(val(at(rng.IntN(1000)), "b")) + string(randPad(rng, 150)))
			for _, th := range ths {
				require.NoError(t, stores[th].Set(k, v))
			}
		}
		if i%10 == 0 && gated.gate.flooded() {
			floods++
		}
		time.Sleep(8 * time.Millisecond)
	}
	require.Eventually(t, func() bool { return !gated.gate.flooded() }, 20*time.Second, 20*time.Millisecond)
	ends := map[int]end{}
	for _, th := range ths {
		s := stores[th]
		var last int64 = -1
		require.Eventually(t, func() bool {
			m := s.metricsForTest()
			c := m.Compact.Count
			settled := m.Levels[0].Sublevels <= 1 && c == last && m.Compact.NumInProgress == 0
			last = c
			return settled
		}, 30*time.Second, 500*time.Millisecond, "threshold %d: compactions settle", th)
		m := s.metricsForTest()
		var live uint64
		var written uint64
		for _, l := range m.Levels {
			live += uint64(l.TablesSize)
			written += l.TableBytesCompacted
		}
		e := end{live: live, disk: m.DiskSpaceUsage(), written: int(written)}
		if th == 32 {
			e.flood = floods
		}
		ends[th] = e
		t.Logf("threshold %d: live tables %d B, disk %d B, compactions wrote %d B, %d compactions", th, live, m.DiskSpaceUsage(), written, m.Compact.Count)
		checkConsistent(t, s)
		require.NoError(t, s.Close())
	}
	t.Logf("the gated store flooded in %d of 40 samples", floods)
	require.Positive(t, ends[32].flood, "the registration is a flood")
	require.LessOrEqual(t, float64(ends[32].live), 1.15*float64(ends[0].live), "disk: the gated store ends with %d B of live tables against %d ungated", ends[32].live, ends[0].live)
	require.LessOrEqual(t, float64(ends[32].written), 1.10*float64(ends[0].written), "the flood's hold wrote %d B in compactions against %d at Pebble's threshold", ends[32].written, ends[0].written)
}
