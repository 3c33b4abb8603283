//go:build !race

package store

import (
	"fmt"
	"hash/maphash"
	"runtime"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"
)

// Allocation counts: not under the race detector, whose instrumentation
// allocates too.

// TestAdv46BuildPeakMemory: promise 3, transiently (fixed: two passes
// over the keys, counting then adding). buildFilterLocked
// collects every key's 64-bit hash in a growing slice before it builds a
// filter of ~10-12.5 bits a key: a build (every MarkRecovered of a large
// partition, every growth rebuild) allocates several times the filter it
// makes, on top of what iterating the table costs. Measured against a bare
// iteration of the same keys; the build's own allocations are asserted at
// a generous 3x the filter's size (the filter itself plus slack).
func TestAdv46BuildPeakMemory(t *testing.T) {
	s := newMemStore(t, Options{KeyFilter: true}) // no Indexer: a table only (the history group's shape)
	const n = 100_000
	for i := range n {
		require.NoError(t, s.Set(fmt.Sprintf("job-%07d", i), []byte("v")))
	}
	require.NoError(t, s.commitPending())
	s.filterMin = 8
	measure := func(f func() error) uint64 {
		var before, after runtime.MemStats
		s.mu.RLock()
		s.wmu.Lock()
		runtime.GC()
		runtime.ReadMemStats(&before)
		err := f()
		runtime.ReadMemStats(&after)
		s.wmu.Unlock()
		s.mu.RUnlock()
		require.NoError(t, err)
		return after.TotalAlloc - before.TotalAlloc
	}
	iterate := func() error {
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixTable}, UpperBound: []byte{prefixTable + 1}})
		if err != nil {
			return err
		}
		var sink uint64
		for ok := it.First(); ok; ok = it.Next() {
			sink += maphash.Bytes(filterSeed, it.Key()[1:])
		}
		_ = sink
		return it.Close()
	}
	measure(iterate) // warm
	base := measure(iterate)
	// The least of three builds: Pebble's background work allocates too,
	// and only adds.
	build := measure(func() error { return s.buildFilterLocked(false) })
	for range 2 {
		build = min(build, measure(func() error { return s.buildFilterLocked(false) }))
	}
	filterBytes := uint64(len(s.filter.Load().words) * 8)
	own := build - min(build, base)
	t.Logf("%d keys: filter %d bytes (%.1f bits/key); a bare iteration allocated %d bytes, the build %d: %d of its own (%.1f bits/key, %.1fx the filter)",
		n, filterBytes, float64(filterBytes*8)/n, base, build, own, float64(own*8)/n, float64(own)/float64(filterBytes))
	require.LessOrEqual(t, own, 3*filterBytes, "building a filter of %d bytes allocated %d bytes beyond the table scan", filterBytes, own)
}
