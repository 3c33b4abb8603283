package instance_test

import (
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/testenv"
)

// TestAdv56BrokenHistoryGroupIsReported: the history group of an
// instance cannot open its partition stores (a file where its store
// directory goes), so it never runs: it is restarted with backoff for
// ever and the run history is never filled. Adversary round 56 found this
// silent after c578146: chronos_ready read 1 ("every group of this
// instance runs"), /readyz answered 200 and nothing the instance exported
// said the history group was down (before c578146 the instance stayed not
// ready and ChronosNotReady fired). Now readiness is the scheduling parts'
// on purpose (docs/architecture.md, "Recovery: scheduling first"), and
// the history has its own gauge, chronos_history_ready, which reads 0,
// and its own alert, ChronosHistoryNotReady.
func TestAdv56BrokenHistoryGroupIsReported(t *testing.T) {
	env := testenv.New(t, 2)
	logs := &syncBuffer{}
	cfg := env.Config()
	cfg.HTTP.Addr = testenv.FreeAddr(t)
	cfg.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(logs), &slog.HandlerOptions{Level: slog.LevelWarn}))
	require.NoError(t, os.MkdirAll(cfg.DataDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cfg.DataDir, string(env.Layout.HistoryTable())), []byte("not a dir"), 0o644))
	inst := env.Start(cfg)

	testenv.Eventually(t, 30*time.Second, func() error {
		if !strings.Contains(logs.String(), "processor stopped; restarting") {
			return io.ErrUnexpectedEOF
		}
		return nil
	})
	time.Sleep(3 * time.Second)
	select {
	case <-inst.Stopped():
		t.Fatalf("Run returned: %v", inst.Err())
	default:
	}
	resp, err := http.Get("http://" + cfg.HTTP.Addr + "/metrics")
	require.NoError(t, err)
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The scheduling parts are ready: the history does not hold them.
	require.NoError(t, inst.Ready())
	require.Equal(t, "\nchronos_ready 1\n", regexp.MustCompile(`\nchronos_ready \S+\n`).FindString(string(metrics)))
	// The history's own signals say it does not run.
	// "is not running" between two tries, "is recovering" while one
	// tries (supervise has set the failing processor).
	require.ErrorContains(t, inst.HistoryReady(), string(env.Layout.HistoryGroup()))
	require.Equal(t, "\nchronos_history_ready 0\n", regexp.MustCompile(`\nchronos_history_ready \S+\n`).FindString(string(metrics)),
		"chronos_history_ready while the history group cannot run")
}
