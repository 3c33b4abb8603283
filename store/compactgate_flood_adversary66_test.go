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
// registers a batch of new ids in random order and fires the due jobs
// owed by the wall clock at 150 a second (DueUpTo, GetMany, ApplyMoves
// removing the entries: what a fire does to the store), as a scheduler
// does whatever else slows it. The gated store (threshold 32) must not be
// held while it fires: every sample that sees it held must follow a
// second in which it did at most the rule's 64 units of other work (a
// loop stalled that long is, by the rule, a store only registering), and
// where the machine keeps up, its level 0 is no deeper than Pebble's
// threshold keeps the ungated one (threshold 0) under the same rounds (CI,
// 2026-12-07: with the fires paced by the loop instead of the clock, a
// loaded machine slowed the loop, 3 of 50 samples saw a hold, and level 0
// was 13 sublevels deep against 11).
func TestAdversary66FiringStoreIsNotHeldByAFlood(t *testing.T) {
	done := watchdog(t, 90*time.Second, t.Name())
	defer done()
	const prefill, firesPerSecond = 9000, 150
	deepest := map[int]int32{}
	floods := map[int]int{}
	type fireRound struct {
		from, to time.Time
		units    int // other work the store counts at least: the scan (1 + found) and the moves
	}
	for _, th := range []int{0, 32} {
		s := floodStore(t, th)
		rng := rand.New(rand.NewPCG(66, 3))
		// Jobs due now: what the store fires during the registration.
		for _, n := range rng.Perm(prefill) {
			require.NoError(t, s.Set(fmt.Sprintf("due-%06d", n), val(at(1+n%100), "b")))
		}
		// The prefill's flood ends once its keys leave the gate's 5-s
		// window (nothing else runs meanwhile); then level 0 comes down.
		require.Eventually(t, func() bool { return s.gate == nil || !s.gate.flooded() }, 20*time.Second, 20*time.Millisecond)
		require.Eventually(t, func() bool { return s.metricsForTest().Levels[0].Sublevels <= 2 }, 20*time.Second, 20*time.Millisecond)
		fired := 0
		next := 0
		var rounds []fireRound
		// unitsIn is the other work done by rounds that began and ended
		// within [from, to]: the store counted it in that span.
		unitsIn := func(from, to time.Time) int {
			n := 0
			for _, r := range rounds {
				if !r.from.Before(from) && !r.to.After(to) {
					n += r.units
				}
			}
			return n
		}
		began := time.Now()
		for round := -110; round < 250; round++ {
			// The first 110 rounds (~1.1 s) only fire: the registration
			// begins on a store already firing, as one does that registers
			// while it schedules.
			for i := 0; i < 100 && round >= 0; i++ { // ~7k registrations/s
				k := fmt.Sprintf("job-%08x", rng.Uint32())
				next++
				require.NoError(t, s.Set(k, []byte(string(val(at(1_000_000+next), "b"))+string(randPad(rng, 100)))))
			}
			if owed := int(time.Since(began).Seconds()*firesPerSecond) - fired; owed > 0 {
				from := time.Now()
				due, err := s.DueUpTo(at(200), Due{}, owed)
				require.NoError(t, err)
				require.Len(t, due, owed, "the prefill ran out of due jobs: the fires stopped")
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
				rounds = append(rounds, fireRound{from, time.Now(), 1 + 2*len(due)})
			}
			if round >= 0 && round%5 == 0 {
				deepest[th] = max(deepest[th], s.metricsForTest().Levels[0].Sublevels)
				if s.gate != nil && s.gate.flooded() {
					floods[th]++
					// The gate's last second ended at its last tick, at
					// most 100 ms ago: it spans [now-1s, now-100ms] at least.
					now := time.Now()
					units := unitsIn(now.Add(-time.Second), now.Add(-100*time.Millisecond))
					require.LessOrEqual(t, units, 64, // the documented rule (configuration.md), not the constant under test
						"held as a flood while it did %d units of other work (fires) in the last second", units)
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		require.Positive(t, fired)
		took := time.Since(began)
		checkConsistent(t, s)
		t.Logf("threshold %d: fired %d in %s, deepest level 0 %d sublevels, flood seen in %d of 50 samples", th, fired, took.Round(time.Millisecond), deepest[th], floods[th])
		require.NoError(t, s.Close())
	}
	// The depths are compared only where the machine kept up: the
	// ungated store stayed clear of its write stall (12; at it Pebble stops
	// the writes, while the gated store's writes stall at 4 × 32, held or
	// not, and its level 0 grows: 10 and 15 sublevels against 8 and 11
	// beside 3 busy loops, no hold seen), and no sample saw a hold (one
	// over a stalled second, allowed above, lets level 0 grow to where the
	// gate grants). The two stores run one after the other and load moves
	// between them: not held, the gated store was 1-2 sublevels deeper (9
	// and 10 against 8), hence 3 of slack; the rule without its last second
	// held it at 21 against 10. The hold itself is what the samples check,
	// however loaded the machine.
	if deepest[0] < 10 && floods[32] == 0 {
		require.LessOrEqual(t, deepest[32], max(int32(8), deepest[0])+3,
			"a store firing 150 jobs/s while it registers ~7k/s: level 0 %d sublevels deep against %d at Pebble's threshold, and its DueUpTo/GetMany merge them all", deepest[32], deepest[0])
	} else {
		t.Logf("the ungated store reached %d sublevels (its write stall: 12), and %d samples saw a hold over a stalled second: the machine did not keep up, and the depths are not compared", deepest[0], floods[32])
	}
}
