package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// Promises (no write lost, Close never hangs, no goroutine leak, MarkRecovered
// during a flood works): seeded. A store gated at a random threshold takes a
// flood of new keys from a writer goroutine, with a reader (Get, DueUpTo,
// GetMany) beside it; a fresh store is marked recovered in the middle of it
// (or never); then Close races the writer. Reopened (gated, not fresh), every
// acknowledged write reads back, the indexes agree, and a second flood on the
// reopened store ends and lets level 0 down. The gate loops all stop.
// Starts goroutines of its own (writer, reader, MarkRecovered).
func TestAdversary66RaceCloseDuringFlood(t *testing.T) {
	done := watchdog(t, 120*time.Second, t.Name())
	defer done()
	before := gateLoops()
	seeds := uint64(8)
	if testing.Short() { // the race step: ~15 s a seed under -race
		seeds = 4
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		rng := rand.New(rand.NewPCG(seed, 66))
		th := []int{1, 2, 4, 8, 32, 64}[rng.IntN(6)]
		fresh := rng.IntN(2) == 0
		mark := rng.IntN(3) // 0: never, 1: before the flood, 2: during it
		fs := vfs.NewMem()
		opts := Options{FS: fs, Indexer: testIndexer, Logger: quiet, KeyFilter: true, MemTableSize: 32 << 10, RecoveryL0CompactionThreshold: th, floodMinTableBytes: -1}
		if !fresh {
			s := New("/db", opts)
			require.NoError(t, s.Open())
			require.NoError(t, s.Set("seed", val(at(1), "b")))
			require.NoError(t, s.MarkRecovered())
			require.NoError(t, s.Close())
		}
		s := New("/db", opts)
		require.NoError(t, s.Open())
		require.Equal(t, fresh, s.tuned(), "seed %d", seed)
		if mark == 1 {
			require.NoError(t, s.MarkRecovered())
		}
		var mu sync.Mutex
		model := map[string]string{}
		if !fresh {
			model["seed"] = string(val(at(1), "b"))
		}
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { // writer: new keys in random order, some updates
			defer wg.Done()
			wr := rand.New(rand.NewPCG(seed, 1))
			for i := 0; ; i++ {
				k := fmt.Sprintf("job-%08x", wr.Uint32())
				v := string(val(at(wr.IntN(500)), "b")) + string(randPad(wr, 60))
				if err := s.Set(k, []byte(v)); err != nil {
					if !errors.Is(err, ErrClosed) {
						t.Errorf("seed %d: Set: %v", seed, err)
					}
					return
				}
				mu.Lock()
				model[k] = v
				mu.Unlock()
			}
		}()
		go func() { // reader: a little other work
			defer wg.Done()
			rr := rand.New(rand.NewPCG(seed, 2))
			for {
				var err error
				switch rr.IntN(3) {
				case 0:
					_, err = s.Get(fmt.Sprintf("job-%08x", rr.Uint32()))
				case 1:
					_, err = s.DueUpTo(at(rr.IntN(500)), Due{}, 5)
				case 2:
					_, err = s.GetMany([]string{"seed", fmt.Sprintf("job-%08x", rr.Uint32())})
				}
				if err != nil {
					if !errors.Is(err, ErrClosed) {
						t.Errorf("seed %d: read: %v", seed, err)
					}
					return
				}
				time.Sleep(time.Duration(rr.IntN(20)) * time.Millisecond)
			}
		}()
		var markErr chan error
		if mark == 2 {
			markErr = make(chan error, 1)
			wait := time.Duration(100+rng.IntN(1000)) * time.Millisecond // rng is this goroutine's
			go func() {
				time.Sleep(wait)
				markErr <- s.MarkRecovered()
			}()
		}
		time.Sleep(time.Duration(300+rng.IntN(1500)) * time.Millisecond)
		sawFlood := s.gate.flooded()
		deepest := s.metricsForTest().Levels[0].Sublevels
		require.NoError(t, s.Close(), "seed %d", seed)
		wg.Wait()
		if markErr != nil {
			if err := <-markErr; err != nil && !errors.Is(err, ErrClosed) {
				t.Fatalf("seed %d: MarkRecovered during a flood: %v", seed, err)
			}
		}
		t.Logf("seed %d: threshold %d fresh %v mark %d: %d keys, flood at Close %v, level 0 %d sublevels", seed, th, fresh, mark, len(model), sawFlood, deepest)

		s2 := New("/db", opts)
		require.NoError(t, s2.Open())
		require.False(t, s2.tuned(), "seed %d: not fresh", seed)
		require.NoError(t, s2.MarkRecovered())
		got := tableState(t, s2)
		mu.Lock()
		for k, v := range model {
			require.Equal(t, v, got[k], "seed %d: acknowledged write of %q", seed, k)
		}
		mu.Unlock()
		checkConsistent(t, s2)
		// A second flood on the reopened store, then quiet: it ends and
		// level 0 comes down.
		for range 3000 {
			k := fmt.Sprintf("new-%08x", rng.Uint32())
			require.NoError(t, s2.Set(k, []byte(string(val(at(rng.IntN(500)), "b"))+string(randPad(rng, 60)))))
		}
		require.Eventually(t, func() bool { return !s2.gate.flooded() }, 20*time.Second, 20*time.Millisecond, "seed %d: the flood ends", seed)
		require.Eventually(t, func() bool { return s2.metricsForTest().Levels[0].Sublevels <= int32(max(2, th/2)) }, 30*time.Second, 20*time.Millisecond,
			"seed %d: level 0 comes down after the flood (%d sublevels)", seed, s2.metricsForTest().Levels[0].Sublevels)
		checkConsistent(t, s2)
		require.NoError(t, s2.Close())
	}
	require.Eventually(t, func() bool { return gateLoops() <= before }, 2*time.Second*watchdogScale, 20*time.Millisecond, "gate loops left: %d", gateLoops()-before)
}

// Promise (nothing stalls for good): a client that registers new ids as
// fast as the store takes them (an overload: an ungated store sits at its
// own stall too). Seeded keys in random order, unthrottled, 5 s per
// threshold: level 0 stays at or short of the write stall (4×threshold;
// at the stall Pebble stops writes until a compaction ends), the gated
// store takes at least half the keys the ungated one takes, and every key
// reads back.
func TestAdversary66EndlessFloodStaysBounded(t *testing.T) {
	done := watchdog(t, 90*time.Second, t.Name())
	defer done()
	taken := map[int]int{}
	for _, th := range []int{0, 32} {
		s := floodStore(t, th)
		rng := rand.New(rand.NewPCG(66, uint64(th)))
		model := map[string]string{"seed": string(val(at(1), "b"))}
		var deepest int32
		deepestAmp := 0
		floods := 0
		start := time.Now()
		n := 0
		for time.Since(start) < 5*time.Second {
			k := fmt.Sprintf("job-%08x", rng.Uint32())
			v := string(val(at(rng.IntN(1000)), "b")) + string(randPad(rng, 200))
			require.NoError(t, s.Set(k, []byte(v)))
			model[k] = v
			n++
			if n%200 == 0 {
				deepest = max(deepest, s.metricsForTest().Levels[0].Sublevels)
				deepestAmp = max(deepestAmp, s.l0ReadAmpForTest())
				if s.gate != nil && s.gate.flooded() {
					floods++
				}
			}
		}
		taken[th] = n
		stall := 12
		if th > 0 {
			stall = max(12, 4*th)
		}
		t.Logf("threshold %d: %d keys in 5 s, deepest level 0 %d sublevels, read amplification %d (stall at %d), flood in %d samples", th, n, deepest, deepestAmp, stall, floods)
		// Pebble checks the stall when it rotates the memtable, against
		// level 0's read amplification (the most tables one key is in): a
		// memtable rotated at stall-1 and one already queued still flush
		// (MemTableStopWritesThreshold, 2), so the read amplification ends
		// at most 2 past the stall. The sublevel count can pass the read
		// amplification (tables stack one sublevel above the highest they
		// overlap; CI, 2026-12-07: 129 and 132 sublevels at a stall of
		// 128), so it gets an eighth of the stall besides.
		require.LessOrEqual(t, deepestAmp, stall+2, "threshold %d: level 0's read amplification past the write stall", th)
		require.LessOrEqual(t, deepest, int32(stall+stall/8), "threshold %d: level 0's sublevels far past the write stall", th)
		require.GreaterOrEqual(t, n, taken[0]/2, "threshold %d: the gated store took %d keys against %d ungated", th, n, taken[0])
		require.Equal(t, model, tableState(t, s))
		checkConsistent(t, s)
		require.NoError(t, s.Close())
	}
}

// Promise (bounded resources: level 0 never reaches the stall under
// ordinary load; a held gate grants at threshold/2 sublevels): the same
// paced registration (seeded keys in random order, 200-byte values, batches
// of 50 per 10 ms: ~5k jobs/s) into an ungated store (threshold 0) and a
// gated one (threshold 32). Where the ungated store keeps level 0 short of
// its stall (12), the gated one must keep level 0 short of its own
// (4×32 = 128) and near where its gate grants (16).
func TestAdversary66PacedFloodLevel0NearTheGrant(t *testing.T) {
	done := watchdog(t, 120*time.Second, t.Name())
	defer done()
	for _, batch := range []int{50, 100, 200} {
		t.Run(fmt.Sprint(batch), func(t *testing.T) { pacedFlood(t, batch) })
	}
}

func pacedFlood(t *testing.T, batch int) {
	deepest := map[int]int32{}
	ths := []int{0, 32}
	// Both stores take each batch in the same round, so that a slow
	// stretch of the machine falls on both alike (run one after the
	// other, the gated store could meet a load the ungated one did not).
	stores := map[int]*Store{}
	for _, th := range ths {
		stores[th] = floodStore(t, th)
	}
	rng := rand.New(rand.NewPCG(66, uint64(batch)))
	keys := 0
	start := time.Now()
	for time.Since(start) < 3*time.Second {
		for range batch {
			k := fmt.Sprintf("job-%08x", rng.Uint32())
			v := []byte(string(val(at(rng.IntN(1000)), "b")) + string(randPad(rng, 200)))
			for _, th := range ths {
				require.NoError(t, stores[th].Set(k, v))
			}
			keys++
		}
		for _, th := range ths {
			deepest[th] = max(deepest[th], stores[th].metricsForTest().Levels[0].Sublevels)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, th := range ths {
		t.Logf("batch %d, threshold %d: %d keys in 3 s, deepest level 0 %d sublevels", batch, th, keys, deepest[th])
		checkConsistent(t, stores[th])
		require.NoError(t, stores[th].Close())
	}
	if deepest[0] >= 10 {
		t.Skipf("the ungated store came near its own stall (%d sublevels of 12): the load is not ordinary here", deepest[0])
	}
	require.Less(t, deepest[32], int32(128), "the flood's hold let level 0 reach the write stall (128 sublevels) where an ungated store stayed at %d", deepest[0])
	require.LessOrEqual(t, deepest[32], int32(16+8), "the flood's hold let level 0 grow to %d sublevels, far past where the gate grants (16); ungated %d", deepest[32], deepest[0])
}
