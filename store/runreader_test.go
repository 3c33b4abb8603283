package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunReadsModel compares every Get of a store with Options.RunReads
// against a map, over seeded random sequences: ascending runs of reads
// (the run reader's case) with writes of keys behind, at and ahead of the
// cursor between them, reads in random order, deletes, the index writes
// and rebuilds of an indexed store, a recovery's batched writes, reopens,
// flushes; then checks that the iterator answered reads (the test would
// pass without it).
func TestRunReadsModel(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runReadsModel(t, seed) })
	}
}

func runReadsModel(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 99))
	indexed := seed%2 == 1
	opts := Options{Logger: quiet, RunReads: true, MemTableSize: 256 << 10}
	if indexed {
		opts.Indexer = testIndexer
	}
	dir := t.TempDir()
	s := New(dir, opts)
	require.NoError(t, s.Open())
	model := map[string][]byte{}
	keys := make([]string, 600)
	for i := range keys {
		keys[i] = fmt.Sprintf("job-%04d", i*7)
	}
	version := 0
	value := func() []byte {
		version++
		v := val(at(r.IntN(1000)), "")
		return append(v, fmt.Sprintf(" v%d %s", version, make([]byte, r.IntN(300)))...)
	}
	set := func(k string) {
		v := value()
		require.NoError(t, s.Set(k, v))
		model[k] = v
	}
	del := func(k string) {
		require.NoError(t, s.Delete(k))
		delete(model, k)
	}
	check := func(k string) {
		v, err := s.Get(k)
		require.NoError(t, err)
		require.Equal(t, string(model[k]), string(v), "seed %d key %s", seed, k)
	}
	for _, k := range keys[:400] {
		set(k)
	}
	require.NoError(t, s.MarkRecovered())
	hits := s.RunHits()
	for step := range 300 {
		switch op := r.IntN(20); {
		case op < 12: // an ascending run, with writes between its reads
			lo := r.IntN(len(keys))
			run := slices.Clone(keys[lo:min(len(keys), lo+10+r.IntN(200))])
			for i, k := range run {
				check(k)
				if r.IntN(2) == 0 {
					set(k) // as the history writes what it read
				}
				switch w := r.IntN(30); {
				case w == 0 && i+1 < len(run): // the next key, before it is read
					set(run[i+1])
				case w == 1 && i+3 < len(run):
					del(run[i+3])
				case w == 2:
					set(keys[r.IntN(len(keys))])
				case w == 3 && i > 0:
					check(run[i-1]) // back: a point read, the run restarts
				case w == 4:
					check(k) // the same key again
				}
			}
		case op < 15: // reads in random order
			for range 20 {
				check(keys[r.IntN(len(keys))])
			}
		case op == 15 && indexed: // the fan-out's index moves
			k := keys[r.IntN(len(keys))]
			if _, ok := model[k]; ok {
				require.NoError(t, s.ApplyMoves([]Move{{Key: k, To: at(2000 + step)}}, at(0)))
			}
		case op == 16 && indexed:
			require.NoError(t, s.RebuildIndexes(at(0)))
		case op == 17: // a restart: reopened, recovering (batched writes), recovered
			require.NoError(t, s.Close())
			s = New(dir, opts)
			require.NoError(t, s.Open())
			for range r.IntN(100) {
				set(keys[r.IntN(len(keys))])
			}
			lo := r.IntN(len(keys) - 50)
			for _, k := range keys[lo : lo+50] {
				check(k)
			}
			require.NoError(t, s.MarkRecovered())
		case op == 18:
			require.NoError(t, s.db.Flush())
		default:
			for range 30 {
				k := keys[r.IntN(len(keys))]
				if r.IntN(3) == 0 {
					del(k)
				} else {
					set(k)
				}
			}
		}
		if step%50 == 0 {
			hits += s.RunHits()
		}
	}
	for _, k := range keys {
		check(k)
	}
	hits += s.RunHits()
	require.NoError(t, s.Close())
	require.Greater(t, hits, uint64(1000), "the run reader answered too few reads to be tested")
}

// TestRunReadsConcurrent reads ascending runs from two goroutines while a
// third writes the keys ahead of them: a read never returns a value older
// than one whose Set had returned before the read began.
func TestRunReadsConcurrent(t *testing.T) {
	s := New(t.TempDir(), Options{Logger: quiet, RunReads: true, MemTableSize: 256 << 10})
	require.NoError(t, s.Open())
	defer s.Close()
	keys := make([]string, 2000)
	for i := range keys {
		keys[i] = fmt.Sprintf("job-%05d", i)
		require.NoError(t, s.Set(keys[i], []byte("0")))
	}
	require.NoError(t, s.MarkRecovered())
	var mu sync.Mutex
	done := make([]int, len(keys)) // versions whose Set returned
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		for v := 1; v <= 20; v++ {
			for i, k := range keys {
				require.NoError(t, s.Set(k, []byte(fmt.Sprint(v))))
				mu.Lock()
				done[i] = v
				mu.Unlock()
			}
		}
	}()
	for range 2 {
		go func() {
			defer wg.Done()
			for range 15 {
				for i, k := range keys {
					mu.Lock()
					floor := done[i]
					mu.Unlock()
					got, err := s.Get(k)
					require.NoError(t, err)
					var v int
					_, err = fmt.Sscan(string(got), &v)
					require.NoError(t, err)
					require.GreaterOrEqual(t, v, floor, "key %s", k)
				}
			}
		}()
	}
	wg.Wait()
	require.NotZero(t, s.RunHits())
}

// TestRunReadsKeepTheRunThroughReadsBehind: reads of keys behind the
// iterator (an executor's results among a chunk's dispatch events) are
// point reads and do not end the run: the run's own reads still go
// through the iterator, and every read is right.
func TestRunReadsKeepTheRunThroughReadsBehind(t *testing.T) {
	s := New(t.TempDir(), Options{Logger: quiet, RunReads: true})
	require.NoError(t, s.Open())
	defer s.Close()
	keys := make([]string, 3000)
	for i := range keys {
		keys[i] = fmt.Sprintf("job-%05d", i)
		require.NoError(t, s.Set(keys[i], []byte(keys[i])))
	}
	require.NoError(t, s.MarkRecovered())
	r := rand.New(rand.NewPCG(3, 4))
	behind := 0
	for i, k := range keys {
		v, err := s.Get(k)
		require.NoError(t, err)
		require.Equal(t, k, string(v))
		require.NoError(t, s.Set(k, []byte(k+"+")))
		if i > 10 && i%10 == 0 { // a result of a job fired earlier
			b := keys[r.IntN(i)]
			v, err := s.Get(b)
			require.NoError(t, err)
			require.Equal(t, b+"+", string(v))
			require.NoError(t, s.Set(b, []byte(b+"+")))
			behind++
		}
	}
	// The run's reads but the first few (and those after a reopen at
	// runMaxWrites) went through the iterator.
	require.Greater(t, s.RunHits(), uint64(len(keys)*9/10), "%d reads behind", behind)
}
