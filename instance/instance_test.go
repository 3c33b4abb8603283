package instance_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/instance"
	"github.com/chronos-scheduler/chronos/testenv"
)

func TestSmokeEveryJobFires(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 4)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	env.Start(env.Config())

	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	env.Put("a", codecs.JobDef{Every: "10s", Payload: []byte(`{"x":1}`)}, t0)
	env.Put("b", codecs.JobDef{Cron: "*/20 * * * * *"}, t0)
	env.WaitApplied()
	for i := 1; i <= 6; i++ {
		env.Tick(t0.Add(time.Duration(i) * 10 * time.Second))
	}
	dispatch.WaitLen(t, 9, 30*time.Second)
	ids := map[string]bool{}
	for _, d := range dispatch.Dispatches(t) {
		ids[d.FireID] = true
	}
	require.Contains(t, ids, "a@2026-03-01T00:00:10Z")
	require.Contains(t, ids, "a@2026-03-01T00:01:00Z")
	require.Contains(t, ids, "b@2026-03-01T00:00:20Z")
	require.Len(t, ids, 9)
}

// TestReadyNeedsTheClockToTick: an instance with its ticker is not ready
// before its first tick is acknowledged, and is once it has been.
func TestReadyNeedsTheClockToTick(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 2)
	cfg := env.Config()
	cfg.Clock.NoTicker = false
	sys, err := instance.New(t.Context(), cfg)
	require.NoError(t, err)
	require.ErrorContains(t, sys.Ready(), "not ticked")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sys.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	testenv.Eventually(t, 60*time.Second, sys.Ready)
}

// TestWaitReadySurfacesRunsError: when Run fails before the instance is
// ready (here its HTTP address is taken), WaitReady returns Run's error at
// once instead of waiting out its deadline.
func TestWaitReadySurfacesRunsError(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 1)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	cfg := env.Config()
	cfg.HTTP.Addr = taken.Addr().String()
	inst, err := instance.New(t.Context(), cfg)
	require.NoError(t, err)
	go func() { _ = inst.Run(t.Context()) }()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	err = inst.WaitReady(ctx)
	require.ErrorContains(t, err, "address already in use")
	require.NoError(t, ctx.Err(), "Run's error, not the deadline")
	<-inst.Stopped()
	require.ErrorContains(t, inst.Err(), "address already in use")
}
