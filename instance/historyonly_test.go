package instance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/instance"
	"github.com/chronos-scheduler/chronos/processors/clock"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestHistoryOnlyInstance splits the groups over two instances as
// docs/configuration.md#history describes: one with --no-history
// schedules, one with --history-only keeps and serves the history. A job
// put through the history instance's API is scheduled and fired by the
// other; an executor's result arrives; the history instance's /fires shows
// the fire with its delay and outcome and /history the put. The history
// instance never joins the scheduler, clock or router group, and the
// scheduling instance never joins the history group.
func TestHistoryOnlyInstance(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 3)
	dispatch := env.Collect(string(env.Layout.Dispatch()))

	sched := env.Config()
	sched.History.Off = true
	env.Start(sched)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	hist := env.Config()
	hist.History.Only = true
	hist.HTTP.Addr = addr
	env.Start(hist)
	base := "http://" + addr

	send := func(method, path, body string) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Less(t, resp.StatusCode, 300, "%s %s: %s", method, path, b)
	}
	// A manual fire, dispatched as soon as the scheduler applies it at the
	// broker's time (no simulated clock ahead of Apache Kafka's).
	send(http.MethodPut, "/v1/jobs/report", `{"cron":"30 2 * * *"}`)
	env.WaitApplied()
	send(http.MethodPost, "/v1/jobs/report/fire", `{"trigger_id":"run-1"}`)
	dispatch.WaitLen(t, 1, time.Minute)
	d := dispatch.Dispatches(t)[0]
	require.Equal(t, "report", d.JobID)
	start, end := d.FiredAt.Add(time.Second), d.FiredAt.Add(3*time.Second)
	res, err := codecs.EncodeResult(codecs.ResultMsg{FireID: d.FireID, ScheduledAt: d.ScheduledAt, Status: codecs.StatusSucceeded, Attempt: 1,
		StartedAt: &start, FinishedAt: &end})
	require.NoError(t, err)
	env.Produce(string(env.Layout.Results()), "report", res, end)

	get := func(path string, v any) error {
		resp, err := http.Get(base + path)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %d %s", path, resp.StatusCode, b)
		}
		return json.Unmarshal(b, v)
	}
	testenv.Eventually(t, time.Minute, func() error {
		var fires struct {
			Fires []struct {
				FireID       string   `json:"fire_id"`
				Status       string   `json:"status"`
				DelaySeconds *float64 `json:"delay_seconds"`
			} `json:"fires"`
		}
		if err := get("/v1/jobs/report/fires", &fires); err != nil {
			return err
		}
		for _, f := range fires.Fires {
			if f.FireID == d.FireID && f.Status == codecs.StatusSucceeded && f.DelaySeconds != nil {
				if want := d.FiredAt.Sub(d.ScheduledAt).Seconds(); *f.DelaySeconds < want-0.001 || *f.DelaySeconds > want+0.001 {
					return fmt.Errorf("delay %v s, want %v s", *f.DelaySeconds, want)
				}
				return nil
			}
		}
		return fmt.Errorf("fire %s not (yet) in %+v", d.FireID, fires)
	})
	var changes struct {
		Changes []struct {
			Op    string `json:"op"`
			Actor string `json:"actor"`
		} `json:"changes"`
	}
	require.NoError(t, get("/v1/jobs/report/history", &changes))
	require.NotEmpty(t, changes.Changes)
	require.Equal(t, codecs.OpPut, changes.Changes[len(changes.Changes)-1].Op, "%+v", changes)

	// Its /metrics answers (no scheduler partitions to report) and says
	// it is ready.
	resp, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(metrics))
	require.Contains(t, string(metrics), "\nchronos_ready 1\n")
	// Its stores (the history group's and the history view's) are open
	// and report what they hold.
	open := regexp.MustCompile(`\nchronos_stores_open (\d+)\n`).FindStringSubmatch(string(metrics))
	require.NotNil(t, open, "no chronos_stores_open in\n%s", metrics)
	n, _ := strconv.Atoi(open[1])
	require.GreaterOrEqual(t, n, 2*int(env.Layout.Partitions), "stores open (this process: both instances)")
	require.Regexp(t, `\nchronos_store_memory_bytes\{kind="memtables"\} [1-9]`, string(metrics))
	require.Contains(t, string(metrics), `chronos_store_memory_bytes{kind="block_cache"}`)
	// No clock age: it sees no announcement (no scheduler), so a
	// Deployment of history-only pods scraped as a job of its own would
	// read as a stalled clock (ChronosClockStalled) for ever.
	require.NotContains(t, string(metrics), clock.AnnouncedAgeMetric)
	require.NotContains(t, string(metrics), clock.ResolutionMetric)

	// Who runs what: one member in each group, the scheduling instance in
	// the scheduling groups and the history instance in the history group.
	adm := kadm.NewClient(env.Client)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	groups := []string{string(env.Layout.SchedulerGroup()), string(env.Layout.ClockGroup()), string(env.Layout.RouterGroup()), string(env.Layout.HistoryGroup())}
	described, err := adm.DescribeGroups(ctx, groups...)
	require.NoError(t, err)
	for _, g := range groups {
		require.NoError(t, described[g].Err, g)
		require.Len(t, described[g].Members, 1, "group %s", g)
	}
	require.ErrorContains(t, instance.Config{History: instance.History{Off: true, Only: true}}.Validate(), "choose one")
}
