package store

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWrittenCountsWALAndFlushes: Set writes reach the WAL at once and
// the flushed sstables after a Flush; a closed store reports ErrClosed.
func TestWrittenCountsWALAndFlushes(t *testing.T) {
	t.Parallel()
	s := New(t.TempDir(), Options{Indexer: testIndexer, Logger: quiet})
	require.NoError(t, s.Open())
	before, err := s.Written()
	require.NoError(t, err)
	for i := range 1000 {
		require.NoError(t, s.Set(keyN(i), val(at(i), "")))
	}
	mid, err := s.Written()
	require.NoError(t, err)
	require.Greater(t, mid.Sub(before).WAL, uint64(1000*len(keyN(0))), "every Set is logged")
	require.NoError(t, s.db.Flush())
	after, err := s.Written()
	require.NoError(t, err)
	require.Positive(t, after.Sub(mid).Flush, "the flush wrote a table")
	require.Equal(t, after.Sub(before).Total(), after.Sub(before).WAL+after.Sub(before).Flush+after.Sub(before).Compaction)
	require.NoError(t, s.Close())
	_, err = s.Written()
	require.ErrorIs(t, err, ErrClosed)
}
