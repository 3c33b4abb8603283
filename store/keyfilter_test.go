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

// TestKeyFilterNoFalseNegatives: every key added is reported as maybe
// there, and keys never added mostly are not (about 1% at capacity).
func TestKeyFilterNoFalseNegatives(t *testing.T) {
	const n = 50_000
	f := newKeyFilter(n, filterMinKeys)
	for i := range n {
		f.add(filterHash(fmt.Sprintf("job-%d", i)))
	}
	for i := range n {
		require.True(t, f.mayContain(filterHash(fmt.Sprintf("job-%d", i))), "job-%d added, reported absent", i)
	}
	fp := 0
	for i := range n {
		if f.mayContain(filterHash(fmt.Sprintf("other-%d", i))) {
			fp++
		}
	}
	require.Less(t, float64(fp)/n, 0.03, "false positives at capacity: %d of %d", fp, n)
	require.Greater(t, f.keys, n*99/100, "keys counted")
}

// TestKeyFilterStoreMatchesModel runs seeded random histories of Set,
// Delete, Get, Has, restarts (a clean Close and Open, and an Open after
// the files were copied mid-write, as a crash leaves them) and recoveries
// (a fresh store written through the recovery's batches) against a map,
// with the filter's smallest size lowered so that it fills and is rebuilt
// many times: every read answers what the map holds, and the filter
// answered some of them (the test would pass vacuously without it).
func TestKeyFilterStoreMatchesModel(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 8
	}
	var hits, rebuilds uint64
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 99))
		fs := vfs.NewCrashableMem()
		opts := Options{FS: fs, Logger: quiet, Indexer: testIndexer, KeyFilter: true, DeferIndexOnRecovery: seed%2 == 0}
		open := func() *Store {
			s := New("/db", opts)
			s.filterMin = 8
			require.NoError(t, s.Open())
			return s
		}
		s := open()
		model := map[string][]byte{}
		keys := func() string { return fmt.Sprintf("k%03d", r.IntN(400)) }
		recovered := false
		var last *keyFilter
		for op := range 3000 {
			if !recovered && (op > 50 || r.IntN(10) == 0) {
				require.NoError(t, s.MarkRecovered())
				recovered = true
			}
			if f := s.filter.Load(); f != last {
				rebuilds++
				last = f
			}
			switch k := keys(); r.IntN(20) {
			case 0, 1, 2, 3, 4, 5, 6:
				v := val(at(r.IntN(1000)), fmt.Sprint("b", r.IntN(3)))
				if r.IntN(2) == 0 {
					// As a callback writes a new job: Get first.
					_, err := s.Get(k)
					require.NoError(t, err)
				}
				require.NoError(t, s.Set(k, v))
				model[k] = v
			case 7, 8:
				require.NoError(t, s.Delete(k))
				delete(model, k)
			case 9:
				has, err := s.Has(k)
				require.NoError(t, err)
				_, want := model[k]
				require.Equal(t, want, has, "seed %d op %d: Has(%s)", seed, op, k)
			case 10:
				if recovered && r.IntN(30) == 0 {
					hits += s.filterHits.Load()
					require.NoError(t, s.Close())
					if r.IntN(2) == 0 {
						// The files as a crash leaves them: a new owner's
						// recovery starts from what was synced.
						fs = fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
						opts.FS = fs
					}
					s = open()
					recovered = false
					last = nil
					// What the store holds now is the model (the clean
					// close synced everything; a crash clone of a closed
					// store too).
				}
			default:
				got, err := s.Get(k)
				require.NoError(t, err)
				require.Equal(t, model[k], got, "seed %d op %d: Get(%s)", seed, op, k)
			}
		}
		// Every key, and the index the Sets built, as the model says.
		require.NoError(t, s.MarkRecovered())
		for i := range 400 {
			k := fmt.Sprintf("k%03d", i)
			got, err := s.Get(k)
			require.NoError(t, err)
			require.Equal(t, model[k], got, "seed %d: final Get(%s)", seed, k)
		}
		require.NoError(t, s.RebuildIndexes(at(0)))
		hits += s.filterHits.Load()
		require.NoError(t, s.Close())
	}
	require.Positive(t, hits, "the filter answered no read")
	require.Greater(t, rebuilds, uint64(seeds), "the filter was never rebuilt larger")
}

// TestKeyFilterConcurrentReaders: readers (an HTTP view's) reading keys a
// writer has finished writing, while the writer adds new ones and the
// filter is rebuilt larger again and again, always find them.
func TestKeyFilterConcurrentReaders(t *testing.T) {
	s := New("/db", Options{FS: vfs.NewMem(), Logger: quiet, Indexer: testIndexer, KeyFilter: true})
	s.filterMin = 8
	require.NoError(t, s.Open())
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.MarkRecovered())
	n := 20_000
	if testing.Short() {
		n = 4_000
	}
	var written atomic.Int64 // keys 0..written-1 are in the table
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for written.Load() < int64(n) {
				w := written.Load()
				if w == 0 {
					continue
				}
				k := fmt.Sprintf("job-%d", r.Int64N(w))
				v, err := s.Get(k)
				if err == nil && v == nil {
					err = fmt.Errorf("%s was written, Get found nothing", k)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range n {
		k := fmt.Sprintf("job-%d", i)
		v, err := s.Get(k)
		require.NoError(t, err)
		require.Nil(t, v)
		require.NoError(t, s.Set(k, val(at(i), "")))
		written.Store(int64(i + 1))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	require.Positive(t, s.filterHits.Load())
	require.GreaterOrEqual(t, s.filter.Load().limit, n, "grown to hold every key")
}

// TestKeyFilterSizedByTheRecovery: a store fresh at Open sizes the filter
// it builds at MarkRecovered by the recovery's writes, in one pass (one
// filter allocated), as large as a count would make it when each key was
// written once; when the recovery wrote its keys many times over, or the
// store was not fresh, it builds by count (never more than four times the
// filter the table needs), and every key is in the filter either way.
func TestKeyFilterSizedByTheRecovery(t *testing.T) {
	const keys = 3000
	for _, tc := range []struct {
		name            string
		writes          int // each key's writes during the recovery
		reopen          bool
		wantAllocs      int
		wantCounts      int
		wantLimitAtMost int
	}{
		{"each key once", 1, false, 1, 0, keys + keys/4},
		{"each key ten times", 10, false, 2, 0, keys + keys/4}, // built again by the pass's count (round 65)
		{"not fresh", 1, true, 1, 1, keys + keys/4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			opts := Options{FS: fs, Logger: quiet, Indexer: testIndexer, KeyFilter: true, DeferIndexOnRecovery: true}
			s := New("/db", opts)
			s.filterMin = 8
			require.NoError(t, s.Open())
			for w := range tc.writes {
				for i := range keys {
					require.NoError(t, s.Set(fmt.Sprintf("job-%05d", i), []byte(fmt.Sprintf("v%d", w))))
				}
			}
			if tc.reopen {
				require.NoError(t, s.Close())
				s = New("/db", opts)
				s.filterMin = 8
				require.NoError(t, s.Open())
			}
			allocs, counts := 0, 0
			s.onFilterAlloc = func(*keyFilter) { allocs++ }
			s.onFilterCount = func() { counts++ }
			require.NoError(t, s.MarkRecovered())
			defer s.Close()
			f := s.filter.Load()
			require.NotNil(t, f)
			require.Equal(t, tc.wantAllocs, allocs, "filters allocated")
			require.Equal(t, tc.wantCounts, counts, "passes that only count the keys")
			require.LessOrEqual(t, f.limit, tc.wantLimitAtMost)
			require.GreaterOrEqual(t, f.limit, keys, "room for every key")
			for i := range keys {
				require.True(t, f.mayContain(filterHash(fmt.Sprintf("job-%05d", i))), "job-%05d", i)
			}
		})
	}
}

// TestFilterGrowsInOnePass: a filter that fills with new keys is rebuilt
// at twice the table's size from one pass over the table, sized by the
// keys it saw, with no pass that only counts; the rebuilt filter holds
// every key and has room for them. With deletions among the writes the
// table may have shrunk, and a rebuild by deletions counts (or an estimate
// four times too large is counted again): every key still in the table
// stays in the filter either way.
func TestFilterGrowsInOnePass(t *testing.T) {
	for _, deletes := range []bool{false, true} {
		t.Run(fmt.Sprintf("deletes=%v", deletes), func(t *testing.T) {
			opts := Options{FS: vfs.NewMem(), Logger: quiet, Indexer: testIndexer, KeyFilter: true, DeferIndexOnRecovery: true}
			s := New("/db", opts)
			s.filterMin = 8
			require.NoError(t, s.Open())
			defer s.Close()
			require.NoError(t, s.MarkRecovered())
			allocs, counts := 0, 0
			s.onFilterAlloc = func(*keyFilter) { allocs++ }
			s.onFilterCount = func() { counts++ }
			const keys = 5000
			live := map[int]bool{}
			for i := range keys {
				require.NoError(t, s.Set(fmt.Sprintf("job-%05d", i), []byte("v")))
				live[i] = true
				if deletes && i%3 == 2 {
					require.NoError(t, s.Delete(fmt.Sprintf("job-%05d", i-1)))
					delete(live, i-1)
				}
			}
			f := s.filter.Load()
			require.NotNil(t, f)
			require.GreaterOrEqual(t, allocs, 8, "the filter grew from 8 keys by rebuilds")
			if !deletes {
				require.Zero(t, counts, "a rebuild of a filter that filled with new keys counts no keys")
			}
			require.GreaterOrEqual(t, f.limit, len(live), "room for every key")
			require.LessOrEqual(t, f.limit, 4*(keys+keys/4), "at most four times what the table needs")
			for i := range live {
				require.True(t, f.mayContain(filterHash(fmt.Sprintf("job-%05d", i))), "job-%05d", i)
			}
			t.Logf("%d filters allocated, %d counting passes, limit %d for %d keys", allocs, counts, f.limit, len(live))
		})
	}
}
