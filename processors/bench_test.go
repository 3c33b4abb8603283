package processors_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
)

// BenchmarkBucketTrigger measures one bucket trigger fanning out to every
// job of a bucket spread over 12 partitions, from the trigger's produce to
// the last distinct fire_id received. CHRONOS_BENCH_BUCKET_JOBS sets the
// bucket size (default 100000).
//
//	go test -run '^$' -bench BucketTrigger -benchtime 3x ./processors/
func BenchmarkBucketTrigger(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("CHRONOS_BENCH_BUCKET_JOBS")); err == nil && v > 0 {
		n = v
	}
	env := testenv.New(b, 12)
	env.Start(env.Config())
	putJobs(env, n, codecs.JobDef{Cron: "0 0 1 1 *", Bucket: "big"}, time.Now())
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		trig, err := codecs.EncodeBucketTrigger(codecs.BucketTrigger{Bucket: "big", TriggerID: fmt.Sprint("run-", i)})
		require.NoError(b, err)
		env.Produce(string(env.Layout.BucketTriggers()), "big", trig, time.Now())
		dispatch.WaitLen(b, (i+1)*n, 10*time.Minute)
	}
	b.StopTimer()
	seen := map[string]bool{}
	for _, d := range dispatch.Dispatches(b) {
		seen[d.FireID] = true
	}
	require.Len(b, seen, b.N*n, "distinct fire ids")
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "fires/s")
}

// BenchmarkAdvanceFanOut measures one "advance to T" that makes every job
// of a shard set due: N every-second jobs over 12 partitions, one simulated
// tick per iteration, from the tick's produce to the last fire received.
// CHRONOS_BENCH_ADVANCE_JOBS sets N (default 50000).
//
//	go test -run '^$' -bench AdvanceFanOut -benchtime 5x ./processors/
func BenchmarkAdvanceFanOut(b *testing.B) {
	n := 50_000
	if v, err := strconv.Atoi(os.Getenv("CHRONOS_BENCH_ADVANCE_JOBS")); err == nil && v > 0 {
		n = v
	}
	env := testenv.New(b, 12)
	env.Start(env.Config())
	t0 := time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	putJobs(env, n, codecs.JobDef{Every: "1s"}, t0)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		env.Tick(t0.Add(time.Duration(i) * time.Second))
		dispatch.WaitLen(b, i*n, 10*time.Minute)
	}
	b.StopTimer()
	require.Equal(b, b.N*n, dispatch.Len(), "one fire per job per second, no duplicates")
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "fires/s")
}

// putJobs registers n jobs job-0000000... with one definition, as of ts, and
// waits until the scheduler applied them.
func putJobs(env *testenv.Env, n int, def codecs.JobDef, ts time.Time) {
	keys, values := make([]string, n), make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("job-%07d", i)
		values[i] = testenv.PutCommand(keys[i], def)
	}
	for i := 0; i < n; i += 10_000 {
		env.ProduceMany(string(env.Layout.Jobs()), keys[i:min(i+10_000, n)], values[i:min(i+10_000, n)], ts)
	}
	env.WaitApplied()
}
