package instance

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/api"
)

func TestWarnsWithoutCredentialsBeyondLoopback(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr, token string
		warn        bool
	}{
		{"127.0.0.1:8080", "", false},
		{"localhost:8080", "", false},
		{"[::1]:8080", "", false},
		{"0.0.0.0:8080", "", true},
		{":8080", "", true},
		{"10.1.2.3:8080", "", true},
		{"0.0.0.0:8080", "t", false},
	} {
		var buf bytes.Buffer
		h := HTTP{Addr: tc.addr, Token: tc.token}
		require.NoError(t, h.validate())
		h.warn(slog.New(slog.NewTextHandler(&buf, nil)))
		require.Equal(t, tc.warn, strings.Contains(buf.String(), "WITHOUT CREDENTIALS"), "%s: %s", tc.addr, buf.String())
	}
}

func TestRequireAuth(t *testing.T) {
	t.Parallel()
	require.ErrorIs(t, HTTP{Addr: ":0", RequireAuth: true}.validate(), ErrNoCredentials)
	require.NoError(t, HTTP{Addr: ":0", RequireAuth: true, InsecureNoAuth: true}.validate())
	require.NoError(t, HTTP{Addr: ":0", RequireAuth: true, Token: "t"}.validate())
	require.ErrorContains(t, HTTP{Addr: ":0", Token: "t", InsecureNoAuth: true}.validate(), "choose one")
}

func TestPprofDoesNotServeCmdline(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(pprofHandler())
	defer ts.Close()
	for path, want := range map[string]int{"/debug/pprof/cmdline": http.StatusNotFound, "/debug/pprof/heap": http.StatusOK} {
		resp, err := http.Get(ts.URL + path)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, want, resp.StatusCode, "%s: %s", path, b)
		require.NotContains(t, string(b), "instance.test -test.")
	}
}

func TestServePprof(t *testing.T) {
	stop, err := servePprof("", slog.Default())
	require.NoError(t, err)
	stop() // off: nothing to stop

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	stop, err = servePprof(addr, slog.Default())
	require.NoError(t, err)
	defer stop()
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?debug=1")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), "heap profile")
}

// TestProbeAddrServesOnlyProbes runs the probe listener of --probe-addr.
func TestProbeAddrServesOnlyProbes(t *testing.T) {
	t.Parallel()
	srv := &api.Server{Token: "s3cret"}
	h := HTTP{ProbeAddr: "127.0.0.1:0"}
	var logs bytes.Buffer // serveProbes logs before it returns, and only then
	stop, err := h.serveProbes(srv, api.HTTPOptions{}, slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	defer stop()
	var base string
	for _, f := range strings.Fields(logs.String()) {
		if u, ok := strings.CutPrefix(f, "probes="); ok {
			base = u
		}
	}
	require.NotEmpty(t, base, logs.String())
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/v1/jobs": 404, "/v1/jobs/x": 404} {
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, want, resp.StatusCode, path)
	}
}

func TestAllowedHosts(t *testing.T) {
	t.Parallel()
	h := HTTP{}
	require.Equal(t, []string{"localhost:8080", "127.0.0.1:8080", "[::1]:8080"}, h.allowedHosts("127.0.0.1:8080"))
	require.Nil(t, h.allowedHosts("0.0.0.0:8080"))
	h.AllowedHosts = []string{"Chronos.Example.com"}
	require.Equal(t, []string{"chronos.example.com"}, h.allowedHosts("0.0.0.0:8080"))
	require.Equal(t, []string{"chronos.example.com"}, h.allowedHosts("127.0.0.1:8080"))
}
