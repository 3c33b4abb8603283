package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/views"
)

// TestBackfill: POST /v1/jobs/{id}/backfill checks the range against the
// job in the view (as the scheduler will) before it produces the command,
// and answers the backfill's id and size; DELETE produces a cancel.
func TestBackfill(t *testing.T) {
	t.Parallel()
	jobs := newFakeJobs(views.Job{ID: "j", Version: 2, Status: "active", Job: codecs.JobDef{Every: "1m"}},
		views.Job{ID: "busy", Version: 2, Status: "active", Job: codecs.JobDef{Every: "1m"},
			Backfill: &codecs.BackfillStatus{ID: "b-0-1", Total: 3, Dispatched: 1, Remaining: 2}})
	f := newFixture(t, func(s *api.Server) { s.Jobs = jobs })
	past := time.Now().UTC().Truncate(time.Minute).Add(-24 * time.Hour)
	body := func(from, to time.Time) string {
		return fmt.Sprintf(`{"from":%q,"to":%q}`, from.Format(time.RFC3339), to.Format(time.RFC3339))
	}

	resp, b := f.do(t, request{method: http.MethodPost, path: "/v1/jobs/j/backfill", body: body(past, past.Add(time.Hour))})
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "%s", b)
	var a api.BackfillAccepted
	require.NoError(t, json.Unmarshal(b, &a))
	require.EqualValues(t, 60, a.Total)
	require.Equal(t, codecs.BackfillID(a.Partition, a.Offset), a.BackfillID)
	require.Equal(t, codecs.OpBackfill, a.Op)
	recs := f.prod.records()
	require.Len(t, recs, 1)
	c := decodeRecord(t, recs[0], "j")
	require.Equal(t, codecs.Command{Op: codecs.OpBackfill, ID: "j", From: past, To: past.Add(time.Hour)}, c)

	for _, tc := range []struct {
		name, path, body string
		status           int
		code, field      string
	}{
		{"unknown job", "/v1/jobs/nope/backfill", body(past, past.Add(time.Hour)), http.StatusNotFound, "not_found", "id"},
		{"in progress", "/v1/jobs/busy/backfill", body(past, past.Add(time.Hour)), http.StatusConflict, "backfill_in_progress", "id"},
		{"future", "/v1/jobs/j/backfill", body(past, time.Now().Add(time.Hour)), http.StatusBadRequest, codecs.CodeInvalidField, "to"},
		{"empty range", "/v1/jobs/j/backfill", body(past, past), http.StatusBadRequest, codecs.CodeInvalidField, "to"},
		{"no time in range", "/v1/jobs/j/backfill", body(past.Add(time.Second), past.Add(59*time.Second)), http.StatusConflict, codecs.CodeInvalidField, "from"},
		{"too many", "/v1/jobs/j/backfill", body(past.Add(-(codecs.MaxBackfillFires+1)*time.Minute), past), http.StatusConflict, codecs.CodeInvalidField, "to"},
		{"no body", "/v1/jobs/j/backfill", "", http.StatusBadRequest, codecs.CodeMalformed, ""},
		{"unknown field", "/v1/jobs/j/backfill", `{"from":"2026-01-01T00:00:00Z","to":"2026-01-02T00:00:00Z","rate":5}`, http.StatusBadRequest, codecs.CodeUnknownField, "rate"},
		{"bad time", "/v1/jobs/j/backfill", `{"from":"monday","to":"2026-01-02T00:00:00Z"}`, http.StatusBadRequest, codecs.CodeInvalidField, "from"},
	} {
		resp, b := f.do(t, request{method: http.MethodPost, path: tc.path, body: tc.body})
		require.Equal(t, tc.status, resp.StatusCode, "%s: %s", tc.name, b)
		p := decodeProblem(t, resp, b)
		require.Equal(t, tc.code, p.Code, tc.name)
		require.Equal(t, tc.field, p.Field, tc.name)
	}
	require.Len(t, f.prod.records(), 1, "a refused backfill produces nothing")

	resp, b = f.do(t, request{method: http.MethodDelete, path: "/v1/jobs/busy/backfill"})
	a2 := decodeAccepted(t, resp, b)
	require.Equal(t, codecs.OpCancelBackfill, a2.Op)
	require.Equal(t, codecs.Command{Op: codecs.OpCancelBackfill, ID: "busy"}, decodeRecord(t, f.prod.records()[1], "busy"))
}
