package faults_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestLostLocalStateIsRestoredFromTheChangelog stops an instance, deletes
// its whole data dir (the worst case of an unclean stop with unsynced
// writes), and starts it again: the jobs come back from the changelog and
// every fire of the window is dispatched.
func TestLostLocalStateIsRestoredFromTheChangelog(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 4)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	cfg := env.Config()
	inst := env.Start(cfg)
	t0 := time.Date(2026, 9, 2, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	const jobs = 60
	for i := 0; i < jobs; i++ {
		env.Put(fmt.Sprintf("k%02d", i), codecs.JobDef{Every: "10s"}, t0)
	}
	env.WaitApplied()
	env.Tick(t0.Add(10 * time.Second))
	dispatch.WaitLen(t, jobs, time.Minute)
	inst.Stop()

	require.NoError(t, os.RemoveAll(cfg.DataDir))
	env.Start(cfg)
	for s := 2; s <= 4; s++ {
		env.Tick(t0.Add(time.Duration(s) * 10 * time.Second))
	}
	testenv.Eventually(t, time.Minute, func() error {
		got := map[string]bool{}
		for _, d := range dispatch.Dispatches(t) {
			got[d.FireID] = true
		}
		for i := 0; i < jobs; i++ {
			for s := 1; s <= 4; s++ {
				id := codecs.ScheduledFireID(fmt.Sprintf("k%02d", i), t0.Add(time.Duration(s)*10*time.Second))
				if !got[id] {
					return fmt.Errorf("missing %s", id)
				}
			}
		}
		return nil
	})
}
