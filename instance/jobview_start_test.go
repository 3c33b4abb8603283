package instance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/instance"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestJobViewStartsAfterTheSchedulingGroups: the job view, which replays
// every partition of the scheduler's table, starts only once this
// instance's scheduling groups have recovered (docs/architecture.md,
// "Recovery: scheduling first"). While the scheduler group cannot open
// its stores (a file where its table's directory goes), the view has not
// started (no store of it on disk), reads of jobs answer 503
// view_unavailable and /readyz names the scheduler group; once the file
// is gone, the group recovers, the log says so, the view starts and the
// instance is ready.
//
//	go test -count 1 -run TestJobViewStartsAfterTheSchedulingGroups ./instance/
func TestJobViewStartsAfterTheSchedulingGroups(t *testing.T) {
	env := testenv.New(t, 2)
	logs := &syncBuffer{}
	cfg := env.Config()
	addr := testenv.FreeAddr(t)
	cfg.HTTP.Addr = addr
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	require.NoError(t, os.MkdirAll(cfg.DataDir, 0o755))
	blocker := filepath.Join(cfg.DataDir, string(cfg.Layout.SchedulerTable()))
	require.NoError(t, os.WriteFile(blocker, []byte("not a dir"), 0o644))

	ctx, cancel := context.WithCancel(context.Background())
	inst, err := instance.New(ctx, cfg)
	require.NoError(t, err)
	go func() { _ = inst.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-inst.Stopped()
	})

	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	testenv.Eventually(t, 30*time.Second, func() error {
		if code, _ := get("/healthz"); code != http.StatusOK {
			return fmt.Errorf("healthz %d", code)
		}
		return nil
	})
	// Long enough for a view started at once to have opened its stores.
	time.Sleep(3 * time.Second)
	_, err = os.Stat(filepath.Join(cfg.DataDir, "view"))
	require.True(t, os.IsNotExist(err), "the job view started before the scheduling groups recovered (%v)", err)
	for _, path := range []string{"/v1/jobs/some-job", "/v1/jobs"} {
		code, body := get(path)
		require.Equal(t, http.StatusServiceUnavailable, code, "%s: %s", path, body)
		var problem struct{ Code string }
		require.NoError(t, json.Unmarshal([]byte(body), &problem), body)
		require.Equal(t, "view_unavailable", problem.Code, "%s: %s", path, body)
	}
	code, body := get("/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, string(cfg.Layout.SchedulerGroup()))
	require.NotContains(t, logs.String(), "the scheduling groups have recovered")

	require.NoError(t, os.Remove(blocker))
	require.NoError(t, inst.WaitReady(ctxTimeout(t, 2*time.Minute)))
	out := logs.String()
	require.Contains(t, out, "the scheduling groups have recovered their partitions")
	require.NotContains(t, out, "starting the job view anyway")
	code, body = get("/v1/jobs/some-job")
	require.Equal(t, http.StatusNotFound, code, body)
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
