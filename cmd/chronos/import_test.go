package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	httpapi "github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestJobsImportAllOrNothing imports a generated file of puts through
// `chronos jobs import` against a real instance, cut into many requests.
// Promise (docs/api.md, "Import"): a file with one invalid line (placed at
// random, so often in a later request than the first) writes nothing at
// all and names the line; the corrected file writes every job, and the job
// view then lists all of them.
func TestJobsImportAllOrNothing(t *testing.T) {
	tenv := testenv.New(t, 4)
	cfg := tenv.Config()
	cfg.HTTP.Addr = freeAddr(t)
	tenv.Start(cfg)
	base := "http://" + cfg.HTTP.Addr

	rng := rand.New(rand.NewPCG(15, 55))
	const jobs = 3000
	lines := make([]string, jobs)
	for i := range lines {
		lines[i] = fmt.Sprintf(`{"v":1,"op":"put","id":"imp-%05d","job":{"every":"%ds","payload":{"i":%d,"url":"/r?a=1&b=2"}}}`, i, 60+rng.IntN(3600), i)
	}
	bad := rng.IntN(jobs)
	good := lines[bad]
	lines[bad] = strings.Replace(good, `"every"`, `"cron":"* * *","every"`, 1)
	file := filepath.Join(t.TempDir(), "jobs.ndjson")
	write := func() {
		require.NoError(t, os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	}
	write()
	chunk := fmt.Sprint(4096 + rng.IntN(40000))

	out, errOut, err := runErr(t, "jobs", "import", file, "--api", base, "--chunk-bytes", chunk)
	requireExit(t, err, 1, "1 of 3000 lines are invalid; nothing was written")
	require.Contains(t, errOut, fmt.Sprintf("line %d \"imp-%05d\": invalid_schedule", bad+1, bad), errOut)
	var res httpapi.ImportResult
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	require.Equal(t, 0, res.Written)
	requireJobsTopicEmpty(t, tenv)
	// In one request (the default size), the server's own all-or-nothing.
	_, errOut, err = runErr(t, "jobs", "import", file, "--api", base)
	requireExit(t, err, 1, "1 of 3000 lines are invalid; nothing was written")
	require.Contains(t, errOut, fmt.Sprintf("line %d \"imp-%05d\": invalid_schedule", bad+1, bad), errOut)
	requireJobsTopicEmpty(t, tenv)

	lines[bad] = good
	write()
	out, _, err = runErr(t, "jobs", "import", file, "--api", base, "--chunk-bytes", chunk, "--dry-run")
	require.NoError(t, err)
	res = httpapi.ImportResult{}
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	require.Equal(t, httpapi.ImportResult{Lines: jobs, DryRun: true}, res)
	requireJobsTopicEmpty(t, tenv)

	out, _, err = runErr(t, "jobs", "import", file, "--api", base, "--chunk-bytes", chunk)
	require.NoError(t, err)
	res = httpapi.ImportResult{}
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	require.Equal(t, httpapi.ImportResult{Lines: jobs, Written: jobs}, res)

	// The job view lists every job.
	deadline := time.Now().Add(60 * time.Second)
	for {
		n := countJobs(t, base)
		if n == jobs {
			break
		}
		require.True(t, time.Now().Before(deadline), "the view lists %d of %d imported jobs", n, jobs)
		time.Sleep(100 * time.Millisecond)
	}
}

func requireJobsTopicEmpty(t *testing.T, tenv *testenv.Env) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tenv.Kafka.Brokers...))
	require.NoError(t, err)
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), string(tenv.Layout.Jobs()))
	require.NoError(t, err)
	ends.Each(func(o kadm.ListedOffset) { require.Zero(t, o.Offset, "partition %d of chronos-jobs", o.Partition) })
}

func countJobs(t *testing.T, base string) int {
	n, cursor := 0, ""
	for {
		resp, err := http.Get(base + "/v1/jobs?limit=1000&cursor=" + cursor)
		require.NoError(t, err)
		var page httpapi.JobList
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&page))
		resp.Body.Close()
		n += len(page.Jobs)
		if page.NextCursor == "" {
			return n
		}
		cursor = page.NextCursor
	}
}
