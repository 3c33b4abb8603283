package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// adv47ItOpen reports whether the run reader holds an iterator.
func adv47ItOpen(s *Store) bool {
	s.runs.mu.Lock()
	defer s.runs.mu.Unlock()
	return s.runs.it != nil
}

// TestAdversary47HeldTunedLifecycle (held): the run reader's iterator
// opened while a tuned store recovers (batched writes, reads that commit
// them) does not keep MarkRecovered from releasing the gate, reads after
// it see every write, Close with the iterator open reports no
// leaked iterator, and a Get after Close returns ErrClosed.
func TestAdversary47HeldTunedLifecycle(t *testing.T) {
	var logged []string
	var mu sync.Mutex
	s := New("/db", Options{FS: vfs.NewMem(), RunReads: true, KeyFilter: true, RecoveryL0CompactionThreshold: 16,
		Logger: func(f string, a ...any) { mu.Lock(); logged = append(logged, fmt.Sprintf(f, a...)); mu.Unlock() }})
	s.filterMin = 16
	require.NoError(t, s.Open())
	require.True(t, s.tuned())
	keys := adv47Keys(300)
	model := map[string]string{}
	for i, k := range keys {
		require.NoError(t, s.Set(k, []byte("r"+strconv.Itoa(i))))
		model[k] = "r" + strconv.Itoa(i)
	}
	// reads during the recovery, with batched writes ahead of them
	for i, k := range keys[:100] {
		v, err := s.Get(k)
		require.NoError(t, err)
		require.Equal(t, model[k], string(v), k)
		if i%3 == 0 {
			n := keys[i+5]
			require.NoError(t, s.Set(n, []byte("b"+n)))
			model[n] = "b" + n
		}
	}
	require.True(t, adv47ItOpen(s), "the run reader holds an iterator")
	require.NoError(t, s.MarkRecovered())
	require.False(t, s.tuned(), "MarkRecovered did not release the gate; logged: %q", logged)
	hits := s.RunHits()
	for i, k := range keys {
		v, err := s.Get(k)
		require.NoError(t, err)
		require.Equal(t, model[k], string(v), k)
		if i%2 == 0 {
			require.NoError(t, s.Set(k, []byte("a"+k)))
			model[k] = "a" + k
		}
	}
	require.Greater(t, s.RunHits(), hits)
	require.True(t, adv47ItOpen(s))
	require.NoError(t, s.Close(), "Close with the run reader's iterator open")
	_, err := s.Get(keys[299])
	require.ErrorIs(t, err, ErrClosed)
	// and the data survived
	s2 := New("/db", s.opts)
	s2.opts.FS = s.opts.FS
	require.NoError(t, s2.Open())
	defer s2.Close()
	for _, k := range keys {
		v, err := s2.Get(k)
		require.NoError(t, err)
		require.Equal(t, model[k], string(v), k)
	}
}

// TestAdversary47HeldConcurrentOracle (held; run with -race): two readers
// go through the keys in ascending runs while a writer Sets and Deletes
// them, first while the store recovers (batched writes, committed by the
// readers' acquire), then across MarkRecovered (commit, key filter build,
// reopen of a tuned store), then with a key filter that rebuilds itself
// (low filterMin) and CachedKey. Every read must return the value of the
// last write that returned before it began, or of a later one.
func TestAdversary47HeldConcurrentOracle(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { adv47ConcurrentOracle(t, seed) })
	}
}

func adv47ConcurrentOracle(t *testing.T, seed uint64) {
	keys := adv47Keys(400)
	s := New("/db", Options{FS: vfs.NewMem(), RunReads: true, KeyFilter: true, RecoveryL0CompactionThreshold: 8,
		CachedKey: keys[200], MemTableSize: 64 << 10, Logger: quiet})
	s.filterMin = 16
	require.NoError(t, s.Open())
	defer s.Close()
	// op numbers per key: Set n writes "n"; a Delete is recorded in dels.
	var mu sync.Mutex
	done := make([]int, len(keys))
	dels := make([][]int, len(keys))
	for i, k := range keys {
		if i%4 != 3 { // some keys start absent
			require.NoError(t, s.Set(k, []byte("0")))
		} else {
			dels[i] = append(dels[i], 0)
		}
	}
	var stop atomic.Bool
	var failed atomic.Value
	fail := func(err error) {
		failed.CompareAndSwap(nil, err)
		stop.Store(true)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the writer
		defer wg.Done()
		defer stop.Store(true)
		r := rand.New(rand.NewPCG(seed, 1))
		for n := 1; n <= 6000 && !stop.Load(); n++ {
			i := r.IntN(len(keys))
			var err error
			del := r.IntN(5) == 0
			if del {
				mu.Lock()
				dels[i] = append(dels[i], n) // before it: a read may see it at once
				mu.Unlock()
				err = s.Delete(keys[i])
			} else {
				err = s.Set(keys[i], []byte(strconv.Itoa(n)+string(make([]byte, r.IntN(200)))))
			}
			if err != nil {
				fail(err)
				return
			}
			mu.Lock()
			done[i] = n
			mu.Unlock()
			if n == 2000 {
				if err := s.MarkRecovered(); err != nil {
					fail(err)
					return
				}
			}
		}
	}()
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(10+g)))
			for !stop.Load() {
				lo := r.IntN(len(keys))
				for i := lo; i < min(len(keys), lo+20+r.IntN(100)) && !stop.Load(); i++ {
					mu.Lock()
					floor := done[i]
					mu.Unlock()
					got, err := s.Get(keys[i])
					if err != nil {
						fail(err)
						return
					}
					mu.Lock()
					deleted := false
					for _, d := range dels[i] {
						deleted = deleted || d >= floor
					}
					mu.Unlock()
					if got == nil {
						if !deleted {
							fail(fmt.Errorf("key %s read absent; last write before the read: Set %d", keys[i], floor))
						}
						continue
					}
					m, err := strconv.Atoi(string(got[:len(got)-countZeros(got)]))
					if err != nil {
						fail(fmt.Errorf("key %s: %q: %w", keys[i], got, err))
						return
					}
					if m < floor {
						fail(fmt.Errorf("key %s read Set %d; Set/Delete %d returned before the read began", keys[i], m, floor))
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
	require.NotZero(t, s.RunHits())
}

func countZeros(b []byte) int {
	n := 0
	for n < len(b) && b[len(b)-1-n] == 0 {
		n++
	}
	return n
}

// TestAdversary47HeldReadErrorSurfaces (held): with the run reader's
// iterator open over flushed tables and a block cache too small to keep
// them, file reads start failing: every Get either returns the right
// value or an error, never a wrong value or nil for a present key (the
// iterator's error falls back to the point read, whose error the caller
// sees), and the first Get whose block is not held errors as it would
// without RunReads.
func TestAdversary47HeldReadErrorSurfaces(t *testing.T) {
	var failing atomic.Bool
	fs := errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		if failing.Load() && (op.Kind == errorfs.OpFileRead || op.Kind == errorfs.OpFileReadAt) {
			return syscall.EIO
		}
		return nil
	}))
	for _, runs := range []bool{false, true} {
		t.Run(fmt.Sprintf("runs=%v", runs), func(t *testing.T) {
			failing.Store(false)
			s := New(fmt.Sprintf("/db%v", runs), Options{FS: fs, RunReads: runs, CacheSize: 1, Logger: quiet})
			require.NoError(t, s.Open())
			defer func() { failing.Store(false); _ = s.Close() }()
			keys := adv47Keys(3000)
			for _, k := range keys {
				require.NoError(t, s.Set(k, []byte(k+string(make([]byte, 100)))))
			}
			require.NoError(t, s.MarkRecovered())
			require.NoError(t, s.db.Flush())
			adv47Run(t, s, keys[:20])
			failing.Store(true)
			errs := 0
			for _, k := range keys[20:] {
				v, err := s.Get(k)
				if err != nil {
					errs++
					continue
				}
				require.Equal(t, k+string(make([]byte, 100)), string(v), "key %s read wrong while reads fail", k)
			}
			require.NotZero(t, errs, "no Get saw the failing reads")
			failing.Store(false)
			v, err := s.Get(keys[2999])
			require.NoError(t, err)
			require.NotNil(t, v)
		})
	}
}

// TestAdversary47HeldBrokenStore (held): a store broken by a fatal write
// (its WAL on a full disk) answers Get with ErrFatal, with or without the
// run reader holding an iterator, and Close reports it. (Round 47 broke it
// with a failed reopen at the end of a tuned recovery; there is no reopen
// now.)
func TestAdversary47HeldBrokenStore(t *testing.T) {
	var full atomic.Bool
	mem := vfs.NewMem()
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if full.Load() && op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
			return syscall.ENOSPC
		}
		return nil
	}))
	s := New("/db", Options{FS: fs, RunReads: true, Sync: true, RecoveryL0CompactionThreshold: 16, Logger: quiet})
	require.NoError(t, s.Open())
	keys := adv47Keys(50)
	for _, k := range keys {
		require.NoError(t, s.Set(k, []byte(k)))
	}
	require.NoError(t, s.MarkRecovered())
	adv47Run(t, s, keys)
	require.True(t, adv47ItOpen(s))
	full.Store(true)
	err := s.Set(keys[0], []byte("x"))
	require.ErrorIs(t, err, ErrFatal)
	require.True(t, s.broken.Load(), "the failed write broke the store: %v", err)
	_, err = s.Get(keys[49])
	require.True(t, errors.Is(err, ErrFatal), "Get on a broken store: %v", err)
	require.ErrorIs(t, s.Close(), ErrFatal)
	_, err = s.Get(keys[49])
	require.ErrorIs(t, err, ErrClosed)
}

// TestAdversary47IdlePinReleased (fixed): the run reader's iterator pins
// every table file of its moment: once the noted writes after the run
// (fewer than runMaxWrites, as the last chunk of a fan-out leaves them)
// are flushed and compacted, the tables they replaced stayed on disk as
// zombies for as long as the store was not read again (the next dispatch,
// possibly hours later); without RunReads they are deleted at once. The
// iterator is now retired once it has answered no read for runIdle: the
// zombies go within two of it.
func TestAdversary47IdlePinReleased(t *testing.T) {
	for _, runs := range []bool{false, true} {
		s := newMemStore(t, Options{RunReads: runs, MemTableSize: 1 << 20})
		keys := adv47Keys(4000)
		big := make([]byte, 500)
		_, _ = rand.NewChaCha8([32]byte{47}).Read(big) // incompressible
		for _, k := range keys {
			require.NoError(t, s.Set(k, big))
		}
		require.NoError(t, s.MarkRecovered())
		require.NoError(t, s.db.Flush())
		// the last chunk: read a record, write it back grown
		for _, k := range keys[:1000] {
			_, err := s.Get(k)
			require.NoError(t, err)
			require.NoError(t, s.Set(k, append(big, "grown"...)))
		}
		// then the store is idle; Pebble flushes and compacts what it wrote
		require.NoError(t, s.db.Flush())
		require.NoError(t, s.db.Compact(t.Context(), []byte{0}, []byte{0xff}, true))
		m := s.db.Metrics()
		t.Logf("RunReads=%v: zombie tables %d (%d bytes), zombie memtables %d (%d bytes), live tables %d bytes",
			runs, m.Table.ZombieCount, m.Table.ZombieSize, m.MemTable.ZombieCount, m.MemTable.ZombieSize, m.DiskSpaceUsage())
		if runs {
			require.NotZero(t, m.Table.ZombieCount, "the iterator pins the compacted tables while it is open")
		}
		require.Eventually(t, func() bool { return s.db.Metrics().Table.ZombieCount == 0 }, 10*runIdle, 50*time.Millisecond,
			"RunReads=%v: an idle store keeps compacted-away tables on disk", runs)
	}
}
