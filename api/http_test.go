//go:build unix

package api_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/topology"
)

// raiseFDLimit raises the soft open-file limit to the hard one and returns
// the soft limit now in force.
func raiseFDLimit(t *testing.T) uint64 {
	t.Helper()
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = lim.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			lim = raised
		}
	}
	return lim.Cur
}

// TestConnectionFlood holds thousands of connections that never send a
// byte, that trickle their headers (slowloris), that trickle the body of a
// request without a token, and that stay idle after a request (keep-alive),
// against a server limited to far fewer connections and timeouts far
// longer than the test, so that nothing but the limit frees a slot; then
// writes (with the token) and probes are still answered, and the server
// never holds more than its limit.
func TestConnectionFlood(t *testing.T) {
	// Not parallel: it needs most of the process' descriptors.
	const maxConns = 200
	fds := raiseFDLimit(t)
	// Each attacking connection costs two descriptors (both ends live in
	// this process) until evicted; leave room for the rest of the test.
	per := min(1000, int(fds-400)/8)
	require.Greater(t, per, 100, "open-file limit %d too low", fds)
	t.Logf("open-file limit %d: %d connections of each of 4 kinds against a limit of %d", fds, per, maxConns)

	prod := &fakeProducer{}
	srv := &api.Server{Names: topology.Names{Prefix: "test-"}, Producer: prod, Token: "s3cret",
		Gatherer: prometheus.NewRegistry()}
	reg := prometheus.NewRegistry()
	hs := api.NewHTTPServer(srv.Handler(), api.HTTPOptions{MaxConns: maxConns,
		ReadHeaderTimeout: time.Hour, ReadTimeout: time.Hour, IdleTimeout: time.Hour, Registerer: reg})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	addr := ln.Addr().String()

	var mu sync.Mutex
	var held []net.Conn
	t.Cleanup(func() {
		mu.Lock()
		for _, c := range held {
			_ = c.Close()
		}
		mu.Unlock()
		_ = hs.Close()
		<-done
	})
	dial := func(first string) {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		require.NoError(t, err)
		mu.Lock()
		held = append(held, c)
		mu.Unlock()
		if first != "" {
			_, _ = io.WriteString(c, first) // may fail once evicted
		}
	}
	kinds := map[string]string{
		"silent":    "",
		"slowloris": "GET /healthz HTTP/1.1\r\nHost: " + addr + "\r\nX-Slow: a",
		"slow body": "PUT /v1/jobs/x HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"every\"",
	}
	for kind, first := range kinds {
		for range per {
			dial(first)
		}
		t.Logf("%s: %d held, server open %d", kind, per, hs.Open())
	}
	// Keep-alive connections idle after a full answer.
	for range per {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		require.NoError(t, err)
		mu.Lock()
		held = append(held, c)
		mu.Unlock()
		_, err = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
		require.NoError(t, err)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		_ = resp.Body.Close()
	}
	require.LessOrEqual(t, hs.Open(), maxConns)

	// Writes and probes on fresh connections, each within a deadline.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range 20 {
		for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
			resp, err := client.Get("http://" + addr + path)
			require.NoError(t, err, path)
			_ = resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode, path)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, fmt.Sprintf("http://%s/v1/jobs/flood-%d", addr, i), strings.NewReader(`{"every":"1m"}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer s3cret")
		resp, err := client.Do(req)
		cancel()
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusAccepted, resp.StatusCode)
		dial("") // and the flood goes on
	}
	require.Len(t, prod.records(), 20)
	require.LessOrEqual(t, hs.Open(), maxConns)
	// One accept loop admits connections in order: once this probe is
	// answered, every connection dialled before it has been admitted, so
	// the counts below are final.
	resp, err := client.Get("http://" + addr + "/healthz")
	require.NoError(t, err)
	_ = resp.Body.Close()
	evicted, refused := hs.Shed()
	require.GreaterOrEqual(t, evicted, uint64(4*per-maxConns))
	require.Zero(t, refused, "no request was in a handler long enough to fill the slots")
	want := fmt.Sprintf(`
# HELP chronos_http_connections_shed_total Connections of the HTTP API closed at the connection limit: evicted (idle or sending headers) or refused (every slot busy).
# TYPE chronos_http_connections_shed_total counter
chronos_http_connections_shed_total{reason="evicted"} %d
chronos_http_connections_shed_total{reason="refused"} 0
`, evicted)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "chronos_http_connections_shed_total"))
	open, err := testutil.GatherAndCount(reg, "chronos_http_connections_open")
	require.NoError(t, err)
	require.Equal(t, 1, open)
}

// TestConnectionLimitRefusesWhenAllBusy fills every slot with a request in
// a handler: a new connection is closed (refused), not queued, and one
// freed slot serves again.
func TestConnectionLimitRefusesWhenAllBusy(t *testing.T) {
	t.Parallel()
	const maxConns = 5
	release := make(chan struct{})
	entered := make(chan struct{}, maxConns)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			entered <- struct{}{}
			<-release
		}
		w.WriteHeader(http.StatusOK)
	})
	hs := api.NewHTTPServer(h, api.HTTPOptions{MaxConns: maxConns})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	url := "http://" + ln.Addr().String()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

	var wg sync.WaitGroup
	for range maxConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Get(url + "/block")
			if err == nil {
				_ = resp.Body.Close()
			}
		}()
	}
	for range maxConns {
		<-entered
	}
	_, err = client.Get(url + "/now")
	require.Error(t, err, "a sixth connection while five requests are in handlers")
	_, refused := hs.Shed()
	require.Equal(t, uint64(1), refused)
	close(release)
	wg.Wait()
	resp, err := client.Get(url + "/now")
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestSlowHeadersAreCutOff: a connection that does not finish its headers
// within ReadHeaderTimeout is closed by the server.
func TestSlowHeadersAreCutOff(t *testing.T) {
	t.Parallel()
	hs := api.NewHTTPServer(http.NotFoundHandler(), api.HTTPOptions{ReadHeaderTimeout: 100 * time.Millisecond})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n")
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(30*time.Second)))
	_, err = io.ReadAll(c) // returns when the server closes the connection
	require.NoError(t, err)
	require.Eventually(t, func() bool { return hs.Open() == 0 }, 10*time.Second, 10*time.Millisecond)
}
