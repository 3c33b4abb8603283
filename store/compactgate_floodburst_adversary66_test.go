package store

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Promise (fires stay on time: a store that fires compacts at Pebble's
// threshold, so its reads do not merge a deep level 0): a burst of fires
// right after a registration. Seeded: 3 s of registration (new ids in
// random order, ~6k/s), then at once a burst of fires (DueUpTo, GetMany,
// ApplyScannedMoves of 50 due jobs per round, back to back).
//
// Found (round 66): the burst's first reads merge the level 0 the flood
// held (12 sublevels against 5 at Pebble's threshold). Kept as a bound
// (docs/architecture.md): no gate can compact before it knows the flood
// ended. What is checked: the burst ends the flood, level 0 is never
// deeper than the threshold (twice where the held gate grants), it comes
// down to Pebble's depth, and every fire and record is read back.
func TestAdversary66FireBurstAfterRegistration(t *testing.T) {
	done := watchdog(t, 90*time.Second, t.Name())
	defer done()
	type seen struct {
		atBurst, deepest int32
		rounds, deep     int
		burst            time.Duration
		unflooded        bool
		fired            int
	}
	got := map[int]seen{}
	for _, th := range []int{0, 32} {
		s := floodStore(t, th)
		rng := rand.New(rand.NewPCG(66, 11))
		for n := range 6000 { // due now; flushed and compacted before the registration
			require.NoError(t, s.Set(fmt.Sprintf("due-%05d", n), val(at(1+n%100), "b")))
		}
		time.Sleep(1200 * time.Millisecond)
		require.Eventually(t, func() bool { return s.metricsForTest().Levels[0].Sublevels <= 1 }, 20*time.Second, 20*time.Millisecond)
		start := time.Now()
		for time.Since(start) < 3*time.Second {
			for range 60 {
				k := fmt.Sprintf("job-%08x", rng.Uint32())
				require.NoError(t, s.Set(k, []byte(string(val(at(1_000_000+rng.IntN(1000)), "b"))+string(randPad(rng, 150)))))
			}
			time.Sleep(10 * time.Millisecond)
		}
		var g seen
		g.atBurst = s.metricsForTest().Levels[0].Sublevels
		burst := time.Now()
		after := Due{}
		for {
			due, err := s.DueUpTo(at(200), after, 50)
			require.NoError(t, err)
			if len(due) == 0 {
				break
			}
			keys := make([]string, len(due))
			moves := make([]Move, len(due))
			for i, d := range due {
				keys[i] = d.Key
				moves[i] = Move{Key: d.Key, From: d.At, Bucket: "b"}
			}
			vals, err := s.GetMany(keys)
			require.NoError(t, err)
			require.Len(t, vals, len(keys))
			for i, v := range vals {
				require.NotNil(t, v, "the record of due job %s", keys[i])
			}
			g.fired += len(due)
			require.NoError(t, s.ApplyScannedMoves(moves, due[0], due[len(due)-1], at(200)))
			l0 := s.metricsForTest().Levels[0].Sublevels
			g.deepest = max(g.deepest, l0)
			if s.gate != nil && !s.gate.flooded() {
				g.unflooded = true
			}
			g.rounds++
			if l0 > 8 {
				g.deep++
			}
			after = due[len(due)-1]
			time.Sleep(2 * time.Millisecond)
		}
		g.burst = time.Since(burst)
		got[th] = g
		t.Logf("threshold %d: level 0 %d sublevels when the burst began; %d fire rounds in %v, deepest %d, %d rounds over 8 sublevels", th, g.atBurst, g.rounds, g.burst.Round(time.Millisecond), g.deepest, g.deep)
		require.Equal(t, 6001, g.fired, "threshold %d: every due job (and floodStore's seed) fired once", th)
		require.Eventually(t, func() bool { return s.metricsForTest().Levels[0].Sublevels <= 2 }, 30*time.Second, 20*time.Millisecond, "threshold %d: level 0 comes down", th)
		checkConsistent(t, s)
		require.NoError(t, s.Close())
	}
	require.True(t, got[32].unflooded, "the burst's fires end the flood")
	require.LessOrEqual(t, got[32].deepest, int32(32),
		"fires right after a registration merged a level 0 of %d sublevels (%d of %d rounds over 8), deeper than the threshold", got[32].deepest, got[32].deep, got[32].rounds)
}
