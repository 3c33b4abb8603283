package faults_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/instance"
	"github.com/chronos-scheduler/chronos/store"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/topology"
)

// TestFullDiskStopsTheInstanceAndARestartLosesNothing: the partition stores'
// disk fills up while the instance runs. The instance stops with a fatal
// storage error (Run returns it, so the process exits and is restarted); a
// new instance on a fresh disk recovers the partitions from the changelog,
// and every fire of the window is dispatched.
func TestFullDiskStopsTheInstanceAndARestartLosesNothing(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 4)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	var full atomic.Bool
	cfg := env.Config()
	cfg.Store.Sync = true // with NoSync pebble's fatal comes from a background goroutine and crashes the process
	cfg.Store.FS = errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		if full.Load() && op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
			return syscall.ENOSPC
		}
		return nil
	}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sys, err := instance.New(ctx, cfg)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- sys.Run(ctx) }()
	testenv.Eventually(t, time.Minute, sys.Ready)

	t0 := time.Date(2026, 9, 3, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	const jobs = 30
	for i := 0; i < jobs; i++ {
		env.Put(fmt.Sprintf("d%02d", i), codecs.JobDef{Every: "10s", MisfireGrace: "10m"}, t0)
	}
	env.WaitApplied()
	env.Tick(t0.Add(10 * time.Second))
	dispatch.WaitLen(t, jobs, time.Minute)

	full.Store(true)
	env.Tick(t0.Add(20 * time.Second))
	select {
	case err := <-done:
		require.ErrorIs(t, err, store.ErrFatal, "the instance stops loudly")
		require.ErrorContains(t, err, "no space left on device")
	case <-time.After(time.Minute):
		t.Fatal("the instance kept running on a full disk")
	}

	restart := env.Config() // a fresh disk, as after freeing space or moving the pod
	env.Start(restart)
	env.Tick(t0.Add(30 * time.Second))
	testenv.Eventually(t, time.Minute, func() error {
		got := map[string]bool{}
		byJob := map[string][]string{}
		for _, d := range dispatch.Dispatches(t) {
			got[d.FireID] = true
			byJob[d.JobID] = append(byJob[d.JobID], fmt.Sprintf("%s(missed %d)", d.FireID, d.Missed))
		}
		var missing []string
		for i := 0; i < jobs; i++ {
			id := fmt.Sprintf("d%02d", i)
			for s := 1; s <= 3; s++ {
				if fid := codecs.ScheduledFireID(id, t0.Add(time.Duration(s)*10*time.Second)); !got[fid] {
					// what the job did get, and its partition, say whether
					// it is late (nothing yet on its partition) or lost
					missing = append(missing, fmt.Sprintf("%s (partition %d; its fires: %v)", fid, topology.Partition(id, env.Layout.Partitions), byJob[id]))
				}
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("%d fires missing: %s", len(missing), strings.Join(missing, "; "))
		}
		return nil
	})
}
