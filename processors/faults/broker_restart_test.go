package faults_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/embedded"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestBrokerRestartLosesNothing stops the embedded broker (persisted in a
// data dir) while an instance runs, lets simulated time pass, starts the
// broker again on the same address and checks that every fire of the whole
// window is dispatched at least once.
func TestBrokerRestartLosesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, err := embedded.Start(embedded.Options{Partitions: 4, DataDir: dir})
	require.NoError(t, err)
	addr := b.Addrs()[0]
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			b.Close()
		}
	})
	env := testenv.NewOn(t, 4, []string{addr})
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	env.Start(env.Config())
	t0 := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	const jobs = 40
	for i := 0; i < jobs; i++ {
		env.Put(fmt.Sprintf("j%02d", i), codecs.JobDef{Every: "10s", MisfireGrace: "10m"}, t0)
	}
	env.WaitApplied()
	for s := 1; s <= 3; s++ {
		env.Tick(t0.Add(time.Duration(s) * 10 * time.Second))
	}
	dispatch.WaitLen(t, 3*jobs, time.Minute)

	b.Close()
	stopped = true
	time.Sleep(2 * time.Second) // Chronos runs without a broker for a while
	b, err = embedded.Start(embedded.Options{Addr: addr, Partitions: 4, DataDir: dir})
	require.NoError(t, err)
	stopped = false

	for s := 4; s <= 6; s++ {
		env.Tick(t0.Add(time.Duration(s) * 10 * time.Second))
	}
	want := map[string]bool{}
	for i := 0; i < jobs; i++ {
		for s := 1; s <= 6; s++ {
			want[codecs.ScheduledFireID(fmt.Sprintf("j%02d", i), t0.Add(time.Duration(s)*10*time.Second))] = true
		}
	}
	testenv.Eventually(t, 2*time.Minute, func() error {
		got := map[string]bool{}
		for _, d := range dispatch.Dispatches(t) {
			got[d.FireID] = true
		}
		for id := range want {
			if !got[id] {
				return fmt.Errorf("%d of %d fires, e.g. %s missing", len(got), len(want), id)
			}
		}
		return nil
	})
}
