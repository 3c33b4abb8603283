package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	httpapi "github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/views"
)

// TestJobsBulk drives bulk operations from the CLI through the HTTP API
// and a running scheduler: a pause of a bucket with --wait prints the
// shards' final counts (every active job of the bucket, none other), the
// jobs carry the note, a delete of a prefix deletes exactly its jobs, and
// `jobs bulk status` reads the counts again.
func TestJobsBulk(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 3)
	env.Start(env.Config())
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	jobs, err := views.NewJobs(env.Kafka, env.Layout, t.TempDir(), log)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = jobs.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	srv := httptest.NewServer((&httpapi.Server{Names: env.Layout.Names, Producer: env.Client, Jobs: jobs}).Handler())
	t.Cleanup(srv.Close)
	api := "--api=" + srv.URL
	testenv.Eventually(t, time.Minute, jobs.Ready)

	t0 := time.Now().UTC()
	var keys []string
	var values [][]byte
	for i := 0; i < 30; i++ {
		id := fmt.Sprintf("%s/j%02d", []string{"eu", "us"}[i%2], i)
		keys = append(keys, id)
		values = append(values, testenv.PutCommand(id, codecs.JobDef{Cron: "0 0 1 1 *", Bucket: []string{"reports", "other"}[i%3%2]}))
	}
	env.ProduceMany(string(env.Layout.Jobs()), keys, values, t0)
	env.WaitApplied()
	testenv.Eventually(t, time.Minute, func() error {
		_, err := jobs.Get(keys[len(keys)-1])
		return err
	})

	status := func(out string) views.BulkStatus {
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var st views.BulkStatus
		last := lines[len(lines)-1]
		if i := strings.LastIndex(last, "}{"); i >= 0 { // the 202 answer and the counts, each without a newline
			last = last[i+1:]
		}
		require.NoError(t, json.Unmarshal([]byte(last), &st), out)
		return st
	}
	inBucket := 0
	for i := range keys {
		if i%3%2 == 0 {
			inBucket++
		}
	}
	out, err := run(t, "jobs", "bulk", "pause", "bucket", "reports", "--note", "INC-1", "--wait", "1m", "--trigger-id", "p1", api)
	require.NoError(t, err)
	st := status(out)
	require.True(t, st.Done)
	require.Equal(t, views.BulkStatus{TriggerID: "p1", Op: "pause", Bucket: "reports", Shards: 3, Finished: 3, Done: true,
		Matched: int64(inBucket), Changed: int64(inBucket)}, st)
	env.WaitApplied()
	testenv.Eventually(t, time.Minute, func() error {
		for i, id := range keys {
			j, err := jobs.Get(id)
			if err != nil {
				return err
			}
			paused := j.Status == codecs.StatusPaused.String()
			if paused != (i%3%2 == 0) {
				return fmt.Errorf("job %s is %s", id, j.Status)
			}
			if paused && (j.Pause == nil || j.Pause.Note != "INC-1") {
				return fmt.Errorf("job %s has pause %+v", id, j.Pause)
			}
		}
		return nil
	})

	out, err = run(t, "jobs", "bulk", "delete", "prefix", "eu/", "--trigger-id", "d1", "--wait", "1m", api)
	require.NoError(t, err)
	require.Equal(t, int64(15), status(out).Changed)
	out, err = run(t, "jobs", "bulk", "status", "d1", api)
	require.NoError(t, err)
	require.Equal(t, views.BulkStatus{TriggerID: "d1", Op: "delete", Prefix: "eu/", Shards: 3, Finished: 3, Done: true,
		Matched: 15, Changed: 15}, status(out))

	_, err = run(t, "jobs", "bulk", "pause", "bucke", "reports", api)
	require.ErrorContains(t, err, "bucket NAME")
	_, err = run(t, "jobs", "bulk", "resume", "prefix", "", api)
	require.Error(t, err)
	_, err = run(t, "jobs", "bulk", "status", "nope", api)
	require.ErrorContains(t, err, "no shard knows")
}
