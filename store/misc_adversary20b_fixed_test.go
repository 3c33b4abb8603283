package store

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// Written does not go back across the reopen.
func TestAdv20bWrittenMonotonic(t *testing.T) {
	opts := deferOpts(vfs.NewMem())
	opts.RecoveryL0CompactionThreshold = 16
	opts.MemTableSize = 1 << 20
	s := New("/db", opts)
	require.NoError(t, s.Open())
	defer s.Close()
	pad := strings.Repeat("x", 1000)
	for i := 0; i < 5000; i++ {
		require.NoError(t, s.Set(keyN(i*7919%3000), append(val(at(i%100), "b"), pad...)))
	}
	before, err := s.Written()
	require.NoError(t, err)
	require.NoError(t, s.MarkRecovered())
	require.False(t, s.tuned())
	after, err := s.Written()
	require.NoError(t, err)
	t.Logf("before %+v after %+v", before, after)
	require.GreaterOrEqual(t, after.WAL, before.WAL)
	require.GreaterOrEqual(t, after.Flush, before.Flush)
	require.GreaterOrEqual(t, after.Compaction, before.Compaction)
	m := OpenMemory()
	require.GreaterOrEqual(t, m.Stores, 1)
}

// goka calling MarkRecovered a second time (cancelled recovery, then
// again): OnRecovered once.
func TestAdv20bOnRecoveredOnce(t *testing.T) {
	var n atomic.Int32
	opts := deferOpts(vfs.NewMem())
	opts.RecoveryL0CompactionThreshold = 16
	opts.OnRecovered = func() { n.Add(1) }
	s := New("/db", opts)
	require.NoError(t, s.Open())
	defer s.Close()
	require.NoError(t, s.Set("a", val(at(1), "b")))
	require.NoError(t, s.MarkRecovered())
	require.NoError(t, s.MarkRecovered())
	require.Equal(t, int32(1), n.Load())
}
