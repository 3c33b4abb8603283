//go:build !race

// The race detector allocates for itself: these tests count the
// program's allocations, so they run without it.

package scheduler

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/store"
)

// catchUpJobs opens a partition with cfg and puts n cron jobs firing every
// minute (fire_once) that started 7 days before firePathT0: after the
// outage each walks ~10,080 late times, so a chunk ends after ~10 jobs at
// chunkSteps (100,000), each with one small event.
func catchUpJobs(t *testing.T, cfg Config, n int) (*Scheduler, *store.Store, *countingProducer) {
	prod := &countingProducer{}
	cfg.ChunkBudget, cfg.Producer, cfg.Now = time.Hour, prod, func() time.Time { return firePathT0 }
	s, st := openPartition(t, cfg)
	start := firePathT0.Add(-7 * 24 * time.Hour)
	for i := range n {
		job, err := codecs.JobDef{Cron: "* * * * *", Start: start.Format(time.RFC3339), MisfirePolicy: codecs.MisfireFireOnce, MisfireGrace: "1s"}.Validate(codecs.DefaultLimits())
		require.NoError(t, err)
		rec := codecs.JobRecord{Version: uint64(i + 1), Status: codecs.StatusActive, Job: job,
			NotBefore: start.Add(-time.Minute), CreatedAt: start.Add(-time.Minute), UpdatedAt: start.Add(-time.Minute)}
		require.NoError(t, st.Set(fmt.Sprintf("job-%05d", i), codecs.EncodeJobRecord(&rec)))
	}
	return s, st, prod
}

// chunkAlloc runs `chunks` chunks of an advance to firePathT0 and returns
// the bytes allocated per chunk and the fires sent.
func chunkAlloc(t *testing.T, cfg Config, n, chunks int) (perChunk uint64, fires int64) {
	s, st, prod := catchUpJobs(t, cfg, n)
	ctx := &simCtx{ctx: context.Background(), key: s.shardKeys[0]}
	cursor := store.Due{}
	// one chunk first (warm up caches and the encoder)
	more0, last, err := s.advanceChunk(ctx, st, firePathT0, cursor, nil, nil)
	require.NoError(t, err)
	require.True(t, more0)
	cursor = last
	before := prod.n.Load()
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	for range chunks {
		more, last, err := s.advanceChunk(ctx, st, firePathT0, cursor, nil, nil)
		require.NoError(t, err)
		require.True(t, more)
		cursor = last
	}
	runtime.ReadMemStats(&m1)
	return (m1.TotalAlloc - m0.TotalAlloc) / uint64(chunks), prod.n.Load() - before
}

// TestAdversary40CutChunkReservesChunkBytes: after a week's outage, cron
// jobs (every minute, fire_once) walk ~10,080 late times each, so a chunk
// ends at chunkSteps after 10 jobs (20 small events). The first scan still
// finds more than 4,096 due entries, so since a8a8190/59359a7 every such
// chunk reserves min(--fanout-chunk, --fanout-chunk-bytes/128) moves and
// events up front: with --fanout-chunk 1000000 --fanout-chunk-bytes 1GiB
// (both in range, docs/configuration.md) 128.8 MB allocated and zeroed per
// 10-job chunk; 0.8 MB at cf0d9bc. Fixed: a chunk's slices start at its
// first scan's size and are kept in pools for the next chunk.
func TestAdversary40CutChunkReservesChunkBytes(t *testing.T) {
	const chunks = 5
	per, fires := chunkAlloc(t, Config{ChunkSize: 1_000_000, ChunkBytes: 1 << 30}, 5000, chunks)
	t.Logf("--fanout-chunk 1000000 --fanout-chunk-bytes 1GiB: %d chunks, %d fires, %.1f MB allocated per chunk (%.0f KB per fire)",
		chunks, fires, float64(per)/1e6, float64(per)*float64(chunks)/float64(fires)/1e3)
	require.LessOrEqual(t, fires, int64(chunks*20), "chunks end at chunkSteps after ~10 jobs")
	require.Less(t, per, uint64(16<<20), "a chunk of ~10 small events allocates %d bytes", per)
}

// TestAdversary40CutChunkReservesDefault is the same with the default
// flags: 25,000 x 128 bytes = 3.2 MB more per 10-job chunk (4.00 MB
// against 0.79 MB at cf0d9bc).
func TestAdversary40CutChunkReservesDefault(t *testing.T) {
	const chunks = 20
	per, fires := chunkAlloc(t, Config{}, 5000, chunks)
	t.Logf("default flags: %d chunks, %d fires, %.2f MB allocated per chunk (%.1f KB per fire)",
		chunks, fires, float64(per)/1e6, float64(per)*float64(chunks)/float64(fires)/1e3)
	require.LessOrEqual(t, fires, int64(chunks*20), "chunks end at chunkSteps after ~10 jobs")
	require.Less(t, per, uint64(2<<20), "a chunk of ~10 small events allocates %d bytes", per)
}

// TestAdversary40PayloadChunkReserves: payload-heavy jobs (the memory
// table's worst case, docs/configuration.md#memory: --fanout-chunk-bytes
// of events plus 64 records per partition) with --fanout-chunk 65536: a
// chunk of 8 MiB of events (~128 jobs of 64 KB) reserves another 8 MiB of
// moves and events headers it never uses (31.2 MB allocated for the chunk
// against 22.9 MB at cf0d9bc).
func TestAdversary40PayloadChunkReserves(t *testing.T) {
	prod := &countingProducer{}
	cfg := Config{ChunkSize: 65536, ChunkBudget: time.Hour, Producer: prod, Now: func() time.Time { return firePathT0 }}
	s, st := openPartition(t, cfg)
	payload := []byte(`"` + fmt.Sprintf("%060000d", 0) + `"`)
	for i := range 4200 {
		job, err := codecs.JobDef{Every: "1h", Start: firePathT0.Format(time.RFC3339), MisfireGrace: "5m", Payload: payload}.Validate(codecs.DefaultLimits())
		require.NoError(t, err)
		rec := codecs.JobRecord{Version: uint64(i + 1), Status: codecs.StatusActive, Job: job,
			NotBefore: firePathT0.Add(-time.Minute), CreatedAt: firePathT0.Add(-time.Minute), UpdatedAt: firePathT0.Add(-time.Minute)}
		require.NoError(t, st.Set(fmt.Sprintf("job-%05d", i), codecs.EncodeJobRecord(&rec)))
	}
	ctx := &simCtx{ctx: context.Background(), key: s.shardKeys[0]}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	more, _, err := s.advanceChunk(ctx, st, firePathT0, store.Due{}, nil, nil)
	runtime.ReadMemStats(&m1)
	require.NoError(t, err)
	require.True(t, more)
	per := m1.TotalAlloc - m0.TotalAlloc
	fires := prod.n.Load()
	t.Logf("payload 60 KB, --fanout-chunk 65536: one chunk, %d fires, %.1f MB allocated (events alone ~%.1f MB)", fires, float64(per)/1e6, float64(fires)*60e3/1e6)
	require.Less(t, per, uint64(25e6), "allocated %d bytes for %d fires of 60 KB", per, fires)
}
