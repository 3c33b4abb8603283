package instance_test

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/instance"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/testenv/datadir"
)

// syncBuffer is a log destination tests read while the instance writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

const discardedLog = "the partition store was not closed settled"

// TestStoreAheadOfChangelogIsDiscardedAfterACrash: a partition store that
// holds a write its changelog never got (goka writes the store at once and
// the changelog asynchronously; here written into the store directly) and
// is then copied as it is on disk, as a kill leaves it, is discarded by the
// instance that starts on the copy: the partition is restored from its
// changelog, and the job fires with the payload the changelog has. The
// instance stopped cleanly keeps its stores (nothing discarded) and fires
// the same.
func TestStoreAheadOfChangelogIsDiscardedAfterACrash(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 2)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	logs := &syncBuffer{}
	withLog := func(cfg instance.Config) instance.Config {
		cfg.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(logs, testWriter{t}), &slog.HandlerOptions{Level: slog.LevelWarn}))
		return cfg
	}
	cfg := withLog(env.Config())
	first := env.Start(cfg)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	env.Put("a", codecs.JobDef{Every: "10s", Payload: []byte(`{"v":1}`)}, t0)
	env.WaitApplied()

	// A write of the store the changelog does not have: a's payload v2.
	var found bool
	for p := int32(0); p < env.Layout.Partitions; p++ {
		st := first.Scheduler().Store(p)
		if st == nil {
			continue
		}
		v, err := st.Get("a")
		require.NoError(t, err)
		if v == nil {
			continue
		}
		rec, err := codecs.DecodeJobRecord(v)
		require.NoError(t, err)
		rec.Job.Payload = []byte(`{"v":2}`)
		require.NoError(t, st.Set("a", codecs.EncodeJobRecord(rec)))
		require.NoError(t, st.Sync())
		found = true
	}
	require.True(t, found, "a's record in a partition store")
	// The data dir as a kill leaves it: copied while the instance runs.
	crashed := t.TempDir()
	datadir.CopyAsKilled(t, cfg.DataDir, crashed)
	first.Stop()
	require.NotContains(t, logs.String(), discardedLog)

	// The instance on the crashed copy discards the unsettled stores and
	// restores them from the changelog: a fires with v1.
	crashCfg := withLog(env.Config())
	crashCfg.DataDir = crashed
	second := env.Start(crashCfg)
	require.Contains(t, logs.String(), discardedLog)
	env.Tick(t0.Add(10 * time.Second))
	dispatch.WaitLen(t, 1, 30*time.Second)
	second.Stop()
	d := dispatch.Dispatches(t)
	require.Equal(t, "a@2026-03-01T00:00:10Z", d[0].FireID)
	require.JSONEq(t, `{"v":1}`, string(d[0].Payload), "the payload of the changelog, not the crashed store's")

	// A clean stop: the next instance on the same data dir keeps its stores.
	logs2 := &syncBuffer{}
	cfg3 := env.Config()
	cfg3.DataDir = crashed
	cfg3.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(logs2, testWriter{t}), &slog.HandlerOptions{Level: slog.LevelWarn}))
	third := env.Start(cfg3)
	env.Tick(t0.Add(20 * time.Second))
	dispatch.WaitLen(t, 2, 30*time.Second)
	third.Stop()
	require.NotContains(t, logs2.String(), discardedLog, "a clean stop keeps the stores")
	d = dispatch.Dispatches(t)
	require.Len(t, d, 2)
	require.Equal(t, "a@2026-03-01T00:00:20Z", d[1].FireID)
	require.JSONEq(t, `{"v":1}`, string(d[1].Payload))
}

// testWriter sends log lines to the test's log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
