package scheduler

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/store"
)

// countingProducer acknowledges every dispatch event at once and counts
// them: the fire path without the transport.
type countingProducer struct{ n atomic.Int64 }

func (p *countingProducer) ProduceSync(_ context.Context, _ string, msgs []Msg) error {
	p.n.Add(int64(len(msgs)))
	return nil
}

// BenchmarkFirePath is one partition store of the 1M-jobs-at-once burst
// (chronos bench --aligned: 12 partitions, so ~84,000 jobs each, every one
// due at the same second), fired by the scheduler's own chunk loop
// (advanceChunk: index scan, record reads, next-fire decisions, encoding,
// the produce call, index moves) on a store on disk, with a producer that
// acknowledges at once. Each iteration fires every job once (they are
// hourly: the next iteration advances an hour). It reports CPU per fire
// and the bytes Pebble wrote per fire (WAL, flushes, compactions) over the
// run. CHRONOS_BENCH_FIREPATH_JOBS sets the jobs (default 84000). A CPU
// profile splits the time by stage (docs/internals.md says how):
//
//	go test -run '^$' -bench FirePath -benchtime 10x -cpuprofile /tmp/fp.pprof ./processors/scheduler/
func BenchmarkFirePath(b *testing.B) {
	n := 84_000
	if v, err := strconv.Atoi(os.Getenv("CHRONOS_BENCH_FIREPATH_JOBS")); err == nil && v > 0 {
		n = v
	}
	s, st, prod := firePathSetup(b, n)
	t0 := firePathT0
	before, err := st.Written()
	require.NoError(b, err)
	ctx := &simCtx{ctx: context.Background(), key: s.shardKeys[0]}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		advanceAll(b, s, ctx, st, t0.Add(time.Duration(i)*time.Hour))
	}
	b.StopTimer()
	fires := prod.n.Load()
	require.Equal(b, int64(b.N*n), fires, "every job fires once an iteration")
	require.Empty(b, ctx.outs, "recurring jobs send no loopbacks")
	after, err := st.Written()
	require.NoError(b, err)
	w := after.Sub(before)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(fires)/1e3, "µs/fire")
	b.ReportMetric(float64(w.WAL)/float64(fires), "WAL-B/fire")
	b.ReportMetric(float64(w.Flush)/float64(fires), "flush-B/fire")
	b.ReportMetric(float64(w.Compaction)/float64(fires), "compact-B/fire")
	b.ReportMetric(0, "ns/op")
}

var firePathT0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// firePathSetup opens partition 0's store of a one-partition scheduler on
// disk and puts n jobs as chronos bench --aligned registers them (every
// hour here, from firePathT0, misfire grace 5m), all due at firePathT0.
func firePathSetup(b *testing.B, n int) (*Scheduler, *store.Store, *countingProducer) {
	s, st, prod := hourlyJobs(b, n, 0)
	due, err := st.DueUpTo(firePathT0, store.Due{}, 0)
	require.NoError(b, err)
	require.Len(b, due, n, "every job due at t0")
	return s, st, prod
}

// hourlyJobs is firePathSetup's partition with n hourly jobs (misfire
// grace 5m), the i-th starting at firePathT0 + i*spread.
func hourlyJobs(b *testing.B, n int, spread time.Duration) (*Scheduler, *store.Store, *countingProducer) {
	prod := &countingProducer{}
	s, st := openPartition(b, Config{ChunkBudget: time.Hour, Producer: prod, Now: func() time.Time { return firePathT0 }})
	for i := range n {
		start := firePathT0.Add(time.Duration(i) * spread)
		job, err := codecs.JobDef{Every: "1h", Start: start.Format(time.RFC3339), MisfireGrace: "5m"}.Validate(codecs.DefaultLimits())
		require.NoError(b, err)
		rec := codecs.JobRecord{Version: uint64(i + 1), Status: codecs.StatusActive, Job: job,
			NotBefore: firePathT0.Add(-time.Minute), CreatedAt: firePathT0.Add(-time.Minute), UpdatedAt: firePathT0.Add(-time.Minute)}
		require.NoError(b, st.Set(fmt.Sprintf("job-%d", i), codecs.EncodeJobRecord(&rec)))
	}
	return s, st, prod
}

// advanceAll runs the chunk loop of an advance to t until nothing is due.
func advanceAll(b *testing.B, s *Scheduler, ctx *simCtx, st *store.Store, t time.Time) {
	cursor := store.Due{}
	for {
		more, last, err := s.advanceChunk(ctx, st, t, cursor, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		if !more {
			return
		}
		cursor = last
	}
}
