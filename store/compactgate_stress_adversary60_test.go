package store

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// metricsForTest reads the DB's metrics under the store's lock (nil once
// closed).
func (s *Store) metricsForTest() *pebble.Metrics {
	if err := s.acquireNoCommit(); err != nil {
		return nil
	}
	defer s.mu.RUnlock()
	return s.db.Metrics()
}

// l0ReadAmpForTest is level 0's read amplification as Pebble's write
// stall reads it (the most level-0 tables any one key can be in; Pebble
// does not export it): a sweep over the tables' user key bounds, taken as
// closed ranges (-1 once closed). The sublevel count in Metrics is at
// least this and can pass it: Pebble places each flushed or compacted
// table one sublevel above the highest it overlaps, so tables that do not
// all overlap one key can still stack.
func (s *Store) l0ReadAmpForTest() int {
	if err := s.acquireNoCommit(); err != nil {
		return -1
	}
	defer s.mu.RUnlock()
	levels, err := s.db.SSTables()
	if err != nil || len(levels) == 0 {
		return -1
	}
	type edge struct {
		key []byte
		end bool
	}
	var edges []edge
	for _, t := range levels[0] {
		edges = append(edges, edge{t.Smallest.UserKey, false}, edge{t.Largest.UserKey, true})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := bytes.Compare(a.key, b.key); c != 0 {
			return c
		}
		switch { // at one key, a table starting there counts with one ending there
		case !a.end && b.end:
			return -1
		case a.end && !b.end:
			return 1
		}
		return 0
	})
	amp, open := 0, 0
	for _, e := range edges {
		if e.end {
			open--
			continue
		}
		open++
		amp = max(amp, open)
	}
	return amp
}

// watchdog fails the test with every goroutine's stack if done is not
// closed within d (watchdogScale times d under the race detector). It
// tells stuck from slow only by the bound: keep d well above the test's
// time under load.
func watchdog(t *testing.T, d time.Duration, what string) (done func()) {
	d *= watchdogScale
	ch := make(chan struct{})
	go func() {
		select {
		case <-ch:
		case <-time.After(d):
			buf := make([]byte, 1<<24)
			n := runtime.Stack(buf, true)
			fmt.Fprintf(os.Stderr, "%s: stuck after %v\n%s\n", what, d, buf[:n])
			panic(what + ": stuck")
		}
	}()
	return func() { close(ch) }
}

// Promises 1, 2, 5: for thresholds from 1 to 64 and tiny memtables, three
// writers (random keys: level 0 deepens with every flush), readers,
// iterators, RebuildIndexes (sstable ingestion) and MarkRecovered in the
// middle (or never), then Close racing the writers: nothing stalls for
// good, Close returns, the table and its indexes agree.
func TestAdv60GateStress(t *testing.T) {
	for _, tc := range []struct {
		t        int
		mem      uint64
		deferIdx bool
		mark     bool
	}{
		{1, 64 << 10, true, true}, {2, 64 << 10, false, true}, {3, 32 << 10, true, false},
		{7, 64 << 10, false, false}, {16, 48 << 10, true, true}, {33, 32 << 10, true, false},
		{64, 32 << 10, false, true}, {64, 64 << 10, true, false},
	} {
		t.Run(fmt.Sprintf("t%d-mem%dk-defer%v-mark%v", tc.t, tc.mem>>10, tc.deferIdx, tc.mark), func(t *testing.T) {
			done := watchdog(t, 50*time.Second, t.Name())
			defer done()
			opts := Options{FS: vfs.NewMem(), Indexer: testIndexer, Logger: quiet, DeferIndexOnRecovery: tc.deferIdx,
				RecoveryL0CompactionThreshold: tc.t, MemTableSize: tc.mem}
			s := New("/db", opts)
			require.NoError(t, s.Open())
			require.True(t, s.tuned())
			var (
				wg       sync.WaitGroup
				stop     atomic.Bool
				writes   atomic.Int64
				maxDepth atomic.Int32
				errs     = make(chan error, 16)
			)
			fail := func(err error) {
				if err != nil && !errors.Is(err, ErrClosed) {
					select {
					case errs <- err:
					default:
					}
				}
			}
			pad := make([]byte, 400)
			for w := 0; w < 3; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(tc.t), uint64(w)))
					for i := 0; !stop.Load(); i++ {
						k := keyN(rng.IntN(3000))
						var err error
						if rng.IntN(8) == 0 {
							err = s.Delete(k)
						} else {
							err = s.Set(k, append(val(at(rng.IntN(500)), fmt.Sprint("b", rng.IntN(4))), pad[:rng.IntN(400)]...))
						}
						if errors.Is(err, ErrClosed) {
							return
						}
						fail(err)
						writes.Add(1)
					}
				}(w)
			}
			wg.Add(1)
			go func() { // readers and iterators
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(tc.t), 99))
				for !stop.Load() {
					switch rng.IntN(4) {
					case 0:
						it, err := s.Iterator()
						if err != nil {
							fail(err)
							continue
						}
						for j := 0; j < 50 && it.Next(); j++ {
						}
						time.Sleep(time.Millisecond) // an iterator held across flushes
						it.Release()
					case 1:
						_, err := s.Get(keyN(rng.IntN(3000)))
						fail(err)
					case 2:
						_, err := s.DueUpTo(at(250), Due{}, 100)
						fail(err)
					case 3:
						if m := s.metricsForTest(); m != nil {
							d := m.Levels[0].Sublevels
							for cur := maxDepth.Load(); d > cur && !maxDepth.CompareAndSwap(cur, d); cur = maxDepth.Load() {
							}
						}
					}
				}
			}()
			time.Sleep(1500 * time.Millisecond)
			if !tc.deferIdx {
				fail(s.RebuildIndexes(at(0)))
			}
			time.Sleep(500 * time.Millisecond)
			if tc.mark {
				fail(s.MarkRecovered())
				require.False(t, s.tuned())
			}
			time.Sleep(1500 * time.Millisecond)
			// Close while the writers run.
			closed := make(chan error, 1)
			go func() { closed <- s.Close() }()
			select {
			case err := <-closed:
				require.NoError(t, err)
			case <-time.After(30 * time.Second * watchdogScale):
				t.Fatal("Close hung")
			}
			stop.Store(true)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Errorf("operation failed: %v", err)
			}
			t.Logf("%d writes, deepest level 0 seen: %d sublevels (stop at %d)", writes.Load(), maxDepth.Load(), max(12, 4*tc.t))
			require.Greater(t, writes.Load(), int64(1000/watchdogScale), "the writers made progress")
			// Reopened on the same directory (not empty: not gated).
			s2 := New("/db", opts)
			require.NoError(t, s2.Open())
			require.False(t, s2.tuned())
			if !tc.mark {
				require.NoError(t, s2.MarkRecovered())
			}
			checkConsistent(t, s2)
			require.NoError(t, s2.Close())
		})
	}
}
