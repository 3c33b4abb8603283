package faults_test

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/testenv/audit"
)

// TestClockOwnerKill9LosesNothing runs two `chronos run` subprocesses in
// real time, finds the one whose clock group announces time (its
// chronos_clock_lag_seconds is a number, not NaN) and kills it with SIGKILL.
// The other takes over the clock partition once the dead member's session
// times out; every fire of the window must be dispatched.
func TestClockOwnerKill9LosesNothing(t *testing.T) {
	env := testenv.New(t, 4)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	a, _ := startChronosRun(t, env, t.TempDir())
	b, _ := startChronosRun(t, env, t.TempDir())

	putAt := time.Now()
	const n = 200
	jobs := make([]audit.Job, n)
	keys, values := make([]string, n), make([][]byte, n)
	for i := range jobs {
		id := fmt.Sprintf("ck-%03d", i)
		def := codecs.JobDef{Every: "1s"}
		jobs[i] = audit.Job{ID: id, Def: def, PutAt: putAt}
		keys[i], values[i] = id, testenv.PutCommand(id, def)
	}
	env.ProduceMany(string(env.Layout.Jobs()), keys, values, putAt)

	var owner, other *chronosProc
	testenv.Eventually(t, 60*time.Second, func() error {
		switch {
		case announces(a.url):
			owner, other = a, b
		case announces(b.url):
			owner, other = b, a
		default:
			return fmt.Errorf("no instance announces time yet")
		}
		return nil
	})
	time.Sleep(3 * time.Second) // fires flow before the kill
	owner.kill()
	killedAt := time.Now()
	testenv.Eventually(t, 90*time.Second, func() error {
		if !announces(other.url) || metric(other.url, "chronos_partitions_owned") != "4" {
			return fmt.Errorf("the survivor does not own the clock and all 4 partitions yet")
		}
		return nil
	})
	t.Logf("survivor took over the clock and every partition %s after the kill", time.Since(killedAt).Round(time.Millisecond))
	time.Sleep(5 * time.Second)
	stopAt := time.Now()
	other.stop(t)

	plan, err := audit.Expect(jobs, audit.Options{From: putAt, To: stopAt.Add(-3 * time.Second).Truncate(time.Second)})
	require.NoError(t, err)
	r := auditUntil(t, plan, dispatch, 60*time.Second, true)
	t.Logf("AUDIT clock owner kill -9: %s", r)
	requireAudit(t, r)
}

// announces reports whether the instance at url announces time now: its
// chronos_clock_lag_seconds is a number below 2.5 s (an instance that owned
// the clock before a rebalance keeps a growing, stale value).
func announces(url string) bool {
	v, err := strconv.ParseFloat(metric(url, "chronos_clock_lag_seconds"), 64)
	return err == nil && !math.IsNaN(v) && v < 2.5
}

// metric returns the value of an unlabelled metric on url's /metrics.
func metric(url, name string) string {
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	return ""
}
