package store

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Promise (fires stay on time / the flood rule): "Gets/Has that reach
// Pebble" and "each iterator opened" are other work. DueOf reads the
// reverse entry from Pebble (getRaw), BucketKeys and PrefixKeys each open
// a Pebble iterator; none of them is counted, so a store that answers as
// many of them as it registers new keys is taken for a flood and holds
// level 0 deep under those reads. Deterministic: the meter's counts only.
func TestAdversary66UncountedReadsAreOtherWork(t *testing.T) {
	s := floodStore(t, 32)
	rng := rand.New(rand.NewPCG(66, 1))
	var keys []string
	for _, n := range rng.Perm(200) {
		k := keyN(n)
		require.NoError(t, s.Set(k, val(at(1000+n), "b")))
		keys = append(keys, k)
	}
	for _, tc := range []struct {
		name string
		read func(k string) error
	}{
		{"DueOf", func(k string) error { _, err := s.DueOf(k); return err }},
		{"BucketKeys", func(k string) error { _, err := s.BucketKeys("b", k, 5); return err }},
		{"PrefixKeys", func(k string) error { _, err := s.PrefixKeys(k[:3], "", 5); return err }},
		{"Get", func(k string) error { _, err := s.Get(k); return err }}, // counted: the control
	} {
		before := s.flood.other.Load()
		const n = 50
		for range n {
			require.NoError(t, tc.read(keys[rng.IntN(len(keys))]))
		}
		got := s.flood.other.Load() - before
		assert.GreaterOrEqual(t, got, uint64(n), "%s: %d reads of Pebble counted as %d units of other work: a store doing them while it registers is taken for a flood", tc.name, n, got)
	}
}

// The same at the gate: a second of new keys with one DueOf of a key the
// store has per new key (reads as many as writes) is no flood.
func TestAdversary66DueOfWhileRegisteringIsNoFlood(t *testing.T) {
	done := watchdog(t, 30*time.Second, t.Name())
	defer done()
	s := floodStore(t, 32)
	rng := rand.New(rand.NewPCG(66, 2))
	next := 0
	var have []string
	flooded := 0
	for tick := range 20 {
		for range 60 {
			k := keyN(1_000_000 + next)
			next++
			require.NoError(t, s.Set(k, val(at(rng.IntN(1000)), "b")))
			have = append(have, k)
			_, err := s.DueOf(have[rng.IntN(len(have))])
			require.NoError(t, err)
		}
		time.Sleep(100 * time.Millisecond)
		if tick >= 12 && s.gate.flooded() {
			flooded++
		}
	}
	require.Zero(t, flooded, "a store reading (DueOf) one key per new key held compactions as a flood in %d of 8 checks", flooded)
}

// Promise: a store that fires compacts at Pebble's threshold; a flood must
// not make a store that also fires hold level 0 deep. Seeded: each round
// registers a batch of new ids in random order and fires a few due jobs
// (DueUpTo, GetMany, ApplyMoves removing the entries: what a fire does to
// the store). The gated store (threshold 32) must keep level 0 no deeper
// than Pebble's threshold keeps the ungated one (threshold 0) under the
// same rounds.
func TestAdversary66FiringStoreIsNotHeldByAFlood(t *testing.T) {
	done := watchdog(t, 90*time.Second, t.Name())
	defer done()
	deepest := map[int]int32{}
	floods := map[int]int{}
	for _, th := range []int{0, 32} {
		s := floodStore(t, th)
		rng := rand.New(rand.NewPCG(66, 3))
		// Jobs due now: what the store fires during the registration.
		for _, n := range rng.Perm(3000) {
			require.NoError(t, s.Set(fmt.Sprintf("due-%06d", n), val(at(1+n%100), "b")))
		}
		time.Sleep(1200 * time.Millisecond) // the prefill's own flood ends
		require.Eventually(t, func() bool { return s.metricsForTest().Levels[0].Sublevels <= 2 }, 20*time.Second, 20*time.Millisecond)
		fired := 0
		next := 0
		for round := range 250 {
			for range 100 { // ~10k registrations/s
				k := fmt.Sprintf("job-%08x", rng.Uint32())
				next++
				require.NoError(t, s.Set(k, []byte(string(val(at(1_000_000+next), "b"))+string(randPad(rng, 100)))))
			}
			due, err := s.DueUpTo(at(200), Due{}, 3) // ~300 fires/s
			require.NoError(t, err)
			keys := make([]string, len(due))
			moves := make([]Move, len(due))
			for i, d := range due {
				keys[i] = d.Key
				moves[i] = Move{Key: d.Key, From: d.At, Bucket: "b"} // From trusted: the scan's entry and its bucket
			}
			vals, err := s.GetMany(keys)
			require.NoError(t, err)
			for i, v := range vals {
				require.NotNil(t, v, "due entry %q points to a record", keys[i])
			}
			require.NoError(t, s.ApplyMoves(moves, at(200)))
			fired += len(due)
			if round%5 == 0 {
				deepest[th] = max(deepest[th], s.metricsForTest().Levels[0].Sublevels)
				if s.gate != nil && s.gate.flooded() {
					floods[th]++
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		require.Positive(t, fired)
		checkConsistent(t, s)
		t.Logf("threshold %d: fired %d, deepest level 0 %d sublevels, flood seen in %d of 50 samples", th, fired, deepest[th], floods[th])
		require.NoError(t, s.Close())
	}
	require.LessOrEqual(t, deepest[32], max(int32(8), deepest[0]),
		"a store firing ~300 jobs/s while it registers ~10k/s was held as a flood (%d of 50 samples): level 0 %d sublevels deep against %d at Pebble's threshold, and its DueUpTo/GetMany merge them all", floods[32], deepest[32], deepest[0])
}
