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

// TestFullDiskFailsLoudly: with synced writes, a disk that fills up makes a
// write return ErrFatal (pebble stops on a failed WAL write), reports it
// once through OnFatal, and every later call fails the same way; nothing
// that failed was acknowledged, every acknowledged write is on disk, and
// Close does not crash the process.
func TestFullDiskFailsLoudly(t *testing.T) {
	t.Parallel()
	var full atomic.Bool
	mem := vfs.NewMem()
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if full.Load() && op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
			return syscall.ENOSPC
		}
		return nil
	}))
	var fatals atomic.Int32
	s := New("db", Options{FS: fs, Sync: true, Logger: func(string, ...any) {}, OnFatal: func(error) { fatals.Add(1) }})
	require.NoError(t, s.Open())
	for i := 0; i < 50; i++ {
		require.NoError(t, s.Set(fmt.Sprintf("k%02d", i), []byte("v")))
	}
	full.Store(true)
	err := s.Set("k50", []byte("v"))
	require.ErrorIs(t, err, ErrFatal)
	require.ErrorContains(t, err, "no space left on device")
	require.ErrorIs(t, s.Set("k51", []byte("v")), ErrFatal)
	_, err = s.Get("k00")
	require.ErrorIs(t, err, ErrFatal)
	require.ErrorIs(t, s.ApplyMoves([]Move{{Key: "k00"}}, time.Time{}), ErrFatal)
	require.Equal(t, int32(1), fatals.Load(), "reported once")
	require.ErrorIs(t, s.Close(), ErrFatal)

	// The acknowledged writes are on the disk: a copy of the files as they
	// are opens with all of them (the real recovery is a process restart).
	full.Store(false)
	clone := vfs.NewMem()
	_, err = vfs.Clone(mem, clone, "db", "db")
	require.NoError(t, err)
	s2 := New("db", Options{FS: clone, Sync: true})
	require.NoError(t, s2.Open())
	t.Cleanup(func() { _ = s2.Close() })
	for i := 0; i < 50; i++ {
		v, err := s2.Get(fmt.Sprintf("k%02d", i))
		require.NoError(t, err)
		require.Equal(t, []byte("v"), v, "acknowledged write k%02d lost", i)
	}
	require.NoError(t, s2.Set("after", []byte("ok")))
}
