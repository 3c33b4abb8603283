package scheduler

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/store"
	"github.com/chronos-scheduler/chronos/topology"
)

// BenchmarkRecordPath is the store's share of a registered or a recovered
// job: 84,000 job records (one partition of 1M jobs) written into an
// empty partition store on disk with the scheduler's indexer, the way a
// put's table write or goka's changelog replay writes them (Set and
// SetOffset per record), then MarkRecovered. "indexed" maintains the
// indexes record by record (the scheduler's stores today); "deferred"
// writes the table only and indexes it in one pass in MarkRecovered
// (store.Options.DeferIndexOnRecovery, the view's stores). It reports
// µs of wall time and bytes Pebble wrote per record; the decode, the
// broker and goka's own work are not in it.
//
//	go test -run '^$' -bench RecordPath -benchtime 3x ./processors/scheduler/
func BenchmarkRecordPath(b *testing.B) {
	for _, deferred := range []bool{false, true} {
		name := map[bool]string{false: "indexed", true: "deferred"}[deferred]
		b.Run(name, func(b *testing.B) {
			const n = 84_000
			job, err := codecs.JobDef{Every: "1h", Start: firePathT0.Format(time.RFC3339), MisfireGrace: "5m"}.Validate(codecs.DefaultLimits())
			require.NoError(b, err)
			values := make([][]byte, n)
			for i := range values {
				rec := codecs.JobRecord{Version: uint64(i + 1), Status: codecs.StatusActive, Job: job,
					NotBefore: firePathT0.Add(-time.Minute), CreatedAt: firePathT0, UpdatedAt: firePathT0}
				values[i] = codecs.EncodeJobRecord(&rec)
			}
			var w store.Writes
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				s, err := New(Config{Layout: topology.Layout{Names: topology.Names{Prefix: "rp."}, Partitions: 1, Replication: 1},
					DataDir: b.TempDir(), Store: store.Options{DeferIndexOnRecovery: deferred}, Producer: &countingProducer{},
					Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
				require.NoError(b, err)
				gst, err := s.StorageBuilder()(string(s.cfg.Layout.SchedulerTable()), 0)
				require.NoError(b, err)
				require.NoError(b, gst.Open())
				st := s.Store(0)
				b.StartTimer()
				for i, v := range values {
					if err := gst.Set(fmt.Sprintf("job-%d", i), v); err != nil {
						b.Fatal(err)
					}
					if err := gst.SetOffset(int64(i)); err != nil {
						b.Fatal(err)
					}
				}
				require.NoError(b, gst.MarkRecovered())
				b.StopTimer()
				got, err := st.Written()
				require.NoError(b, err)
				w = store.Writes{WAL: w.WAL + got.WAL, Flush: w.Flush + got.Flush, Compaction: w.Compaction + got.Compaction}
				due, err := st.DueUpTo(firePathT0, store.Due{}, 0)
				require.NoError(b, err)
				require.Len(b, due, n, "every record indexed")
				require.NoError(b, gst.Close())
				b.StartTimer()
			}
			recs := float64(b.N * n)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/recs/1e3, "µs/record")
			b.ReportMetric(float64(w.WAL)/recs, "WAL-B/record")
			b.ReportMetric(float64(w.Flush)/recs, "flush-B/record")
			b.ReportMetric(float64(w.Compaction)/recs, "compact-B/record")
			b.ReportMetric(0, "ns/op")
		})
	}
}
