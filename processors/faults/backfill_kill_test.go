package faults_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/testenv/audit"
)

// httpJSON sends a JSON request to a chronos process's API and returns the
// status and body.
func httpJSON(t *testing.T, method, url string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

// backfillRecords returns the collected dispatch records flagged backfill.
func backfillRecords(t *testing.T, c *testenv.Collector) []*kgo.Record {
	t.Helper()
	var out []*kgo.Record
	for _, r := range c.Records() {
		d, err := codecs.DecodeDispatch(r.Value)
		require.NoError(t, err)
		if d.Backfill {
			out = append(out, r)
		}
	}
	return out
}

// TestBackfillKill9Resumes runs `chronos run` as a subprocess, starts a
// backfill of 600 past seconds of an `every 1s` job through the HTTP API
// at --backfill-rate 20 (about 30 s of work), checks GET shows it in
// progress, kills the process with SIGKILL mid-backfill, and starts a new
// one on an EMPTY data dir (it restores the job's record and the shard's
// registry from the changelog, as a new owner after a rebalance does).
// The backfill must resume where it stood (fewer events after the restart
// than the range holds) and complete: the audit (package audit) of the
// backfill events finds every fire_id of [from, to) with the scheduled
// fire's content, none outside it, and repeats only byte-identical in
// fire_id, scheduled_at and payload; repeats are counted and logged.
func TestBackfillKill9Resumes(t *testing.T) {
	const (
		partitions = 4
		total      = 600
		rate       = 20
	)
	env := testenv.New(t, partitions)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	flags := []string{"--backfill-rate", fmt.Sprint(rate)}
	a, _ := startChronosRun(t, env, t.TempDir(), flags...)

	def := codecs.JobDef{Every: "1s", Payload: json.RawMessage(`{"report":"daily","pad":"0123456789abcdef"}`)}
	const id = "backfill-kill"
	status, body := httpJSON(t, http.MethodPut, a.url+"/v1/jobs/"+id, def)
	require.Contains(t, []int{http.StatusOK, http.StatusAccepted}, status, "%s", body)
	testenv.Eventually(t, 30*time.Second, func() error {
		if s, b := httpJSON(t, http.MethodGet, a.url+"/v1/jobs/"+id, nil); s != http.StatusOK {
			return fmt.Errorf("GET: %d %s", s, b)
		}
		return nil
	})

	from := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
	to := from.Add(total * time.Second)
	status, body = httpJSON(t, http.MethodPost, a.url+"/v1/jobs/"+id+"/backfill",
		codecs.BackfillBody{From: from.Format(time.RFC3339), To: to.Format(time.RFC3339)})
	require.Equal(t, http.StatusAccepted, status, "%s", body)
	var acc struct {
		BackfillID string `json:"backfill_id"`
		Total      int64  `json:"total"`
	}
	require.NoError(t, json.Unmarshal(body, &acc))
	require.EqualValues(t, total, acc.Total)
	t.Logf("backfill %s of [%s, %s) accepted", acc.BackfillID, from.Format(time.RFC3339), to.Format(time.RFC3339))

	// A second backfill while this one runs is refused.
	status, body = httpJSON(t, http.MethodPost, a.url+"/v1/jobs/"+id+"/backfill",
		codecs.BackfillBody{From: from.Format(time.RFC3339), To: to.Format(time.RFC3339)})
	if status != http.StatusConflict {
		// The view may not show the first one yet: the scheduler refuses it then.
		require.Equal(t, http.StatusAccepted, status, "%s", body)
	}

	// GET shows it in progress.
	testenv.Eventually(t, 60*time.Second, func() error {
		_, b := httpJSON(t, http.MethodGet, a.url+"/v1/jobs/"+id, nil)
		var job struct {
			Backfill *codecs.BackfillStatus `json:"backfill"`
		}
		if err := json.Unmarshal(b, &job); err != nil {
			return err
		}
		if job.Backfill == nil || job.Backfill.Dispatched == 0 {
			return fmt.Errorf("no backfill progress in %s", b)
		}
		require.Equal(t, acc.BackfillID, job.Backfill.ID)
		require.EqualValues(t, total, job.Backfill.Total)
		require.Equal(t, job.Backfill.Total-job.Backfill.Dispatched, job.Backfill.Remaining)
		require.True(t, job.Backfill.From.Equal(from) && job.Backfill.To.Equal(to))
		return nil
	})

	// Kill it mid-backfill: after a sixth of the range, before half.
	var before int
	testenv.Eventually(t, 60*time.Second, func() error {
		if before = len(backfillRecords(t, dispatch)); before < total/6 {
			return fmt.Errorf("%d backfill events so far", before)
		}
		return nil
	})
	require.Less(t, before, total/2, "the backfill ran too fast to be killed in its middle")
	a.kill()
	killedAt := time.Now()
	t.Logf("SIGKILL with %d backfill events read", before)

	b, readyB := startChronosRun(t, env, t.TempDir(), flags...)
	plan, err := audit.Expect([]audit.Job{{ID: id, Def: def}}, audit.Options{From: from.Add(-time.Nanosecond), To: to.Add(-time.Nanosecond)})
	require.NoError(t, err)
	require.Len(t, plan.Expected, total)
	var r audit.Report
	testenv.Eventually(t, 180*time.Second, func() error {
		obs, err := audit.FromRecords(backfillRecords(t, dispatch))
		require.NoError(t, err)
		r = plan.Check(obs)
		if len(r.Missing) > 0 {
			return fmt.Errorf("%d of %d fires still missing", len(r.Missing), total)
		}
		return nil
	})
	// GET no longer shows it.
	testenv.Eventually(t, 30*time.Second, func() error {
		_, body := httpJSON(t, http.MethodGet, b.url+"/v1/jobs/"+id, nil)
		if bytes.Contains(body, []byte(`"backfill"`)) {
			return fmt.Errorf("still in progress: %s", body)
		}
		return nil
	})
	b.stop(t)

	recs := backfillRecords(t, dispatch)
	after := 0
	for _, rec := range recs {
		if rec.Timestamp.After(killedAt) {
			after++
		}
	}
	t.Logf("AUDIT backfill kill: %d fires in [%s, %s) at --backfill-rate %d; killed after %d events read; restart on an empty data dir ready in %s; %d events after the kill; %s",
		total, from.Format(time.RFC3339), to.Format(time.RFC3339), rate, before, readyB.Round(time.Millisecond), after, r)
	requireAudit(t, r)
	require.Zero(t, r.OutsideWindow, "backfill events outside [from, to)")
	require.Equal(t, len(recs), r.Events, "every backfill event is one of the range's")
	require.Less(t, after, total, "the restarted instance began the backfill again instead of resuming it")
}
