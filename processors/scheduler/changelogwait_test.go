package scheduler

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/storage"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/topology"
)

// TestChangelogWaitIsTimed: a bucket chunk waits for its start and its end
// to reach the changelog (Config.Durable); each wait is one observation of
// chronos_changelog_wait_seconds.
func TestChangelogWaitIsTimed(t *testing.T) {
	t.Parallel()
	l := newBucketLog(t, 100, false, "j0", "j1")
	reg := prometheus.NewRegistry()
	l.s.cfg.Metrics = NewMetrics(reg)
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), bucketAt, l.nextOff(), bucketT46, false)
	require.Len(t, l.fired(), 2)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var n uint64
	for _, mf := range mfs {
		if mf.GetName() == "chronos_changelog_wait_seconds" {
			n = mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	require.Equal(t, uint64(2), n, "the chunk's start and end")
}

// TestCountedCallbacks: a callback that does not return (ctx.Fail panics,
// as does a bug) is counted, so a store open meanwhile does not close
// settled; one that returns is not.
func TestCountedCallbacks(t *testing.T) {
	t.Parallel()
	s := &Scheduler{}
	s.counted(func(goka.Context, any) {})(nil, nil)
	require.Zero(t, s.failedCallbacks.Load())
	require.Panics(t, func() { s.counted(func(goka.Context, any) { panic("ctx.Fail") })(nil, nil) })
	require.Equal(t, uint64(1), s.failedCallbacks.Load())
}

// fakeWrites is a ProcessorWrites whose failures the test sets.
type fakeWrites struct{ failed atomic.Uint64 }

func (w *fakeWrites) Failures() uint64                  { return w.failed.Load() }
func (w *fakeWrites) Flushed(ctx context.Context) error { return ctx.Err() }

// TestStoreClosesSettledOnlyWithoutFailures: a partition store built with
// Config.Writes is kept at its next Open after a close with nothing failed
// since it was built, and discarded after a write or a callback failed.
func TestStoreClosesSettledOnlyWithoutFailures(t *testing.T) {
	t.Parallel()
	for _, fail := range []string{"", "write", "callback"} {
		w := &fakeWrites{}
		s, err := New(Config{
			Layout:   topology.Layout{Names: topology.Names{Prefix: "p1."}, Partitions: 1, Replication: 1},
			DataDir:  t.TempDir(),
			Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
			Writes:   w,
			Producer: &recordingProducer{},
		})
		require.NoError(t, err)
		open := func() storage.Storage {
			st, err := s.StorageBuilder()(string(s.cfg.Layout.SchedulerTable()), 0)
			require.NoError(t, err)
			require.NoError(t, st.Open())
			return st
		}
		st := open()
		require.NoError(t, st.MarkRecovered())
		require.NoError(t, st.Set("k", []byte("v")))
		switch fail {
		case "write":
			w.failed.Add(1)
		case "callback":
			require.Panics(t, func() { s.counted(func(goka.Context, any) { panic("x") })(nil, nil) })
		}
		require.NoError(t, st.Close())
		st = open()
		v, err := st.Get("k")
		require.NoError(t, err)
		if fail == "" {
			require.Equal(t, []byte("v"), v, "closed settled: kept")
		} else {
			require.Nil(t, v, "a %s failed: discarded", fail)
		}
		require.NoError(t, st.Close())
	}
}
