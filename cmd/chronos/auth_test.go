package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/instance"
)

// clearAuthEnv makes the test independent of the caller's environment.
func clearAuthEnv(t *testing.T) {
	for _, f := range []string{"api-token", "tokens-file", "insecure-no-auth"} {
		t.Setenv(EnvName(f), "")
		require.NoError(t, os.Unsetenv(EnvName(f)))
	}
}

func TestRunRefusesToStartWithoutCredentials(t *testing.T) {
	clearAuthEnv(t)
	// No broker behind this address: the refusal comes before connecting.
	_, err := run(t, "run", "--brokers", "127.0.0.1:1", "--data-dir", t.TempDir())
	require.ErrorIs(t, err, instance.ErrNoCredentials)
	require.ErrorContains(t, err, "--insecure-no-auth")

	tokens := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(tokens, []byte("name=x role=read\n"), 0o600))
	_, err = run(t, "run", "--brokers", "127.0.0.1:1", "--data-dir", t.TempDir(), "--tokens-file", tokens)
	require.ErrorIs(t, err, api.ErrBadTokens)
	_, err = run(t, "run", "--brokers", "127.0.0.1:1", "--data-dir", t.TempDir(), "--tokens-file", tokens, "--insecure-no-auth")
	require.ErrorContains(t, err, "choose one")
}

func TestSecretFlagWarnings(t *testing.T) {
	clearAuthEnv(t)
	warned := func(env map[string]string, args ...string) string {
		for k, v := range env {
			t.Setenv(k, v)
		}
		root := newRoot()
		var out, errOut bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errOut)
		root.SetArgs(args)
		_ = root.ExecuteContext(t.Context())
		return errOut.String()
	}
	unreachable := []string{"--api", "http://127.0.0.1:1"}
	got := warned(nil, append([]string{"jobs", "get", "x", "--api-token", "s3cret"}, unreachable...)...)
	require.Contains(t, got, "--api-token on the command line is visible")
	require.NotContains(t, got, "s3cret")
	got = warned(nil, "tail", "--brokers", "127.0.0.1:1", "--sasl-mechanism", "PLAIN", "--sasl-user", "u", "--sasl-password", "pw", "--timeout", "1ms")
	require.Contains(t, got, "--sasl-password on the command line is visible")
	got = warned(map[string]string{EnvName("api-token"): "s3cret"}, append([]string{"jobs", "get", "x"}, unreachable...)...)
	require.NotContains(t, got, "visible")
}

func TestTokensNew(t *testing.T) {
	t.Parallel()
	// The file's directory does not exist yet (like /etc/chronos on a new host).
	file := filepath.Join(t.TempDir(), "etc", "chronos", "tokens")
	out, err := run(t, "tokens", "new", "--name", "acme-ci", "--role", "write", "--prefix", "acme.", "--append", file)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4, out)
	secret, line := lines[1], lines[3]
	stored, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, line+"\n", string(stored))
	require.NotContains(t, string(stored), secret)
	fi, err := os.Stat(file)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	tok, err := api.LoadTokens(file)
	require.NoError(t, err)
	p, ok := tok.Authenticate(secret)
	require.True(t, ok)
	require.Equal(t, api.Principal{Name: "acme-ci", Role: api.RoleWrite, Prefix: "acme."}, p)

	_, err = run(t, "tokens", "new", "--name", "acme-ci", "--role", "read", "--append", file)
	require.ErrorContains(t, err, "used twice")
	_, err = run(t, "tokens", "new", "--name", "x", "--role", "root")
	require.ErrorContains(t, err, "want read, write or admin")
	out, err = run(t, "tokens", "new", "--name", "ro", "--role", "read")
	require.NoError(t, err)
	require.Contains(t, out, "name=ro role=read sha256=")
}

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// startRun runs `chronos run` with args on a kfake cluster until the test
// ends and returns the cluster's addresses and the API's base URL once
// /healthz answers.
func startRun(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.BrokerConfigs(map[string]string{"default.replication.factor": "1"}))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	addr := freeAddr(t)
	dataDir := t.TempDir() // before the cleanup below, so removed after it
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		root := newRoot()
		root.SetOut(io.Discard)
		root.SetArgs(append([]string{"run", "--brokers", strings.Join(c.ListenAddrs(), ","), "--http-addr", addr,
			"--data-dir", dataDir, "--partitions", "2"}, args...))
		done <- root.ExecuteContext(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("run did not return")
		}
	})
	base := "http://" + addr
	require.Eventually(t, func() bool {
		select {
		case err := <-done:
			t.Fatalf("run returned early: %v", err)
		default:
		}
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 60*time.Second, 50*time.Millisecond)
	return c.ListenAddrs(), base
}

func put(t *testing.T, base, id, token string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, base+"/v1/jobs/"+id, strings.NewReader(`{"every":"1h"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	t.Logf("PUT %s: %d %s", id, resp.StatusCode, b)
	return resp.StatusCode
}

// TestRunWithTokensFile runs an instance with a tokens file: a put without
// a token is refused, one with a tenant's token outside its prefix too, one
// inside is written to chronos-jobs with the token's name in the
// chronos-actor header.
func TestRunWithTokensFile(t *testing.T) {
	clearAuthEnv(t)
	file := filepath.Join(t.TempDir(), "tokens")
	out, err := run(t, "tokens", "new", "--name", "acme-ci", "--role", "write", "--prefix", "acme.", "--append", file)
	require.NoError(t, err)
	secret := strings.Split(out, "\n")[1]
	brokers, base := startRun(t, "--tokens-file", file)

	require.Equal(t, http.StatusUnauthorized, put(t, base, "acme.a", ""))
	require.Equal(t, http.StatusForbidden, put(t, base, "globex.a", secret))
	status := put(t, base, "acme.a", secret)
	require.Contains(t, []int{http.StatusOK, http.StatusAccepted}, status)

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics("chronos-jobs"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) == 0 {
		f := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		recs = append(recs, f.Records()...)
	}
	require.Len(t, recs, 1, "only the accepted put reaches chronos-jobs")
	require.Equal(t, "acme.a", string(recs[0].Key))
	require.Equal(t, []kgo.RecordHeader{{Key: api.ActorHeader, Value: []byte("acme-ci")}}, recs[0].Headers)

	// A record produced directly, without the header, and another job's.
	for _, r := range []*kgo.Record{
		{Topic: "chronos-jobs", Key: []byte("acme.a"), Value: []byte(`{"v":1,"op":"pause"}`), Partition: recs[0].Partition},
		{Topic: "chronos-jobs", Key: []byte("acme.b"), Value: []byte(`{"v":1,"op":"delete"}`), Partition: recs[0].Partition},
	} {
		require.NoError(t, cl.ProduceSync(ctx, r).FirstErr())
	}
	out, err = run(t, "history", "acme.a", "--brokers", strings.Join(brokers, ","), "-o", "json")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	require.Contains(t, lines[0], `"actor":"acme-ci","op":"put"`)
	require.Contains(t, lines[1], `"actor":"-","op":"pause"`)
	out, err = run(t, "history", "acme.a", "--brokers", strings.Join(brokers, ","))
	require.NoError(t, err)
	require.Contains(t, out, `"acme-ci"  put`)
}

// TestRunStartsWithInsecureNoAuth: with the explicit flag, run starts and
// serves the API to anyone, but still refuses a cross-origin write.
func TestRunStartsWithInsecureNoAuth(t *testing.T) {
	clearAuthEnv(t)
	_, base := startRun(t, "--insecure-no-auth")
	require.Contains(t, []int{http.StatusOK, http.StatusAccepted}, put(t, base, "open", ""))
	req, err := http.NewRequest(http.MethodPost, base+"/v1/jobs/open/pause", strings.NewReader("{}"))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("Origin", "https://evil.example")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	// The Host check: the instance listens on loopback.
	req, err = http.NewRequest(http.MethodGet, base+"/v1/jobs", nil)
	require.NoError(t, err)
	req.Host = fmt.Sprintf("rebound.example:%s", strings.Split(base, ":")[2])
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
}

// TestCLIBoundsAnswers: an answer over maxAnswer is an error, not read into
// memory whole; one at the limit is printed.
func TestCLIBoundsAnswers(t *testing.T) {
	t.Parallel()
	size := maxAnswer
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		n := size
		if r.URL.Path == "/v1/jobs/big/pause" {
			n = maxAnswer + 1
		}
		_, _ = w.Write(bytes.Repeat([]byte(" "), n))
	}))
	defer ts.Close()
	out, err := run(t, "jobs", "pause", "big", "--api", ts.URL)
	requireExit(t, err, 2, "over 16777216 bytes")
	require.Empty(t, out)
	out, err = run(t, "jobs", "pause", "fits", "--api", ts.URL)
	require.NoError(t, err)
	require.Len(t, out, maxAnswer)
}

func TestAPITokenFile(t *testing.T) {
	clearAuthEnv(t)
	got := make(chan string, 10) // one per request: the CLI may read the job first
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.Header.Get("Authorization"):
		default:
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "{}")
	}))
	defer ts.Close()
	file := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(file, []byte("chronos_s3cret\r\n"), 0o600))
	_, err := run(t, "jobs", "pause", "x", "--api", ts.URL, "--api-token-file", file)
	require.NoError(t, err)
	require.Equal(t, "Bearer chronos_s3cret", <-got)
	_, err = run(t, "jobs", "pause", "x", "--api", ts.URL, "--api-token-file", file, "--api-token", "other")
	require.ErrorContains(t, err, "give one")
	_, err = run(t, "trigger", "b", "--api", ts.URL, "--api-token-file", filepath.Join(t.TempDir(), "missing"))
	require.ErrorContains(t, err, "api token file")
}
