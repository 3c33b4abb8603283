package store

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// A disk that fills up at the end of a recovery (unsynced writes, the
// default). Round 20b: the reopen's Close had to write the WAL tail. There
// is no reopen now (the compaction gate is released on the same DB), so
// the full disk is met by the next write that reaches it, at the latest
// Close's sync of the WAL. Promise: no crash, no hang, and the failure is
// reported (MarkRecovered's ErrFatal, or Close's error), with OnFatal at
// most once.
func TestAdv20bFullDiskAtReopen(t *testing.T) {
	var full atomic.Bool
	fs := errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		if full.Load() && op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
			return syscall.ENOSPC
		}
		return nil
	}))
	var fatals atomic.Int32
	opts := Options{FS: fs, Logger: quiet, RecoveryL0CompactionThreshold: 16, OnFatal: func(error) { fatals.Add(1) }}
	s := New("/db", opts)
	require.NoError(t, s.Open())
	require.True(t, s.tuned())
	for i := 0; i < 100; i++ {
		require.NoError(t, s.Set(fmt.Sprintf("k%03d", i), []byte("v")))
		require.NoError(t, s.SetOffset(int64(i)))
	}
	full.Store(true)
	done := make(chan error, 1)
	go func() { done <- s.MarkRecovered() }()
	select {
	case err := <-done:
		t.Logf("MarkRecovered: %v", err)
		if err != nil {
			require.ErrorIs(t, err, ErrFatal)
		}
	case <-time.After(10 * time.Second * watchdogScale):
		t.Fatal("MarkRecovered hangs on a full disk")
	}
	require.LessOrEqual(t, fatals.Load(), int32(1))
	cl := make(chan error, 1)
	go func() { cl <- s.Close() }()
	select {
	case err := <-cl:
		require.ErrorIs(t, err, syscall.ENOSPC, "Close syncs the WAL on the full disk")
	case <-time.After(10 * time.Second * watchdogScale):
		t.Fatal("Close hangs")
	}
}
