package faults_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/views"
)

// TestBulkKill9Finishes runs `chronos run` as a subprocess with one key
// per bulk chunk, puts 3000 jobs of a bucket, sends a bulk pause of the
// bucket through the HTTP API, kills the process with SIGKILL mid-walk,
// and starts a new one on an EMPTY data dir (it restores the shard
// records, with the queued operation and its cursor, from the
// changelog). The operation must finish on every shard with the oracle's
// result: every job paused, matched within one chunk a shard of the
// 3000 (a crash may repeat or lose the count of a chunk), none counted
// as skipped (the commands the dead process applied but did not commit
// are handled again: their effect, not a loss); and a second
// pause of the bucket afterwards must match all 3000 and change none.
func TestBulkKill9Finishes(t *testing.T) {
	const (
		partitions = 4
		n          = 3000
	)
	env := testenv.New(t, partitions)
	jobs := env.Collect(string(env.Layout.Jobs()))
	flags := []string{"--fanout-chunk", "1"}
	a, _ := startChronosRun(t, env, t.TempDir(), flags...)
	t0 := time.Now().UTC()
	keys := make([]string, n)
	values := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("k9-%05d", i)
		values[i] = testenv.PutCommand(keys[i], codecs.JobDef{Cron: "0 0 1 1 *", Bucket: "k9"})
	}
	env.ProduceMany(string(env.Layout.Jobs()), keys, values, t0)
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.Jobs()), 2*time.Minute)

	bulk := func(url, id string) {
		status, body := httpJSON(t, http.MethodPost, url+"/v1/buckets/k9/pause", codecs.BulkBody{TriggerID: id})
		require.Equal(t, http.StatusAccepted, status, "%s", body)
	}
	finished := func(url, id string) views.BulkStatus {
		var st views.BulkStatus
		testenv.Eventually(t, 3*time.Minute, func() error {
			status, body := httpJSON(t, http.MethodGet, url+"/v1/bulk/"+id, nil)
			if status != http.StatusOK {
				return fmt.Errorf("GET /v1/bulk/%s: %d %s", id, status, body)
			}
			if err := json.Unmarshal(body, &st); err != nil {
				return err
			}
			if !st.Done {
				return fmt.Errorf("not done: %s", body)
			}
			return nil
		})
		return st
	}
	paused := func() int {
		var c int
		for _, r := range jobs.Commands() {
			if strings.Contains(string(r.Value), `"op":"pause"`) {
				c++
			}
		}
		return c
	}
	bulk(a.url, "k9-pause")
	testenv.Eventually(t, 2*time.Minute, func() error {
		if c := paused(); c < n/10 {
			return fmt.Errorf("%d pause commands so far", c)
		}
		return nil
	})
	a.kill()
	before := paused()
	t.Logf("SIGKILL with %d of %d pause commands read", before, n)
	require.Less(t, before, n, "the walk finished before the kill")

	b, readyB := startChronosRun(t, env, t.TempDir(), flags...)
	st := finished(b.url, "k9-pause")
	t.Logf("after a restart on an empty data dir (ready in %s): %+v; %d pause commands in all", readyB.Round(time.Millisecond), st, paused())
	require.InDelta(t, n, st.Matched, partitions, "matched within one chunk a shard")
	require.InDelta(t, n, st.Changed, partitions, "changed within one chunk a shard")
	require.Zero(t, st.Skipped, "a command handled again after the crash is not a loss to a newer version")

	bulk(b.url, "k9-pause-again")
	again := finished(b.url, "k9-pause-again")
	require.Equal(t, [2]int64{n, 0}, [2]int64{again.Matched, again.Changed}, "every job was paused by the first operation")
	b.stop(t)
}
