package scheduler

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/store"
)

func TestStaggeredMemTableSizesDiffer(t *testing.T) {
	t.Parallel()
	seen := map[uint64]int32{}
	for p := int32(0); p < 12; p++ {
		size := StaggeredMemTableSize(0, p)
		require.GreaterOrEqual(t, size, uint64(4<<20))
		require.Less(t, size, uint64(8<<20))
		q, dup := seen[size]
		require.False(t, dup, "partitions %d and %d share memtable size %d: their flushes would coincide", q, p, size)
		seen[size] = p
	}
	require.Equal(t, StaggeredMemTableSize(0, 0), StaggeredMemTableSize(0, 12), "the pattern repeats every 12 partitions")
	require.Equal(t, uint64(16<<20), StaggeredMemTableSize(16<<20, 0))
	require.Equal(t, uint64(16<<20+16<<20*11/12), StaggeredMemTableSize(16<<20, 11))
}

func TestMemTableSizeValidated(t *testing.T) {
	t.Parallel()
	for _, m := range []uint64{1, 2 << 30} {
		err := Config{Store: store.Options{MemTableSize: m}}.Validate()
		require.ErrorContains(t, err, "memtable size")
	}
	err := Config{Store: store.Options{MemTableSize: 16 << 20}}.Validate()
	require.NotContains(t, err.Error(), "memtable")
}
