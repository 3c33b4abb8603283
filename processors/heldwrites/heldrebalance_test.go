package heldwrites_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/clients"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/testenv/timebound"
)

// TestRebalanceWithAFullQueueOfHeldCommits is round 52's remaining idea:
// a rebalance that meets a full queue of held commits. One instance runs
// recurring jobs; the broker holds a put's scheduler-table write, and
// more rejected commands than clients.MaxHeldCommits arrive behind it
// (their rejects go through another client, so each is held only by its
// commit). A second instance joins while the write is held (its
// partitions are revoked from the first, whose callbacks are waiting for
// room), the write is released, and the second leaves again. Neither
// group may stop with an error (a revocation that met the full queue
// used to fail the waiting callback's commit, which stops goka's whole
// group), and every fire due arrives, none early.
func TestRebalanceWithAFullQueueOfHeldCommits(t *testing.T) {
	env := testenv.New(t, 2)
	if env.Broker == nil {
		t.Skip("the held write uses the embedded broker's request hooks (go test ./...)")
	}
	const marker = "heldrebalance"
	ctl := adv52Install(t, env, string(env.Layout.SchedulerTable()), marker)
	logs := &adv52Logs{}
	cfg := env.Config()
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	first := env.Start(cfg)
	defer first.Stop()

	t0 := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	want := adv52Want{}
	for i := range 10 {
		id := fmt.Sprintf("ev-%02d", i)
		env.Put(id, codecs.JobDef{Every: "10s", MisfireGrace: "10m"}, t0)
		for s := 1; s <= 6; s++ {
			at := t0.Add(time.Duration(s) * 10 * time.Second)
			want[codecs.ScheduledFireID(id, at)] = at
		}
	}
	env.WaitApplied()
	env.Tick(t0.Add(10 * time.Second))
	adv52Check(t, dispatch, want, t0.Add(10*time.Second), 30*time.Second)

	ctl.armed.Store(true)
	at := t0.Add(25 * time.Second)
	env.Put(marker, codecs.JobDef{At: at.Format(time.RFC3339)}, t0)
	want[codecs.ScheduledFireID(marker, at)] = at
	testenv.Eventually(t, 10*time.Second, func() error {
		if !ctl.held.Load() {
			return fmt.Errorf("the put's table write is not held yet")
		}
		return nil
	})
	n := clients.MaxHeldCommits + 200
	keys, values := make([]string, n), make([][]byte, n)
	for i := range n {
		keys[i], values[i] = fmt.Sprintf("bad-%04d", i), []byte("not a command")
	}
	env.ProduceMany(string(env.Layout.Jobs()), keys, values, t0)
	time.Sleep(2 * time.Second) // the queue fills; the partitions wait for room

	joined := make(chan *testenv.Instance, 1)
	go func() { joined <- env.Start(env.Config()) }() // ready once the rebalance is done
	time.Sleep(3 * time.Second)
	ctl.Release()
	var second *testenv.Instance
	select {
	case second = <-joined:
	case <-time.After(timebound.Scaled(90 * time.Second)):
		t.Fatal("the second instance was not ready 90 s after it joined (the held write was released after 3 s)")
	}
	for s := 2; s <= 4; s++ {
		now := t0.Add(time.Duration(s) * 10 * time.Second)
		env.Tick(now)
		adv52Check(t, dispatch, want, now, 60*time.Second)
	}
	second.Stop()
	for s := 5; s <= 6; s++ {
		now := t0.Add(time.Duration(s) * 10 * time.Second)
		env.Tick(now)
		adv52Check(t, dispatch, want, now, 60*time.Second)
	}
	restarts := adv52Lines(logs.String(), "processor stopped; restarting", 4)
	require.Empty(t, restarts, "a group of the first instance stopped with an error during the rebalances")
	rejects := 0
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "rejected input") {
			rejects++
		}
	}
	t.Logf("rejected inputs logged by the first instance: %d of %d", rejects, n)
}
