package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkOneFireAdvances is the fan-out's cost per fire in the steady
// state of jobs spread over time (adversary round 38): 3,600 hourly jobs,
// one starting each second, and an advance every second through the
// scheduler's own advanceChunk, so each advance's chunk holds one fire.
// With a range deletion per chunk (before store.ApplyScannedMoves' least
// span) the last 1,000 of 8,000 advances cost 1,190-2,650 µs a fire
// against 200-220 for the first 1,000 (34-38 with point deletions): each
// range deletion made the next scan fragment all of the memtable's again.
// It reports µs a fire over b.N advances; run it long enough to fill a
// memtable:
//
//	go test -run '^$' -bench OneFireAdvances -benchtime 8000x ./processors/scheduler/
func BenchmarkOneFireAdvances(b *testing.B) {
	s, st, prod := hourlyJobs(b, 3600, time.Second)
	ctx := &simCtx{ctx: context.Background(), key: s.shardKeys[0]}
	b.ResetTimer()
	for i := range b.N {
		advanceAll(b, s, ctx, st, firePathT0.Add(time.Duration(i)*time.Second))
	}
	b.StopTimer()
	require.Equal(b, int64(b.N), prod.n.Load(), "one fire an advance")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/fire")
}
