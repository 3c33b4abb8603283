package main

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestBulkPathRoutesEveryPrefix sends the path bulkPath builds for valid
// prefixes, dot segments and escapes among them, through a mux with the
// API's pattern: each reaches the route with its prefix intact ("." and
// ".." sent as such were cleaned away by the mux into another route,
// adversary round 14).
func TestBulkPathRoutesEveryPrefix(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	var got string
	mux.HandleFunc("POST /v1/prefixes/{prefix}/pause", func(_ http.ResponseWriter, r *http.Request) { got = r.PathValue("prefix") })
	for _, p := range []string{".", "..", "...", "./", "../", "./x", "a/b", "a/./b", " .", ". ", "t%2F", "%2E", "é/..", "?#", "a b "} {
		require.NoError(t, codecs.ValidatePrefix(p), "%q", p)
		path, err := bulkPath("pause", "prefix", p)
		require.NoError(t, err)
		got = "\x00 not routed"
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, nil))
		require.Equal(t, http.StatusOK, rec.Code, "prefix %q as %s", p, path)
		require.Equal(t, p, got, "prefix %q as %s", p, path)
	}
	// The reserved prefix of Chronos's own keys is refused before a request.
	for _, p := range []string{"__chronos/", "__chronos/shard/1/0"} {
		_, err := bulkPath("delete", "prefix", p)
		require.ErrorContains(t, err, "reserved prefix", "%q", p)
	}
}
