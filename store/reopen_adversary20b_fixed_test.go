package store

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// manifestFailFS fails pebble's open of its MANIFEST while fail is set:
// the reopen of untune fails, nothing else does (no flushes below).
func manifestFailFS(fail *atomic.Bool) vfs.FS {
	return errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		if fail.Load() && op.Kind == errorfs.OpOpen && strings.Contains(op.Path, "MANIFEST") {
			return syscall.EIO
		}
		return nil
	}))
}

// A failed reopen: MarkRecovered returns ErrFatal, OnFatal is called once,
// later calls fail with ErrFatal and Close returns.
func TestAdv20bFailedReopenIsFatal(t *testing.T) {
	var fail atomic.Bool
	var fatals atomic.Int32
	opts := deferOpts(manifestFailFS(&fail))
	opts.RecoveryL0CompactionThreshold = 16
	opts.OnFatal = func(error) { fatals.Add(1) }
	s := New("/db", opts)
	require.NoError(t, s.Open())
	require.True(t, s.tuned)
	for i := 0; i < 10; i++ {
		require.NoError(t, s.Set(keyN(i), val(at(i), "b")))
		require.NoError(t, s.SetOffset(int64(i)))
	}
	fail.Store(true)
	err := s.MarkRecovered()
	require.ErrorIs(t, err, ErrFatal)
	require.Equal(t, int32(1), fatals.Load())
	_, err = s.Get(keyN(1))
	require.ErrorIs(t, err, ErrFatal)
	_, err = s.Written()
	require.ErrorIs(t, err, ErrFatal)
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		require.ErrorIs(t, err, ErrFatal)
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs after a failed reopen")
	}
	require.Equal(t, int32(1), fatals.Load())
}

// OnFatal of a failed reopen is called with s.mu held for writing (untune
// calls it before its deferred Unlock), unlike recoverFatal, which every
// write method defers "after the unlock". An OnFatal that looks at the
// store (its metrics, Written, or a Get to log what it holds) deadlocks
// MarkRecovered, and with it goka's partition and every later caller.
func TestAdv20bOnFatalOfFailedReopenDeadlocks(t *testing.T) {
	var fail atomic.Bool
	opts := deferOpts(manifestFailFS(&fail))
	opts.RecoveryL0CompactionThreshold = 16
	var s *Store
	var inFatal atomic.Bool
	opts.OnFatal = func(err error) {
		inFatal.Store(true)
		// e.g. report what the store wrote before it failed
		_, werr := s.Written()
		_ = fmt.Sprint(err, werr)
	}
	s = New("/db", opts)
	require.NoError(t, s.Open())
	require.True(t, s.tuned)
	for i := 0; i < 10; i++ {
		require.NoError(t, s.Set(keyN(i), val(at(i), "b")))
	}
	fail.Store(true)
	done := make(chan error, 1)
	go func() { done <- s.MarkRecovered() }()
	select {
	case err := <-done:
		require.True(t, errors.Is(err, ErrFatal), "got %v", err)
	case <-time.After(5 * time.Second):
		t.Fatalf("MarkRecovered hangs: OnFatal (called: %v) waits on s.mu, which untune holds", inFatal.Load())
	}
}
