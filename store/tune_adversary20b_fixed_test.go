package store

import (
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// Open takes a directory it cannot list for an empty one (names, _ :=
// fs.List): one failed readdir (EIO) tunes a store that holds data.
func TestAdv20bUnlistableNonEmptyDirIsTuned(t *testing.T) {
	var failOnce atomic.Bool
	mem := vfs.NewMem()
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpList && failOnce.CompareAndSwap(true, false) {
			return syscall.EIO
		}
		return nil
	}))
	opts := deferOpts(fs)
	opts.RecoveryL0CompactionThreshold = 16
	s := New("/db", opts)
	require.NoError(t, s.Open())
	require.NoError(t, s.Set("a", val(at(1), "b")))
	require.NoError(t, s.MarkRecovered())
	require.NoError(t, s.Close())

	failOnce.Store(true)
	s = New("/db", opts)
	require.NoError(t, s.Open())
	defer s.Close()
	v, err := s.Get("a")
	require.NoError(t, err)
	require.NotNil(t, v, "the store holds data")
	require.False(t, s.tuned(), "a store opened on a non-empty directory is never tuned")
}

// Concurrent callers while MarkRecovered reopens the DB.
func TestAdv20bConcurrentCallersDuringReopen(t *testing.T) {
	for round := 0; round < 20; round++ {
		opts := deferOpts(vfs.NewMem())
		opts.RecoveryL0CompactionThreshold = 16
		s := New("/db", opts)
		require.NoError(t, s.Open())
		for i := 0; i < 200; i++ {
			require.NoError(t, s.Set(keyN(i), val(at(i), "b")))
			require.NoError(t, s.SetOffset(int64(i)))
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		errs := make(chan error, 100)
		run := func(f func() error) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if err := f(); err != nil {
						select {
						case errs <- err:
						default:
						}
						return
					}
				}
			}()
		}
		run(func() error { _, err := s.Get(keyN(3)); return err })
		run(func() error { _, err := s.Written(); return err })
		run(func() error { OpenMemory(); return nil })
		run(func() error { _, err := s.GetOffset(-1); return err })
		run(func() error { _, err := s.DueUpTo(at(100), Due{}, 10); return err })
		run(func() error {
			it, err := s.Iterator()
			if err != nil {
				return err
			}
			it.Next()
			it.Release()
			return nil
		})
		n := 200
		run(func() error {
			n++
			return s.Set(keyN(n), val(at(n%300), "b"))
		})
		time.Sleep(2 * time.Millisecond)
		require.NoError(t, s.MarkRecovered())
		time.Sleep(5 * time.Millisecond)
		close(stop)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("round %d: %v", round, err)
		}
		checkConsistent(t, s)
		require.NoError(t, s.Close())
	}
}
