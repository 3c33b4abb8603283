package views_test

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/views"
)

// TestJobsViewFollowsTheTable runs the scheduler and a view on the embedded
// broker: the view shows put jobs with their next fires in their zone, lists
// one bucket's jobs across all partitions with a cursor, and forgets deleted
// jobs.
func TestJobsViewFollowsTheTable(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 6)
	env.Start(env.Config())
	jobs, err := views.NewJobs(env.Kafka, env.Layout, t.TempDir(), slog.Default())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- jobs.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	t0 := time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC)
	env.Tick(t0)
	env.Put("ny", codecs.JobDef{Cron: "30 2 * * *", TZ: "America/New_York", Bucket: "reports"}, t0)
	var want []string
	for i := 0; i < 40; i++ {
		id := fmt.Sprintf("r%02d", i)
		want = append(want, id)
		env.Put(id, codecs.JobDef{Every: "1h", Bucket: "reports"}, t0)
	}
	want = append(want, "ny")
	env.Put("other", codecs.JobDef{Every: "1h", Bucket: "other"}, t0)
	env.Produce(string(env.Layout.Jobs()), "r00", []byte(`{"v":1,"op":"delete"}`), t0)
	env.Produce(string(env.Layout.Jobs()), "r01", []byte(`{"v":1,"op":"pause"}`), t0)
	want = want[1:]
	env.WaitApplied()

	testenv.Eventually(t, 30*time.Second, func() error {
		if _, err := jobs.Get("r00"); err == nil {
			return fmt.Errorf("deleted job still in the view")
		}
		j, err := jobs.Get("r01")
		if err != nil || j.Status != "paused" {
			return fmt.Errorf("r01: %v %v", j, err)
		}
		return nil
	})
	j, err := jobs.Get("ny")
	require.NoError(t, err)
	require.Equal(t, "active", j.Status)
	require.Equal(t, uint64(1), j.Version)
	// The spring-forward gap: 02:30 on 2026-03-08 does not exist in New York;
	// the job fires when the gap ends, 03:00 EDT (07:00 UTC).
	require.Equal(t, time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC), j.NextFires[0].UTC())
	require.Equal(t, time.Date(2026, 3, 9, 6, 30, 0, 0, time.UTC), j.NextFires[1].UTC())
	require.Len(t, j.NextFires, 5)
	_, err = jobs.Get("nope")
	require.ErrorIs(t, err, views.ErrNotFound)

	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		page, next, err := jobs.List("reports", cursor, 7)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page), 7)
		for _, s := range page {
			require.Equal(t, "reports", s.Bucket)
			got = append(got, s.ID)
		}
		if cursor = next; cursor == "" {
			break
		}
		require.Less(t, pages, 20)
	}
	sort.Strings(got)
	sort.Strings(want)
	require.Equal(t, want, got, "every job of the bucket exactly once, the deleted one gone")
	all, _, err := jobs.List("", "", 1000)
	require.NoError(t, err)
	require.Len(t, all, len(want)+1)
}
