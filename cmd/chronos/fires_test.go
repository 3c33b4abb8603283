package main

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	httpapi "github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/store"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/views"
)

// TestJobsFiresHistoryAndNext runs an instance on the test broker, serves
// the API over its job and history views, and drives the CLI: a job put
// through the API is fired by hand; an executor reports
// on chronos-results; `jobs fires` shows each fire with its delay, outcome
// and duration; `jobs history` shows the put with the token that sent it
// and a pause sent directly to Kafka; `jobs get --next --from` shows the
// job's fires across the autumn DST change in its zone.
func TestJobsFiresHistoryAndNext(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 3)
	cfg := env.Config()
	env.Start(cfg)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	jobs, err := views.NewJobs(env.Kafka, env.Layout, t.TempDir(), log)
	require.NoError(t, err)
	hist, err := views.NewHistory(env.Kafka, env.Layout, t.TempDir(), store.Options{}, log)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { _ = jobs.Run(ctx); done <- struct{}{} }()
	go func() { _ = hist.Run(ctx); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done })
	srv := httptest.NewServer((&httpapi.Server{Names: env.Layout.Names, Producer: env.Client, Jobs: jobs, History: hist,
		ReadYourWrites: time.Millisecond}).Handler())
	t.Cleanup(srv.Close)
	api := "--api=" + srv.URL
	testenv.Eventually(t, time.Minute, func() error {
		if err := jobs.Ready(); err != nil {
			return err
		}
		return hist.Ready()
	})

	_, err = run(t, "jobs", "put", "nightly", "--cron", "30 2 * * *", "--tz", "Europe/Berlin", api)
	require.NoError(t, err)
	env.WaitApplied()
	// A manual fire: dispatched as soon as the scheduler applies it, at the
	// broker's time (no simulated clock ahead of Apache Kafka's).
	_, err = run(t, "jobs", "fire", "nightly", "--trigger-id", "run-1", api)
	require.NoError(t, err)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	dispatch.WaitLen(t, 1, time.Minute)
	d := dispatch.Dispatches(t)[0]
	start, end := d.FiredAt.Add(200*time.Millisecond), d.FiredAt.Add(3200*time.Millisecond)
	res, err := codecs.EncodeResult(codecs.ResultMsg{FireID: d.FireID, ScheduledAt: d.ScheduledAt, Status: codecs.StatusFailed, Attempt: 1,
		StartedAt: &start, FinishedAt: &end, Error: "exit status 3"})
	require.NoError(t, err)
	env.Produce(string(env.Layout.Results()), "nightly", res, end)
	env.Produce(string(env.Layout.Jobs()), "nightly", []byte(`{"v":1,"op":"pause"}`), end)

	var out string
	testenv.Eventually(t, time.Minute, func() error {
		out, err = run(t, "jobs", "fires", "nightly", api)
		if err == nil && !strings.Contains(out, "failed") {
			return errNotYet(out)
		}
		return err
	})
	delay := d.FiredAt.Sub(d.ScheduledAt).Round(time.Millisecond).String()
	require.Regexp(t, regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(d.ScheduledAt.UTC().Format(time.RFC3339))+`\s+manual\s+`+
		regexp.QuoteMeta(d.FiredAt.UTC().Format("15:04:05.000"))+`\s+`+regexp.QuoteMeta(delay)+`\s+failed\s+1\s+3s\s+nightly@run-1\s+exit status 3$`), out)

	testenv.Eventually(t, time.Minute, func() error {
		out, err = run(t, "jobs", "history", "nightly", api)
		if err == nil && !strings.Contains(out, "pause") {
			return errNotYet(out)
		}
		return err
	})
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4, out)
	require.Regexp(t, `\s- \(direct to Kafka\)\s+pause\s`, lines[1])
	require.Regexp(t, `\sanonymous\s+fire\s+run-1\s`, lines[2])
	require.Regexp(t, `\sanonymous\s+put\s+cron 30 2 \* \* \* tz Europe/Berlin\s`, lines[3])

	// Paused: no next fires, unless asked from a time. On 25 October 2026
	// Berlin's 02:30 happens twice (CEST, then CET); the default overlap
	// policy fires the first, 00:30 UTC; the day after, 02:30 CET is 01:30 UTC.
	out, err = run(t, "jobs", "get", "nightly", "--next", "3", "--from", "2026-10-24T00:00:00+02:00", api)
	require.NoError(t, err)
	require.Regexp(t, `2026-10-24T00:30:00Z\s+2026-10-24 02:30:00 CEST`, out)
	require.Regexp(t, `2026-10-25T00:30:00Z\s+2026-10-25 02:30:00 CEST`, out)
	require.Regexp(t, `2026-10-26T01:30:00Z\s+2026-10-26 02:30:00 CET`, out)
	out, err = run(t, "jobs", "get", "nightly", api)
	require.NoError(t, err)
	require.NotContains(t, out, "next fires")
	_, err = run(t, "jobs", "get", "nightly", "--next", "1001", api)
	require.ErrorContains(t, err, "next must be 1..1000")
}

type errNotYet string

func (e errNotYet) Error() string { return "not yet: " + string(e) }
