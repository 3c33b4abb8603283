package store

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// TestAdv46bAllWritePathsRaceReaders: promises 1 and 2 with every path
// that writes the table or its indexes running at once on one store, each
// from its own goroutine: two Set/Delete writers (Sets are serialized
// internally and may come from different goroutines), ApplyMoves without
// From and RebuildIndexes (the fan-out's and a rederive's), readers whose
// acquire commits a recovery's batch (Stats, IndexedUpTo), MarkRecovered
// midway through a deferred, batched recovery (with untune's reopen), and
// the filter growing again and again (filterMin 8). Readers Get, Has and
// GetMany keys already written and never deleted: none may read absent.
// Afterwards reads agree with the table, and the index with a rebuild.
// Run it under -race.
func TestAdv46bAllWritePathsRaceReaders(t *testing.T) {
	n := 1500
	if testing.Short() {
		n = 600
	}
	opts := Options{FS: vfs.NewMem(), Logger: quiet, Indexer: testIndexer, KeyFilter: true,
		DeferIndexOnRecovery: true, RecoveryL0CompactionThreshold: 2, MemTableSize: 256 << 10}
	s := New("/db", opts)
	s.filterMin = 8
	require.NoError(t, s.Open())
	t.Cleanup(func() { _ = s.Close() })

	var stableA, stableB atomic.Int64 // aNNNNN / bNNNNN below these are in the table for good
	var done atomic.Bool
	errs := make(chan error, 16)
	fail := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	var wg sync.WaitGroup
	stableKey := func(r *rand.Rand) (string, bool) {
		a, b := stableA.Load(), stableB.Load()
		switch {
		case a > 0 && (b == 0 || r.IntN(2) == 0):
			return fmt.Sprintf("a%05d", r.Int64N(a)), true
		case b > 0:
			return fmt.Sprintf("b%05d", r.Int64N(b)), true
		}
		return "", false
	}
	// Readers.
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 460))
			for !done.Load() {
				k, ok := stableKey(r)
				if !ok {
					continue
				}
				var found bool
				var err error
				switch g {
				case 0:
					var v []byte
					v, err = s.Get(k)
					found = v != nil
				case 1:
					found, err = s.Has(k)
				case 2:
					var vs [][]byte
					vs, err = s.GetMany([]string{k})
					found = err == nil && vs[0] != nil
				}
				if err == nil && !found {
					err = fmt.Errorf("reader %d: %s is in the table, read absent (filter %v, recovered %v)", g, k, s.filter.Load() != nil, s.Recovered())
				}
				if err != nil {
					fail(err)
					return
				}
			}
		}()
	}
	// Readers whose acquire commits the recovery's batch.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !done.Load() {
			if _, err := s.Stats(); err != nil {
				fail(err)
				return
			}
			if _, err := s.IndexedUpTo(); err != nil {
				fail(err)
				return
			}
		}
	}()
	// Moves and rebuilds, once recovered.
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(7, 460))
		for i := 0; !done.Load(); i++ {
			if !s.Recovered() {
				continue
			}
			var moves []Move
			for range 1 + r.IntN(8) {
				k, ok := stableKey(r)
				if !ok {
					break
				}
				if r.IntN(3) == 0 {
					k = fmt.Sprintf("c%03d", r.IntN(100)) // maybe absent: skipped
				}
				mv := Move{Key: k}
				if r.IntN(4) != 0 {
					mv.To = at(r.IntN(600))
				}
				moves = append(moves, mv)
			}
			if err := s.ApplyMoves(moves, at(0)); err != nil {
				fail(err)
				return
			}
			if i%50 == 49 {
				if err := s.RebuildIndexes(at(0)); err != nil {
					fail(err)
					return
				}
			}
		}
	}()
	// Writer B: stable b keys, and churn keys that come and go.
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(8, 460))
		for i := range n {
			k := fmt.Sprintf("b%05d", i)
			if _, err := s.Get(k); err != nil {
				fail(err)
				return
			}
			if err := s.Set(k, val(at(r.IntN(300)), fmt.Sprint("b", r.IntN(3)))); err != nil {
				fail(err)
				return
			}
			stableB.Store(int64(i + 1))
			c := fmt.Sprintf("c%03d", r.IntN(100))
			var err error
			if r.IntN(2) == 0 {
				err = s.Delete(c)
			} else {
				err = s.Set(c, val(at(r.IntN(300)), fmt.Sprint("b", r.IntN(3))))
			}
			if err != nil {
				fail(err)
				return
			}
		}
	}()
	// Writer A (goka's callback goroutine), with MarkRecovered midway.
	marked := make(chan error, 1)
	r := rand.New(rand.NewPCG(9, 460))
	for i := range n {
		if i == n/4 {
			go func() { marked <- s.MarkRecovered() }()
		}
		k := fmt.Sprintf("a%05d", i)
		_, err := s.Get(k)
		require.NoError(t, err)
		require.NoError(t, s.Set(k, val(at(r.IntN(300)), fmt.Sprint("b", r.IntN(3)))))
		stableA.Store(int64(i + 1))
		// Delete and re-put another churn key in one "callback".
		c := fmt.Sprintf("c%03d", r.IntN(100))
		require.NoError(t, s.Delete(c))
		require.NoError(t, s.Set(c, val(at(r.IntN(300)), "b0")))
	}
	require.NoError(t, <-marked)
	// Writes after the build, so that the filter answers some reads.
	for i := range 200 {
		k := fmt.Sprintf("d%05d", i)
		_, err := s.Get(k)
		require.NoError(t, err)
		require.NoError(t, s.Set(k, val(at(i), "b1")))
		has, err := s.Has(k)
		require.NoError(t, err)
		require.True(t, has, k)
	}
	for stableB.Load() < int64(n) && len(errs) == 0 {
		// let writer B finish
		_, _ = s.Has("a00000")
	}
	done.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	require.NotNil(t, s.filter.Load())
	t.Logf("filter limit %d keys, hits %d", s.filter.Load().limit, s.filterHits.Load())
	table := tableState(t, s)
	var keys []string
	for i := range n {
		keys = append(keys, fmt.Sprintf("a%05d", i), fmt.Sprintf("b%05d", i))
	}
	for i := range 100 {
		keys = append(keys, fmt.Sprintf("c%03d", i))
	}
	for _, k := range keys {
		want, ok := table[k]
		v, err := s.Get(k)
		require.NoError(t, err)
		has, err := s.Has(k)
		require.NoError(t, err)
		require.Equal(t, ok, has, "Has(%s)", k)
		if ok {
			require.Equal(t, want, string(v), "Get(%s)", k)
		} else {
			require.Nil(t, v, "Get(%s)", k)
		}
	}
	checkConsistent(t, s)
	// Moves put due entries the values do not derive: write every record
	// again (each Set replaces its entries by the Indexer's), then the
	// index must be what a rebuild gives.
	for k, v := range table {
		require.NoError(t, s.Set(k, []byte(v)))
	}
	idx := dumpIndexes(t, s)
	require.NoError(t, s.RebuildIndexes(at(0)))
	require.Equal(t, idx, dumpIndexes(t, s), "the index differs from a rebuild from the table")
	require.Positive(t, s.filterHits.Load())
}
