package scheduler

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestJobsCollectorSpendsAtMostOneFiftiethOfTheTime: scrapes at random
// moments, counts of random durations (a walk of a small table and of 10M
// records). A count is reused while it is younger than 30 s or 50 times
// the duration of the walk that made it, and never beyond that: so the
// walks take at most 1/50 of the time once they take longer than 0.6 s,
// and a scrape never reads counts older than its rule allows.
func TestJobsCollectorSpendsAtMostOneFiftiethOfTheTime(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0))
		clock := time.Unix(1_700_000_000, 0)
		var walks int
		var walking, walkLen time.Duration
		c := &jobsCollector{now: func() time.Time { return clock }, maxAge: 30 * time.Second, spend: 50}
		c.count = func() map[codecs.Status]float64 {
			walks++
			walkLen = time.Duration(rng.Int64N(int64(5 * time.Second))) // 0-5 s
			if rng.IntN(2) == 0 {
				walkLen /= 100 // a small table
			}
			clock = clock.Add(walkLen)
			walking += walkLen
			return map[codecs.Status]float64{codecs.StatusActive: float64(walks)}
		}
		start := clock
		var lastWalk int
		var takenAt time.Time
		var takenLen time.Duration
		for range 2000 {
			clock = clock.Add(time.Duration(rng.Int64N(int64(20 * time.Second))))
			before := clock
			got := collectActive(t, c)
			if walks != lastWalk {
				// A new count: the old one had outlived its rule.
				if lastWalk > 0 {
					require.Greater(t, before.Sub(takenAt), max(30*time.Second, 50*takenLen), "seed %d: recounted early", seed)
				}
				lastWalk, takenAt, takenLen = walks, clock, walkLen
			} else {
				require.LessOrEqual(t, before.Sub(takenAt), max(30*time.Second, 50*takenLen), "seed %d: a count served past its rule", seed)
			}
			require.Equal(t, float64(walks), got, "seed %d: the scrape reads the latest count", seed)
		}
		elapsed := clock.Sub(start)
		require.Greater(t, walks, 10, "seed %d: walks happen", seed)
		// Each walk is followed by at least 50 times its length (or 30 s)
		// before the next, so walking ≤ elapsed/50 plus the last walk.
		require.LessOrEqual(t, walking, elapsed/50+walkLen+30*time.Second/50, "seed %d: %v walking in %v", seed, walking, elapsed)
	}
}

func collectActive(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 3)
	c.Collect(ch)
	close(ch)
	for m := range ch {
		var d dto.Metric
		require.NoError(t, m.Write(&d))
		if d.GetLabel()[0].GetValue() == "active" {
			return d.GetGauge().GetValue()
		}
	}
	t.Fatal("no active gauge")
	return 0
}
