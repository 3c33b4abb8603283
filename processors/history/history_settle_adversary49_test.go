package history_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/testenv/datadir"
	"github.com/chronos-scheduler/chronos/topology"
)

// adv49Fires returns how many fires GET /v1/jobs/{job}/fires lists, and
// its status code.
func adv49Fires(t *testing.T, addr, job string) (int, int) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/v1/jobs/" + job + "/fires")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var fires struct {
		Fires []json.RawMessage `json:"fires"`
	}
	_ = json.Unmarshal(b, &fires)
	return len(fires.Fires), resp.StatusCode
}

// adv49Log is a log destination the test reads while the instance writes.
type adv49Log struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *adv49Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *adv49Log) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// TestAdversary49LongKeyedDispatchIsRejected (fixed): Validate bounds a
// history record by --history-fires and --history-changes with a job id
// of at most codecs.MaxIDLen bytes, but the history group folded a
// dispatch event whatever the length of its key (results and commands
// went through ValidateID). With --batch-bytes 128 KiB (accepted) one
// dispatch event keyed by a 140 kB job id made a history record whose
// changelog write failed (MESSAGE_TOO_LARGE) every time: the partition
// stopped, its store was discarded and restored, the event was consumed
// again and failed again (6 stops in 45 s). Now such an event is
// rejected, and the events after it on its partition are folded.
func TestAdversary49LongKeyedDispatchIsRejected(t *testing.T) {
	env := testenv.New(t, 3)
	logs := &adv49Log{}
	cfg := env.Config()
	cfg.History.Only = true
	cfg.Kafka.BatchBytes = 128 << 10
	cfg.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(logs, adv49TestWriter{t}), &slog.HandlerOptions{Level: slog.LevelWarn}))
	require.NoError(t, cfg.Validate(), "the settings are accepted")
	cfg.HTTP.Addr = testenv.FreeAddr(t)
	inst := env.Start(cfg)
	defer inst.Stop()
	dispatch := string(env.Layout.Dispatch())
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

	long := "j" + strings.Repeat("x", 140_000)
	env.Produce(dispatch, long, adv48Manual(long, "m1", t0, nil), t0)
	bad := topology.Partition(long, 3)
	var same string
	for i := 0; ; i++ {
		if k := fmt.Sprintf("good-%d", i); topology.Partition(k, 3) == bad {
			same = k
			break
		}
	}
	env.Produce(dispatch, same, adv48Manual(same, "m1", t0, nil), t0)
	testenv.Eventually(t, time.Minute, func() error {
		if n, _ := adv49Fires(t, cfg.HTTP.Addr, same); n != 1 {
			return fmt.Errorf("%s has %d fires", same, n)
		}
		return nil
	})
	require.Zero(t, logs.count("processor stopped; restarting"), "the long-keyed event stopped the history group")
	require.Positive(t, logs.count("rejected input"), "the long-keyed event was rejected")
}

type adv49TestWriter struct{ t *testing.T }

func (w adv49TestWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestAdversary49HeldCleanStopKeepsCrashCopyRestores: a history-only
// instance folds fires of 30 jobs on 3 partitions; its data dir copied
// while it runs (a kill) is discarded by the next instance on it, which
// restores every partition from the changelog and serves the same fires
// over the API; the instance stopped cleanly keeps its stores (nothing
// discarded) and serves the same.
func TestAdversary49HeldCleanStopKeepsCrashCopyRestores(t *testing.T) {
	const jobs = 30
	env := testenv.New(t, 3)
	dispatch := string(env.Layout.Dispatch())
	group := string(env.Layout.HistoryGroup())
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	start := func(dir string) (*testenv.Instance, *adv49Log, string) {
		logs := &adv49Log{}
		cfg := env.Config()
		cfg.History.Only = true
		if dir != "" {
			cfg.DataDir = dir
		}
		cfg.HTTP.Addr = testenv.FreeAddr(t)
		cfg.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(logs, adv49TestWriter{t}), &slog.HandlerOptions{Level: slog.LevelWarn}))
		return env.Start(cfg), logs, cfg.HTTP.Addr
	}
	dir := t.TempDir()
	first, logs1, _ := start(dir)
	var keys []string
	var vals [][]byte
	for i := range jobs {
		id := fmt.Sprintf("job-%02d", i)
		for f := range 3 {
			keys, vals = append(keys, id), append(vals, adv48Manual(id, fmt.Sprintf("f%d", f), t0.Add(time.Duration(f)*time.Minute), nil))
		}
	}
	env.ProduceMany(dispatch, keys, vals, t0)
	env.WaitConsumed(group, dispatch, time.Minute)
	crashed := t.TempDir()
	datadir.CopyAsKilled(t, dir, crashed)
	first.Stop()
	require.Zero(t, logs1.count("discarded (moved aside)"))

	// A partition not yet (re)assigned answers 503 for a moment (the
	// group rebalances after the previous member left); then every job's
	// three fires.
	check := func(addr string) {
		for i := range jobs {
			id := fmt.Sprintf("job-%02d", i)
			testenv.Eventually(t, time.Minute, func() error {
				if n, code := adv49Fires(t, addr, id); code != http.StatusOK || n != 3 {
					return fmt.Errorf("%s: %d, %d fires", id, code, n)
				}
				return nil
			})
		}
	}
	second, logs2, addr2 := start(crashed)
	require.Positive(t, logs2.count("discarded (moved aside)"), "the crashed copy is discarded")
	check(addr2)
	second.Stop()

	third, logs3, addr3 := start(dir)
	check(addr3)
	third.Stop()
	require.Zero(t, logs3.count("discarded (moved aside)"), "a clean stop keeps the stores")
}
