//go:build adversary19

package deploy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/processors/scheduler"
	"github.com/chronos-scheduler/chronos/testenv"
)

// slow is a dispatch producer that takes d per produce: a slow broker (or
// a fan-out that is CPU-bound), not a stuck one.
type slow struct {
	scheduler.Producer
	d time.Duration
}

func (s slow) ProduceSync(ctx context.Context, topic string, msgs []scheduler.Msg) error {
	time.Sleep(s.d) // the slowness simulated, not a wait for an effect
	return s.Producer.ProduceSync(ctx, topic, msgs)
}

// TestAdversary19SlowFanOut: issue 19 ("a fan-out backlog ... makes the
// shipped ScaledObject ask for more replicas"), the manifest ("12
// partitions 5 s behind ask for 3") and the scaling plan (lag.Simulate: one
// advance per partition per second behind on chronos-shard-triggers)
// promise that fires growing late show as shard-trigger lag.
// TestShippedScaledObjectSeesTheFanOut shows it only for a dispatch that
// blocks forever (the callback never returns). A fan-out that is merely
// slow returns after each ChunkBudget and continues through the loopback:
// every advance is consumed at once (each starts its own pass), so
// chronos-shard-triggers stays at 0-4 and the loopback holds about one
// continuation per pass under way (~10 per partition), far under its
// threshold of 100. Measured (4 partitions, 200 jobs every 1s, 100 ms per
// produce): after 24 live ticks 3,677 of 4,800 fires dispatched (about 6 s
// late, the backlog still growing), shard-triggers lag 3, loop lag 40: the
// ScaledObject asks for 1 replica at every poll; the plan's model asks 2.
// Run:
//
//	go test -count=1 -v -tags adversary19 -run Adversary19 ./deploy/
func TestAdversary19SlowFanOut(t *testing.T) {
	const partitions = 4
	env := testenv.New(t, partitions)
	so := lag.ScaledObjectFor(env.Layout)
	cl, err := env.Kafka.NewKgo()
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	t0 := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	for i := range 200 {
		env.Put(fmt.Sprintf("job-%03d", i), codecs.JobDef{Every: "1s"}, t0)
	}
	cfg := env.Config()
	cfg.Producer = slow{Producer: scheduler.KgoProducer{Client: env.Client}, d: 100 * time.Millisecond}
	cfg.Fanout.ChunkSize = 1
	cfg.Fanout.Budget = 50 * time.Millisecond
	env.Start(cfg)
	env.WaitApplied()
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	// A live clock: a tick a second; KEDA polls every other second here.
	var worst int64
	var lastLine string
	ticks := 0
	for i := 1; i <= 24; i++ {
		env.Tick(t0.Add(time.Duration(i) * time.Second))
		ticks = i
		time.Sleep(time.Second) // the clock's resolution, simulated live
		if i%2 != 0 {
			continue
		}
		var parts []lag.Partition
		testenv.Eventually(t, 60*time.Second, func() (err error) {
			parts, err = lag.Measure(context.Background(), adm, lag.Earliest, so.Targets()...)
			return err
		})
		n, vs := so.Replicas(parts, 0)
		var b strings.Builder
		for _, v := range vs {
			fmt.Fprintf(&b, "%s=%d ", strings.TrimPrefix(v.Trigger.Topic, env.Layout.Prefix), v.Lag)
		}
		lastLine = fmt.Sprintf("tick %d: replicas %d, lag %s, fires dispatched %d of %d due", i, n, b.String(), dispatch.Len(), 200*i)
		t.Log(lastLine)
		worst = max(worst, n)
	}
	// The fires are seconds behind on every partition; the plan's model
	// (one advance per partition per second behind, threshold 20) asks
	// for ceil(partitions*behind/20).
	behind := int64(ticks) - int64(dispatch.Len()/200)
	want := so.Bound((partitions*behind + 19) / 20)
	require.GreaterOrEqual(t, worst, want, "fan-out %d s behind; the plan predicts %d replicas; last: %s", behind, want, lastLine)
}
