package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/views"
)

// emptyHistory is a history with nothing recorded for any job.
type emptyHistory struct{}

func (emptyHistory) Get(string) ([]views.Fire, []views.Change, error) { return nil, nil, nil }

// TestHistoryRoutesValidateID: /fires and /history refuse an id the job id
// rules refuse, as docs/openapi.json says (issue 20's schemathesis run:
// an id over 256 bytes answered 200 with an empty list).
func TestHistoryRoutesValidateID(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(s *api.Server) { s.History = emptyHistory{} })
	for _, route := range []string{"fires", "history"} {
		for id, code := range map[string]string{
			strings.Repeat("i", codecs.MaxIDLen+1): codecs.CodeInvalidID,
			"a\x01b":                               codecs.CodeInvalidID,
			"__chronos/x":                          codecs.CodeReservedID,
		} {
			resp, b := f.do(t, request{method: http.MethodGet, path: "/v1/jobs/" + url.PathEscape(id) + "/" + route})
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s %q: %s", route, id, b)
			p := decodeProblem(t, resp, b)
			require.Equal(t, code, p.Code, "%s %q", route, id)
			require.Equal(t, "id", p.Field)
		}
		resp, b := f.do(t, request{method: http.MethodGet, path: "/v1/jobs/" + url.PathEscape(strings.Repeat("i", codecs.MaxIDLen)) + "/" + route})
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", route, b)
	}
}

// TestHistoryRoutesLegacyID: a job stored under an id of the earlier rules
// (" a", "a\u200bb", "tab ": the name rules refuse them, releases before them did
// not) keeps firing, and GET /v1/jobs/{id} serves it: its /fires and
// /history serve its history too, and answer 404 (not 400, not an empty
// 200) when it has none, so that no id the rules refuse reads as a job
// with an empty history.
func TestHistoryRoutesLegacyID(t *testing.T) {
	t.Parallel()
	full := newFixture(t, func(s *api.Server) {
		s.History = fakeHistory{fires: []views.Fire{{FireID: " a@2026-05-04T02:00:00Z", Status: "dispatched"}}, changes: []views.Change{{Op: "put", Offset: 1}}}
	})
	empty := newFixture(t, func(s *api.Server) { s.History = emptyHistory{} })
	for _, id := range []string{" a", "a\u200bb", "tab "} {
		require.Error(t, codecs.ValidateID(id), "%q breaks the name rules", id)
		require.True(t, codecs.IsLegacyID(id), "%q passes the earlier rules", id)
		for _, route := range []string{"fires", "history"} {
			path := "/v1/jobs/" + url.PathEscape(id) + "/" + route
			resp, b := full.do(t, request{method: http.MethodGet, path: path})
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, b)
			require.Contains(t, string(b), `"job_id":`, "%s", path)
			resp, b = empty.do(t, request{method: http.MethodGet, path: path})
			require.Equal(t, http.StatusNotFound, resp.StatusCode, "%s: %s", path, b)
			require.Equal(t, "not_found", decodeProblem(t, resp, b).Code, "%s", path)
		}
	}
}

// TestQueryParamsEmptyOrTwice: limit, next and from given empty or twice
// answer 400, as any other value outside their documented range (issue
// 20's schemathesis run: ?limit= was taken as absent).
func TestQueryParamsEmptyOrTwice(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(s *api.Server) {
		s.History = emptyHistory{}
		s.Jobs = newFakeJobs(sampleJob())
	})
	for _, path := range []string{"/v1/jobs?limit", "/v1/jobs/nightly/fires?limit", "/v1/jobs/nightly/history?limit", "/v1/jobs/nightly?next", "/v1/jobs/nightly?from"} {
		base, name, _ := strings.Cut(path, "?")
		good := "5"
		if name == "from" {
			good = "2030-01-01T00:00:00Z"
		}
		for _, q := range []string{name + "=", name + "=" + good + "&" + name + "=" + good, name + "=x"} {
			resp, b := f.do(t, request{method: http.MethodGet, path: base + "?" + q})
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s?%s: %s", base, q, b)
			require.Equal(t, name, decodeProblem(t, resp, b).Field, "%s?%s", base, q)
		}
		resp, b := f.do(t, request{method: http.MethodGet, path: base + "?" + name + "=" + url.QueryEscape(good)})
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s?%s=%s: %s", base, name, good, b)
	}
}
