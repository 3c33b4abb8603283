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
	t0 := time.Now()
	def := codecs.JobDef{Cron: "0 0 1 1 *", Bucket: "big"}
	keys, values := make([]string, n), make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("job-%07d", i)
		values[i] = testenv.PutCommand(keys[i], def)
	}
	for i := 0; i < n; i += 10_000 {
		env.ProduceMany(string(env.Layout.Jobs()), keys[i:min(i+10_000, n)], values[i:min(i+10_000, n)], t0)
	}
	env.WaitApplied()
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
