package store

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// Promise (no write lost or misread, across a crash): crashes while a
// store that is not fresh takes a flood of new keys (the gate holds level
// 0 deep, grants at threshold/2 sublevels), while a few fires move due
// entries, and after the flood ends (the held compactions run). Each crash
// point keeps a prefix of the new keys with their values, the fires'
// moves are consistent with the table, and the due index agrees with the table
// (checkConsistent).
func TestAdversary66CrashDuringFlood(t *testing.T) {
	for seed := uint64(1); seed <= 2; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { adv66CrashDuringFlood(t, seed) })
	}
}

func adv66CrashDuringFlood(t *testing.T, seed uint64) {
	done := watchdog(t, 60*time.Second, t.Name())
	defer done()
	rng := rand.New(rand.NewPCG(seed, 66))
	cc := newCrashCloner(seed, 67)
	cc.limit.Store(20)
	fs := cc.FS
	optsOf := func(fs vfs.FS) Options {
		return Options{FS: fs, Indexer: testIndexer, Logger: quiet, KeyFilter: true, MemTableSize: 64 << 10, RecoveryL0CompactionThreshold: 12, floodMinTableBytes: -1}
	}
	// Not fresh: the base jobs, due now, closed cleanly.
	s := New("/db", optsOf(fs))
	require.NoError(t, s.Open())
	base := map[string]string{}
	for n := range 300 {
		k := fmt.Sprintf("due-%04d", n)
		v := string(val(at(1+n%50), "b"))
		require.NoError(t, s.Set(k, []byte(v)))
		base[k] = v
	}
	require.NoError(t, s.MarkRecovered())
	require.NoError(t, s.Close())
	s = New("/db", optsOf(fs))
	require.NoError(t, s.Open())
	require.False(t, s.tuned())
	require.NoError(t, s.MarkRecovered())

	cc.every.Store(150)
	var order []string
	vals := map[string]string{}
	pad := string(randPad(rng, 400))
	sawFlood := false
	var deepest int32
	for i := 0; i < 9000; i++ {
		k := fmt.Sprintf("job-%08x-%d", rng.Uint32(), i)
		v := string(val(at(1000+rng.IntN(1000)), "b")) + pad[:rng.IntN(400)]
		require.NoError(t, s.Set(k, []byte(v)))
		order = append(order, k)
		vals[k] = v
		if i%300 == 0 { // a fire now and then: little other work
			due, err := s.DueUpTo(at(100), Due{}, 2)
			require.NoError(t, err)
			moves := make([]Move, len(due))
			for j, d := range due {
				moves[j] = Move{Key: d.Key, From: d.At, Bucket: "b", To: at(5000 + i)}
			}
			require.NoError(t, s.ApplyMoves(moves, at(100)))
			deepest = max(deepest, s.metricsForTest().Levels[0].Sublevels)
			sawFlood = sawFlood || s.gate.flooded()
		}
	}
	t.Logf("flood seen %v, deepest level 0 %d sublevels", sawFlood, deepest)
	cc.every.Store(9)
	cc.limit.Store(40)
	require.Eventually(t, func() bool { return !s.gate.flooded() }, 20*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return s.metricsForTest().Levels[0].Sublevels <= 2 }, 20*time.Second, 10*time.Millisecond)
	cc.every.Store(0)
	require.NoError(t, s.Close())
	crashes := cc.taken()
	t.Logf("%d crash points", len(crashes))
	require.NotEmpty(t, crashes)
	for ci, c := range crashes {
		s2 := New("/db", optsOf(c))
		require.NoError(t, s2.Open(), "crash point %d", ci)
		got := tableState(t, s2)
		for k, v := range base {
			require.Equal(t, v, got[k], "crash point %d: base job %q (closed cleanly before the flood)", ci, k)
		}
		p := len(got) - len(base)
		require.GreaterOrEqual(t, p, 0)
		require.LessOrEqual(t, p, len(order))
		for _, k := range order[:p] {
			require.Equal(t, vals[k], got[k], "crash point %d: %d new keys kept, but not the first %d written (%q)", ci, p, p, k)
		}
		require.NoError(t, s2.MarkRecovered())
		checkConsistent(t, s2)
		// (No rebuild comparison: a fire's move is index-only, so a
		// rebuild from the records differs by design.)
		require.NoError(t, s2.Close())
	}
}
