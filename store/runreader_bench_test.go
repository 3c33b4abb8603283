package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkHistoryReadWrite is the history group's store work for one
// dispatch event: read the job's record, write it back grown, for a
// partition of the 1M burst (83,000 jobs, records of ~150 bytes (a put's change), a 16 MiB
// cache: the history's default share), the reads in ascending runs of a
// fan-out chunk's size as the fan-out sends them. "runs=false" is a point
// read per event, "runs=true" Options.RunReads.
//
//	go test -run '^$' -bench HistoryReadWrite -benchtime 83000x ./store/
func BenchmarkHistoryReadWrite(b *testing.B) {
	const n = 83_000
	const chunk = 25_000
	for _, runs := range []bool{false, true} {
		b.Run(fmt.Sprintf("runs=%v", runs), func(b *testing.B) {
			s := New(b.TempDir(), Options{Logger: quiet, CacheSize: 16 << 20, MemTableSize: 2 << 20,
				BloomBitsPerKey: 10, RunReads: runs})
			require.NoError(b, s.Open())
			b.Cleanup(func() { _ = s.Close() })
			r := rand.New(rand.NewPCG(1, 2))
			keys := make([]string, n)
			value := make([]byte, 150)
			for i := range keys {
				keys[i] = fmt.Sprintf("job-%016x", r.Uint64())
				require.NoError(b, s.Set(keys[i], value))
			}
			require.NoError(b, s.MarkRecovered())
			order := make([]string, 0, b.N)
			for len(order) < b.N {
				perm := r.Perm(n)[:chunk] // a job fires once in a chunk
				c := make([]string, 0, chunk)
				for _, j := range perm {
					c = append(c, keys[j])
				}
				slices.Sort(c)
				order = append(order, c...)
			}
			grown := make([]byte, 250)
			b.ResetTimer()
			for i := range b.N {
				v, err := s.Get(order[i])
				if err != nil || v == nil {
					b.Fatalf("get: %d bytes, %v", len(v), err)
				}
				if err := s.Set(order[i], grown); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(s.RunHits())/float64(b.N), "runhits/op")
		})
	}
}
