package processors_test

import (
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/processors/clock"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestCalendarAndDSTPolicyFires puts jobs with calendar items (L, L-n,
// d#n, dL) and DST policies, drives the simulated clock through Lord Howe
// Island's 2026 fall-back (Apr 5 02:00 +11 -> 01:30 +1030, a 30-minute
// shift) and a month end, and requires exactly the fires the brute-force
// oracle (schedule/testdata/oracle.py, Python) computes: same instants,
// one fire_id each, two distinct fire_ids for a wall time that
// overlap "both" fires twice.
func TestCalendarAndDSTPolicyFires(t *testing.T) {
	t.Parallel()
	const lh = "Australia/Lord_Howe"
	t0 := time.Date(2026, 3, 27, 0, 0, 0, 0, time.UTC)
	t1 := time.Date(2026, 4, 8, 0, 0, 0, 0, time.UTC)
	jobs := []struct {
		id           string
		cron, tz     string
		gap, overlap string // the oracle's names ("" = default)
	}{
		{"last-day", "0 0 L * *", lh, "", ""},
		{"last-day-minus-2", "30 9 L-2 * *", "Europe/Berlin", "", ""},
		{"first-sunday", "45 1 * * 0#1", lh, "", ""},
		{"last-friday", "0 10 * * 5L", "America/New_York", "", ""},
		{"first-sunday-both", "45 1 * * 0#1", lh, "", "both"},
		{"half-hours-last", "*/30 1-2 * * *", lh, "skip", "last"},
		// Berlin springs forward on Mar 29 (02:00 CET -> 03:00 CEST).
		{"berlin-gap-shift", "30 2 * * *", "Europe/Berlin", "", ""},
		{"berlin-gap-skip", "30 2 * * *", "Europe/Berlin", "skip", ""},
	}
	type fire struct {
		job string
		at  int64
	}
	var want []fire
	for _, j := range jobs {
		for _, u := range pythonOracle(t, j.cron, j.tz, j.gap, j.overlap, t0, t1) {
			want = append(want, fire{j.id, u})
		}
	}
	// The oracle's fires include the cases this test is about.
	count := map[string]int{}
	for _, f := range want {
		count[f.job]++
	}
	require.Equal(t, 2, count["first-sunday-both"], "overlap both fires twice on Apr 5")
	require.Equal(t, 1, count["first-sunday"])
	require.Equal(t, 1, count["last-day"])
	require.Equal(t, count["berlin-gap-shift"]-1, count["berlin-gap-skip"], "skip drops the Mar 29 fire")
	t.Logf("%d jobs, %d expected fires", len(jobs), len(want))

	env := testenv.New(t, 3)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	env.Start(env.Config())
	env.Tick(t0)
	for _, j := range jobs {
		def := codecs.JobDef{Cron: j.cron, TZ: j.tz, MisfireGrace: "30m"}
		if j.gap != "" || j.overlap != "" {
			def.DST = &codecs.DSTDef{Gap: j.gap, Overlap: j.overlap}
		}
		env.Put(j.id, def, t0)
	}
	env.WaitApplied()
	// Ten-minute steps: every fire is at most one step late, within its grace.
	var ticks []*kgo.Record
	for at := t0.Add(10 * time.Minute); !at.After(t1); at = at.Add(10 * time.Minute) {
		ticks = append(ticks, &kgo.Record{Topic: string(env.Layout.Clock()), Key: []byte(clock.TickKey),
			Value: codecs.EncodeInternal(codecs.Tick{Time: at}), Timestamp: at})
	}
	require.NoError(t, env.Client.ProduceSync(t.Context(), ticks...).FirstErr())
	dispatch.WaitLen(t, len(want), 5*time.Minute)
	env.WaitConsumed(string(env.Layout.ClockGroup()), string(env.Layout.Clock()), time.Minute)
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.ShardTriggers()), time.Minute)
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)

	var got []fire
	ids := map[string]int{}
	for _, d := range dispatch.Dispatches(t) {
		require.Zero(t, d.Missed, d.FireID)
		require.Equal(t, codecs.ScheduledFireID(d.JobID, d.ScheduledAt), d.FireID)
		ids[d.FireID]++
		got = append(got, fire{d.JobID, d.ScheduledAt.Unix()})
	}
	for id, n := range ids {
		require.Equal(t, 1, n, "fire_id %s dispatched %d times", id, n)
	}
	less := func(s []fire) func(i, j int) bool {
		return func(i, j int) bool {
			if s[i].job != s[j].job {
				return s[i].job < s[j].job
			}
			return s[i].at < s[j].at
		}
	}
	sort.Slice(want, less(want))
	sort.Slice(got, less(got))
	require.Equal(t, want, got)
}

// pythonOracle runs schedule/testdata/oracle.py for the fires of one cron
// expression in [from, to) (Unix seconds).
func pythonOracle(t *testing.T, cron, tz, gap, overlap string, from, to time.Time) []int64 {
	t.Helper()
	if gap == "" {
		gap = "shift"
	}
	if overlap == "" {
		overlap = "first"
	}
	py, err := exec.LookPath("python3")
	require.NoError(t, err, "python3 runs the schedule oracle")
	out, err := exec.Command(py, "../schedule/testdata/oracle.py", "--fires", cron, tz, gap, overlap,
		fmt.Sprint(from.Unix()), fmt.Sprint(to.Unix())).Output()
	if ee, ok := err.(*exec.ExitError); ok {
		err = fmt.Errorf("%w: %s", err, ee.Stderr)
	}
	require.NoError(t, err)
	var us []int64
	for _, l := range strings.Fields(string(out)) {
		u, err := strconv.ParseInt(l, 10, 64)
		require.NoError(t, err)
		us = append(us, u)
	}
	return us
}
