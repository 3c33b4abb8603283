package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/topology"
)

// TestConsoleIsMountedBehindTheGuard: the console answers GET / and
// /console/… only, behind the Host check; other paths keep their problem
// answers, and /v1 stays the API's.
func TestConsoleIsMountedBehindTheGuard(t *testing.T) {
	t.Parallel()
	console := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "console")
		_, _ = w.Write([]byte("console " + r.URL.Path))
	})
	h := (&api.Server{Names: topology.Names{Prefix: "test-"}, Producer: &fakeProducer{}, Jobs: newFakeJobs(),
		AllowedHosts: api.LoopbackHosts("127.0.0.1:8080"), Console: console}).Handler()
	send := func(method, path, host string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, nil)
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for _, p := range []string{"/", "/console/app.js"} {
		rec := send(http.MethodGet, p, "127.0.0.1:8080")
		require.Equal(t, http.StatusOK, rec.Code, p)
		require.Equal(t, "console "+p, rec.Body.String())
		require.Equal(t, "console", rec.Header().Get("Content-Security-Policy"))
		require.Equal(t, http.StatusForbidden, send(http.MethodGet, p, "evil.example:8080").Code, p)
	}
	for _, tc := range []struct {
		method, path string
		code         int
	}{
		{http.MethodGet, "/elsewhere", http.StatusNotFound},
		{http.MethodGet, "/v1/nothing", http.StatusNotFound},
		{http.MethodPost, "/", http.StatusNotFound},
		{http.MethodPost, "/console/app.js", http.StatusNotFound},
		{http.MethodPost, "/v1/jobs", http.StatusMethodNotAllowed},
	} {
		rec := send(tc.method, tc.path, "127.0.0.1:8080")
		require.Equal(t, tc.code, rec.Code, "%s %s", tc.method, tc.path)
		require.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"), "%s %s", tc.method, tc.path)
	}
}

// TestWhoami: each token learns its own name, role and prefix, and the
// roles below write are refused writes whatever the console shows.
func TestWhoami(t *testing.T) {
	t.Parallel()
	var lines []string
	secrets := map[string]string{}
	for _, tk := range []struct {
		name   string
		role   api.Role
		prefix string
	}{{"reader", api.RoleRead, ""}, {"writer", api.RoleWrite, "acme."}, {"admin", api.RoleAdmin, ""}} {
		secret, line, err := api.NewToken(tk.name, tk.role, tk.prefix)
		require.NoError(t, err)
		secrets[tk.name] = secret
		lines = append(lines, line)
	}
	tokens, err := api.ParseTokens(strings.NewReader(strings.Join(lines, "\n")))
	require.NoError(t, err)
	h := (&api.Server{Names: topology.Names{Prefix: "test-"}, Producer: &fakeProducer{}, Jobs: newFakeJobs(), Tokens: tokens}).Handler()
	who := func(secret string) (int, api.Whoami) {
		req := httptest.NewRequest(http.MethodGet, "/v1/whoami", nil)
		if secret != "" {
			req.Header.Set("Authorization", "Bearer "+secret)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var w api.Whoami
		if rec.Code == http.StatusOK {
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &w))
		}
		return rec.Code, w
	}
	code, _ := who("")
	require.Equal(t, http.StatusUnauthorized, code)
	code, _ = who("chronos_wrong")
	require.Equal(t, http.StatusUnauthorized, code)
	code, w := who(secrets["reader"])
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, api.Whoami{Name: "reader", Role: "read"}, w)
	_, w = who(secrets["writer"])
	require.Equal(t, api.Whoami{Name: "writer", Role: "write", Prefix: "acme."}, w)
	_, w = who(secrets["admin"])
	require.Equal(t, api.Whoami{Name: "admin", Role: "admin"}, w)

	open := (&api.Server{Names: topology.Names{Prefix: "test-"}, Producer: &fakeProducer{}, Jobs: newFakeJobs()}).Handler()
	rec := httptest.NewRecorder()
	open.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/whoami", nil))
	require.JSONEq(t, `{"name":"anonymous","role":"admin"}`, rec.Body.String())
}

// TestListFiltersAreValidated: prefix and status are checked before the
// view is read; a view that cannot filter says so instead of ignoring them.
func TestListFiltersAreValidated(t *testing.T) {
	t.Parallel()
	h := (&api.Server{Names: topology.Names{Prefix: "test-"}, Producer: &fakeProducer{}, Jobs: newFakeJobs()}).Handler()
	for q, field := range map[string]string{
		"status=running":                      "status",
		"status=deleted":                      "status",
		"prefix=" + strings.Repeat("x", 2000): "prefix",
		"prefix=%C3":                          "prefix",
		"prefix=a":                            "prefix", // the fake view does not filter
		"owner=me":                            "owner",
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/jobs?"+q, nil))
		require.Equal(t, http.StatusBadRequest, rec.Code, q)
		var p api.Problem
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &p))
		require.Equal(t, field, p.Field, q)
	}
}
