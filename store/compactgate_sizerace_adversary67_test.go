package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// TestAdversary67RaceCloseMarkRecoveredDuringSizeRead: seeded. A gated
// store whose size rule is small enough to be crossed (or crossed at the
// first read) takes a flood of new keys from a writer; beside it a reader
// of OpenHeld and the gate's state, MarkRecovered at a random time (fresh
// stores), and Close at a random time while the gate reads the tables'
// size. Nothing hangs (watchdog), the gate loops stop, every acknowledged
// write reads back after a reopen, and the indexes agree.
func TestAdversary67RaceCloseMarkRecoveredDuringSizeRead(t *testing.T) {
	done := watchdog(t, 120*time.Second, t.Name())
	defer done()
	before := gateLoops()
	seeds := uint64(7)
	heldSeeds := 0
	for seed := uint64(5); seed <= seeds; seed++ { // 5-7: each saw a flood hold (~10 s a seed under -race)
		rng := rand.New(rand.NewPCG(seed, 67))
		min := []int64{1, 64 << 10, 256 << 10}[rng.IntN(3)]
		th := []int{2, 8, 32}[rng.IntN(3)]
		fresh := rng.IntN(2) == 0
		closeAfter := time.Duration(300+rng.IntN(2500)) * time.Millisecond
		markAfter := time.Duration(rng.IntN(1500)) * time.Millisecond
		if rng.IntN(2) == 0 {
			markAfter = 0
		}
		fs := vfs.NewMem()
		opts := Options{FS: fs, Indexer: testIndexer, Logger: quiet, KeyFilter: true, MemTableSize: 32 << 10, RecoveryL0CompactionThreshold: th, floodMinTableBytes: min}
		model := map[string]string{}
		if !fresh {
			s := New("/db", opts)
			require.NoError(t, s.Open())
			require.NoError(t, s.Set("seed", val(at(1), "b")))
			require.NoError(t, s.MarkRecovered())
			require.NoError(t, s.Close())
			model["seed"] = string(val(at(1), "b"))
		}
		s := New("/db", opts)
		require.NoError(t, s.Open())
		if markAfter == 0 {
			require.NoError(t, s.MarkRecovered())
		}
		var mu sync.Mutex
		var stop atomic.Bool
		var wg sync.WaitGroup
		var sawHeld atomic.Bool
		wg.Add(3)
		go func() { // writer
			defer wg.Done()
			wr := rand.New(rand.NewPCG(seed, 1))
			for i := 0; !stop.Load(); i++ {
				k := fmt.Sprintf("w-%07d", wr.IntN(1<<22))
				v := string(val(at(wr.IntN(1000)), "b")) + string(randPad(wr, 80))
				err := s.Set(k, []byte(v))
				if err != nil {
					if !errors.Is(err, ErrClosed) {
						t.Errorf("seed %d: Set: %v", seed, err)
					}
					return
				}
				mu.Lock()
				model[k] = v
				mu.Unlock()
				if i%200 == 0 {
					time.Sleep(5 * time.Millisecond)
				}
			}
		}()
		go func() { // watcher
			defer wg.Done()
			for !stop.Load() {
				h := OpenHeld()
				if h.Flood > 0 {
					sawHeld.Store(true)
				}
				_ = s.gate.flooded()
				_ = s.tuned()
				time.Sleep(time.Millisecond)
			}
		}()
		go func() { // MarkRecovered
			defer wg.Done()
			time.Sleep(markAfter)
			if err := s.MarkRecovered(); err != nil && !errors.Is(err, ErrClosed) {
				t.Errorf("seed %d: MarkRecovered: %v", seed, err)
			}
		}()
		time.Sleep(closeAfter)
		require.NoError(t, s.Close(), "seed %d", seed)
		stop.Store(true)
		wg.Wait()
		if sawHeld.Load() {
			heldSeeds++
		}
		t.Logf("seed %d: min %d th %d fresh %v close after %v: %d keys, held for a flood seen %v", seed, min, th, fresh, closeAfter, len(model), sawHeld.Load())

		s2 := New("/db", opts)
		require.NoError(t, s2.Open())
		require.NoError(t, s2.MarkRecovered())
		got := tableState(t, s2)
		for k, v := range model {
			require.Equal(t, v, got[k], "seed %d: %s", seed, k)
		}
		checkConsistent(t, s2)
		require.NoError(t, s2.Close())
	}
	require.Positive(t, heldSeeds, "no seed was ever held for a flood: the race was not exercised")
	deadline := time.Now().Add(5 * time.Second)
	for gateLoops() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	require.LessOrEqual(t, gateLoops(), before, "gate loops left running")
}
