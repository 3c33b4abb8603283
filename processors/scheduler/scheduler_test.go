package scheduler

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStaggeredMemTableSizesDiffer(t *testing.T) {
	t.Parallel()
	seen := map[uint64]int32{}
	for p := int32(0); p < 12; p++ {
		size := StaggeredMemTableSize(p)
		require.GreaterOrEqual(t, size, uint64(4<<20))
		require.Less(t, size, uint64(8<<20))
		q, dup := seen[size]
		require.False(t, dup, "partitions %d and %d share memtable size %d: their flushes would coincide", q, p, size)
		seen[size] = p
	}
	require.Equal(t, StaggeredMemTableSize(0), StaggeredMemTableSize(12), "the pattern repeats every 12 partitions")
}
