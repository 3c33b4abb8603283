package api_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
	"github.com/chronos-scheduler/chronos/views"
)

// fakeHistory is a HistoryReader over fixed lists.
type fakeHistory struct {
	fires   []views.Fire
	changes []views.Change
}

func (f fakeHistory) Get(string) ([]views.Fire, []views.Change, error) {
	return f.fires, f.changes, nil
}

func TestHistoryRoutes(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 4, 2, 0, 0, 0, time.UTC)
	delay := 0.25
	h := fakeHistory{fires: []views.Fire{{FireID: "j@2026-05-04T02:00:00Z", ScheduledAt: at, Status: "failed", DelaySeconds: &delay, Error: "boom"},
		{FireID: "j@2026-05-04T01:00:00Z", ScheduledAt: at.Add(-time.Hour), Status: "dispatched"}},
		changes: []views.Change{{At: at, Actor: "ci", Op: "pause", Offset: 9}, {At: at.Add(-time.Hour), Actor: "", Op: "put", Detail: "cron 0 * * * *", Offset: 3}}}
	f := newFixture(t, func(s *api.Server) { s.History = h })

	resp, b := f.do(t, request{method: "GET", path: "/v1/jobs/j/fires"})
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	var fl api.FireList
	require.NoError(t, json.Unmarshal(b, &fl))
	require.Equal(t, "j", fl.JobID)
	require.Len(t, fl.Fires, 2)
	require.Equal(t, 0.25, *fl.Fires[0].DelaySeconds)

	resp, b = f.do(t, request{method: "GET", path: "/v1/jobs/j/history?limit=1"})
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	var cl api.ChangeList
	require.NoError(t, json.Unmarshal(b, &cl))
	require.Equal(t, []views.Change{h.changes[0]}, cl.Changes)

	for _, q := range []string{"?limit=0", "?limit=1001", "?limit=x", "?cursor=1"} {
		resp, b = f.do(t, request{method: "GET", path: "/v1/jobs/j/fires" + q})
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", q, b)
	}

	none := newFixture(t, nil)
	resp, b = none.do(t, request{method: "GET", path: "/v1/jobs/j/history"})
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, "history_unavailable", decodeProblem(t, resp, b).Code)
	// A bad request is refused as one on an instance without history too
	// (round 13c saw 503 for ?limit=0 there).
	resp, b = none.do(t, request{method: "GET", path: "/v1/jobs/j/fires?limit=0"})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", b)
}

// TestGetJobNextFrom checks ?next=N&from=T on generated schedules: the
// answer holds N times of the job's schedule, increasing, the first the
// schedule's first time at or after T, each the schedule's next after the
// one before; without from the list starts at the job's own next fire; bad
// values are refused.
func TestGetJobNextFrom(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(13, 5))
	crons := []string{"*/7 * * * *", "30 2 * * *", "0 9 * * 1-5", "15 1 L * *", "0 0 29 2 *"}
	zones := []string{"", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe"}
	for i := range 40 {
		def := codecs.JobDef{Cron: crons[rng.IntN(len(crons))], TZ: zones[rng.IntN(len(zones))]}
		if i%5 == 0 {
			def = codecs.JobDef{Every: fmt.Sprintf("%dm", 1+rng.IntN(90))}
		}
		norm, err := def.Validate(codecs.DefaultLimits())
		require.NoError(t, err)
		sched, err := schedule.Parse(norm.Spec)
		require.NoError(t, err)
		from := time.Date(2026, time.Month(1+rng.IntN(12)), 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60), 0, time.UTC)
		own := sched.Next(from.Add(-48 * time.Hour))
		jobs := newFakeJobs(views.Job{ID: "j", Version: 1, Status: "paused", Job: norm.Def(), NextFires: []time.Time{own}})
		f := newFixture(t, func(s *api.Server) { s.Jobs = jobs })
		n := 1 + rng.IntN(200)

		resp, b := f.do(t, request{method: "GET", path: "/v1/jobs/j?next=" + fmt.Sprint(n) + "&from=" + url.QueryEscape(from.Format(time.RFC3339))})
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
		got := decodeJob(t, resp, b).NextFires
		require.Len(t, got, n, "%+v from %s", def, from)
		require.False(t, got[0].Before(from))
		require.Equal(t, sched.Next(from.Add(-time.Second)).UTC(), got[0].UTC(), "%+v from %s", def, from)
		for k := 1; k < len(got); k++ {
			require.Equal(t, sched.Next(got[k-1]).UTC(), got[k].UTC())
		}

		resp, b = f.do(t, request{method: "GET", path: "/v1/jobs/j?next=" + fmt.Sprint(n)})
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
		got = decodeJob(t, resp, b).NextFires
		require.Len(t, got, n)
		require.Equal(t, own.UTC(), got[0].UTC())
	}
	f := newFixture(t, func(s *api.Server) { s.Jobs = newFakeJobs(views.Job{ID: "j", Version: 1}) })
	for q, field := range map[string]string{"?next=0": "next", "?next=1001": "next", "?next=x": "next", "?from=yesterday": "from",
		"?from=10000-01-01T00:00:00Z": "from", "?limit=3": "limit"} {
		resp, b := f.do(t, request{method: "GET", path: "/v1/jobs/j" + q})
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", q, b)
		require.Equal(t, field, decodeProblem(t, resp, b).Field, q)
	}
}
