package instance_test

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/testenv"
)

// TestAdv57BrokenHistoryViewIsSilent: the history *view* of an instance
// cannot open its partition stores (a file where DataDir/history-view
// goes; the history group's own stores are fine). clients.View.Run
// returns the storage error at once, and nothing reads it:
// httpParts.run reads histDone only after ctx ends, and logs it only if
// the outer ctx is still live then (never, on a normal stop). So:
//   - no log line, at any level, names the failure — while the
//     ChronosHistoryNotReady alert (deploy/prometheus/alerts.yml) and
//     docs/deploy.md send the operator to "read the log for the history
//     group restarting (e.g. its store directory cannot be opened)";
//   - the view is never restarted (the history group is supervised, the
//     view is not): reads of runs answer 503 until the process restarts;
//   - HistoryReady (and so /metrics' reason) says "history view is
//     recovering" for a view that has stopped for good.
//
// Fixed: httpParts.run logs a view that stops on its own at once, and
// the view's Ready (so HistoryReady, /metrics' chronos_history_ready and
// its alert) says it stopped and why, not "recovering". The view is still
// not restarted: its storage failed, as a scheduler store's failure stops
// the process, and the log says to restart it.
//
//	go test -count 1 -run TestAdv57BrokenHistoryViewIsSilent -timeout 5m ./instance/
func TestAdv57BrokenHistoryViewIsSilent(t *testing.T) {
	env := testenv.New(t, 2)
	logs := &syncBuffer{}
	cfg := env.Config()
	cfg.HTTP.Addr = testenv.FreeAddr(t)
	cfg.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(logs), &slog.HandlerOptions{Level: slog.LevelDebug}))
	require.NoError(t, os.MkdirAll(cfg.DataDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cfg.DataDir, "history-view"), []byte("not a dir"), 0o644))
	inst := env.Start(cfg)

	// The history group runs and recovers; only the view is broken.
	testenv.Eventually(t, 60*time.Second, func() error {
		if err := inst.HistoryReady(); err == nil || !strings.Contains(err.Error(), "history view") {
			return io.ErrUnexpectedEOF
		}
		return nil
	})
	time.Sleep(3 * time.Second)
	require.NoError(t, inst.Ready(), "scheduling is not affected")
	err := inst.HistoryReady()
	t.Logf("HistoryReady: %v", err)
	require.ErrorContains(t, err, "history view stopped")

	// What an operator would look for: the failure in the log.
	out := logs.String()
	require.True(t, strings.Contains(out, "history view stopped") || strings.Contains(out, "history-view"),
		"nothing in the log (debug level included) says the history view failed to open its stores; HistoryReady says %q", err)
}
