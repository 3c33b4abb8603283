package store

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkRegisterIntoLargeStore is the store's share of registering a
// new job into a partition that already holds many: the put reads the
// job's record (goka's ctx.Value: not found) and writes it with its index
// entries (Set read the key's reverse entry, not found either, until
// 2026-12-04: it now knows from the Get that missed, readcache.go). The store
// holds 833,000 jobs first (one partition of 10M at 12 partitions, ~300
// bytes each, random keys, recovered and indexed like an empty-disk
// recovery), with a 21 MiB block cache (the instance's default 256 MiB
// split over 12 partitions). "bloom=0" is the scheduler's stores today,
// "bloom=10" a filter of 10 bits per key in every table file
// (Options.BloomBitsPerKey, as the history group's stores): both misses
// then skip the files that cannot hold the key.
//
//	go test -run '^$' -bench RegisterIntoLargeStore -benchtime 100000x ./store/
func BenchmarkRegisterIntoLargeStore(b *testing.B) {
	const n = 833_000
	payload := make([]byte, 260)
	for i := range payload {
		payload[i] = 'x'
	}
	value := func(r *rand.Rand) []byte {
		return append(val(at(r.IntN(86400)), ""), payload...)
	}
	for _, bloom := range []int{0, 10} {
		b.Run(fmt.Sprintf("bloom=%d", bloom), func(b *testing.B) {
			s := New(b.TempDir(), Options{Indexer: testIndexer, Logger: quiet, CacheSize: 21 << 20,
				BloomBitsPerKey: bloom, DeferIndexOnRecovery: true})
			require.NoError(b, s.Open())
			b.Cleanup(func() { _ = s.Close() })
			r := rand.New(rand.NewPCG(1, 2))
			for i := range n {
				require.NoError(b, s.Set(fmt.Sprintf("job-%016x", r.Uint64()), value(r)))
				if i%1000 == 0 {
					require.NoError(b, s.SetOffset(int64(i)))
				}
			}
			require.NoError(b, s.MarkRecovered())
			keys := make([]string, b.N)
			vals := make([][]byte, b.N)
			for i := range keys {
				keys[i], vals[i] = fmt.Sprintf("job-%016x", r.Uint64()), value(r)
			}
			b.ResetTimer()
			for i := range b.N {
				v, err := s.Get(keys[i])
				if err != nil || v != nil {
					b.Fatalf("get of a new job: %q, %v", v, err)
				}
				if err := s.Set(keys[i], vals[i]); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e3, "µs/job")
			b.ReportMetric(0, "ns/op")
		})
	}
}
