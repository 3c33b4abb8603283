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

// manifestFailFS fails pebble's open of its MANIFEST while fail is set.
func manifestFailFS(fail *atomic.Bool) vfs.FS {
	return errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		if fail.Load() && op.Kind == errorfs.OpOpen && strings.Contains(op.Path, "MANIFEST") {
			return syscall.EIO
		}
		return nil
	}))
}

// Round 20b found a failed reopen at the end of a tuned recovery (ErrFatal,
// and an OnFatal that used the store deadlocked MarkRecovered). The end of
// the recovery no longer reopens the DB (the compaction gate is released
// on the same DB): with every open of a MANIFEST failing from then on,
// MarkRecovered succeeds, OnFatal is never called, and the store reads,
// writes and closes.
func TestAdv20bRecoveryEndOpensNothing(t *testing.T) {
	var fail atomic.Bool
	var fatals atomic.Int32
	opts := deferOpts(manifestFailFS(&fail))
	opts.RecoveryL0CompactionThreshold = 16
	var s *Store
	opts.OnFatal = func(err error) {
		fatals.Add(1)
		_, werr := s.Written() // an OnFatal that looks at the store
		_ = fmt.Sprint(err, werr)
	}
	s = New("/db", opts)
	require.NoError(t, s.Open())
	require.True(t, s.tuned())
	for i := 0; i < 10; i++ {
		require.NoError(t, s.Set(keyN(i), val(at(i), "b")))
		require.NoError(t, s.SetOffset(int64(i)))
	}
	fail.Store(true)
	done := make(chan error, 1)
	go func() { done <- s.MarkRecovered() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second * watchdogScale):
		t.Fatal("MarkRecovered hangs")
	}
	require.False(t, s.tuned())
	require.Zero(t, fatals.Load())
	v, err := s.Get(keyN(1))
	require.NoError(t, err)
	require.Equal(t, val(at(1), "b"), v)
	require.NoError(t, s.Set(keyN(11), val(at(11), "b")))
	_, err = s.Written()
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.False(t, errors.Is(nil, ErrFatal))
}
