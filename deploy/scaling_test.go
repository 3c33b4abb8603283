package deploy

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/deploy/deploytest"
	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/processors/scheduler"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/topology"
)

// kafkaAsks is the replica count so's Kafka triggers ask for now (without
// the lateness trigger, as with Prometheus down), and each trigger's lag by
// unprefixed topic.
func kafkaAsks(t *testing.T, env *testenv.Env, adm *kadm.Client, so lag.ScaledObject) (int64, map[string]int64) {
	t.Helper()
	n, verdicts := so.Replicas(deploytest.Measure(t, adm, so), 0)
	return n, deploytest.ByTopic(env, verdicts)
}

// requireKEDAVersion: the version a manifest names is the one the parity
// test (testenv/keda) runs.
func requireKEDAVersion(t *testing.T, so map[string]any) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s*github.com/kedacore/keda/v2 (v\S+)$`).FindSubmatch(deploytest.ReadFile(t, "testenv/keda/go.mod"))
	require.NotNil(t, m, "testenv/keda/go.mod requires no KEDA")
	require.Equal(t, string(m[1]), deploytest.Str(deploytest.Get(so, "metadata", "annotations", "chronos-scheduler.io/keda-version")))
}

// gate is a dispatch producer that, once armed, blocks the first fire
// produced until opened: one partition's fan-out that cannot dispatch (a
// callback stuck on a broker that does not answer), the instance's other
// partitions going on. Every other produce passes.
type gate struct {
	scheduler.Producer
	armed  atomic.Bool
	open   chan struct{}
	called chan struct{}
}

func (g *gate) ProduceSync(ctx context.Context, topic string, msgs []scheduler.Msg) error {
	if g.armed.CompareAndSwap(true, false) {
		close(g.called)
		<-g.open
	}
	return g.Producer.ProduceSync(ctx, topic, msgs)
}

// TestShippedScaledObjectSeesTheFanOut drives the two backlogs the shipped
// ScaledObject (deploy/kubernetes/keda-scaledobject.yaml, read from the
// file) must answer, on a real broker and real processors, and checks the
// replica count its triggers ask for together (the largest, as the HPA
// takes it) rises with each:
//  1. a burst of commands with no instance running: the chronos-jobs
//     trigger;
//  2. with every command applied (no command backlog), a partition whose
//     fan-out cannot dispatch while the clock keeps advancing and the
//     instance's other partitions consume the advances: the stuck
//     partition's lateness (the announced time minus its watermark, read
//     from the instance's registry as Prometheus would scrape it) grows a
//     second a tick, and the lateness trigger asks for a replica per 5 s of
//     it; once the dispatch flows again the partition catches up and the
//     count falls back to the minimum.
//
// Until adversary round 19c the second half read the chronos-shard-triggers
// Kafka trigger (advances piling up behind a stuck fan-out); that trigger
// is gone (its lag is not fires being late: TestFanoutInputsDoNotScaleOut),
// and a stuck partition is read in seconds of lateness instead. A fan-out
// stuck on every partition of every pod is not a capacity problem (more
// replicas would wait on the same broker): ChronosClockStalled and
// ChronosFiresLate report it (TestClockAheadOfTicksAlerts covers the age).
func TestShippedScaledObjectSeesTheFanOut(t *testing.T) {
	t.Parallel()
	const partitions = 4
	env := testenv.New(t, partitions)
	so := deploytest.ShippedFor(t, env)
	adm := deploytest.Admin(t, env)
	names := topology.Names{}
	asks := func() (int64, map[string]int64) {
		t.Helper()
		return kafkaAsks(t, env, adm, so)
	}
	jobs := string(names.Jobs())

	// 1. A burst of commands, nobody consuming: 1,001-2,000 per replica
	// (a tenth of them due every second, for part 2; the rest daily).
	t0 := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC) // simulated time, behind any broker's clock
	n, byTopic := asks()
	require.Equal(t, int64(1), n, "idle: the minimum")
	var burst []int64
	for round := range 3 {
		keys, vals := make([]string, 1500), make([][]byte, 1500)
		for i := range keys {
			def := codecs.JobDef{Every: "24h"}
			if i < 150 {
				def.Every = "1s"
			}
			keys[i] = fmt.Sprintf("job-%d-%04d", round, i)
			vals[i] = testenv.PutCommand(keys[i], def)
		}
		env.ProduceMany(string(env.Layout.Jobs()), keys, vals, t0)
		n, byTopic = asks()
		require.Equal(t, int64(1500*(round+1)), byTopic[jobs])
		burst = append(burst, n)
	}
	require.Equal(t, []int64{2, 3, 4}, burst, "ceil(1,500, 3,000, 4,500 / %d), then maxReplicaCount: the %d partitions", lag.CommandsPerReplica, partitions)

	// 2. An instance applies the commands and completes one advance.
	g := &gate{Producer: scheduler.KgoProducer{Client: env.Client}, open: make(chan struct{}), called: make(chan struct{})}
	reg := prometheus.NewRegistry()
	cfg := env.Config()
	cfg.Producer = g
	cfg.Registerer = reg
	inst := env.Start(cfg)
	var opened sync.Once
	release := func() { opened.Do(func() { close(g.open) }) }
	t.Cleanup(release) // before the instance stops (cleanups run last in, first out)
	env.WaitApplied()
	n, byTopic = asks()
	require.Zero(t, byTopic[jobs], "every command applied")
	require.Equal(t, int64(1), n)
	all := func() (int64, float64) {
		t.Helper()
		late := deploytest.Lateness(t, reg)
		n, _ := so.ReplicasWith(deploytest.Measure(t, adm, so), lag.Observed{Lateness: late}, 0)
		return n, late
	}
	at := t0
	tick := func() {
		at = at.Add(time.Second)
		env.Tick(at)
	}
	tick()
	first := at
	deploytest.WaitWatermarks(t, partitions, first, inst)
	n, late := all()
	require.Equal(t, int64(1), n, "caught up: the minimum (lateness %.1f)", late)

	// The next fire blocks: one partition is stuck on its advance while
	// the clock advances a second at a time and the others go on.
	g.armed.Store(true)
	tick()
	select {
	case <-g.called:
	case <-time.After(60 * time.Second):
		t.Fatal("no fire reached the dispatch producer")
	}
	rising := []int64{}
	for _, ticks := range []int{5, 10, 20} {
		for range ticks {
			tick()
		}
		// The other partitions consume the advances asynchronously: wait
		// until the instance has seen the last one.
		testenv.Eventually(t, 60*time.Second, func() error {
			if got := inst.Scheduler().Announced(); !got.Equal(at) {
				return fmt.Errorf("announced %s, want %s", got, at)
			}
			return nil
		})
		n, late = all()
		_, byTopic = asks()
		require.Zero(t, byTopic[jobs], "no command backlog")
		require.InDelta(t, at.Sub(first).Seconds(), late, 0.001, "the stuck partition is behind by every second announced since its last completed advance")
		rising = append(rising, n)
		t.Logf("fan-out lateness %.0f s: %d replicas", late, n)
	}
	require.Greater(t, rising[0], int64(1), "the stuck partition alone asks for more than the minimum: %v", rising)
	require.Less(t, rising[0], rising[2], "and more as it falls behind: %v", rising)

	// The dispatch flows again: the partition catches up, back to the minimum.
	release()
	testenv.Eventually(t, 120*time.Second, func() error {
		if n, late := all(); n != 1 || late > 0 {
			return fmt.Errorf("still %d replicas, %.1f s of lateness", n, late)
		}
		return nil
	})
}

// TestFireRateThresholdFollowsThePodsCPU keeps the fire-rate threshold
// derived from what the shipped pod is sure to get (adversary round 19b,
// issue 19: 50,000 fires/s per replica was twice what a 500m pod
// dispatches, so the HPA scaled a steady load down into its backlog): the
// Deployment's CPU request (plain manifest and chart) is lag.PodCPURequest,
// and the shipped threshold is FiresPerCore x it, halved for the history
// group and for headroom.
func TestFireRateThresholdFollowsThePodsCPU(t *testing.T) {
	t.Parallel()
	cores := func(q string) float64 {
		if m, ok := strings.CutSuffix(q, "m"); ok {
			var n float64
			_, err := fmt.Sscan(m, &n)
			require.NoError(t, err, q)
			return n / 1000
		}
		var n float64
		_, err := fmt.Sscan(q, &n)
		require.NoError(t, err, q)
		return n
	}
	var found bool
	for _, d := range deploytest.YAMLDocs(t, "deploy/kubernetes/chronos.yaml") {
		if deploytest.Str(deploytest.Get(d, "kind")) != "Deployment" {
			continue
		}
		found = true
		require.Equal(t, lag.PodCPURequest, cores(deploytest.Str(deploytest.Get(d, "spec", "template", "spec", "containers", 0, "resources", "requests", "cpu"))))
	}
	require.True(t, found, "chronos.yaml has a Deployment")
	require.Equal(t, lag.PodCPURequest, cores(deploytest.Str(deploytest.Get(deploytest.YAMLDoc(t, "deploy/helm/chronos/values.yaml"), "resources", "requests", "cpu"))))
	require.Equal(t, float64(lag.FiresPerCore)*lag.PodCPURequest/4, float64(lag.FiresPerReplica))
	require.Equal(t, float64(lag.FiresPerReplica), deploytest.ScaledObject(t, deploytest.ShippedScaledObject(t)).FireRate.Threshold)
	require.Equal(t, int64(lag.CommandsPerReplica), deploytest.ScaledObject(t, deploytest.ShippedScaledObject(t)).Triggers[0].LagThreshold)
	require.Equal(t, fmt.Sprint(lag.CommandsPerReplica), deploytest.Get(deploytest.YAMLDoc(t, "deploy/helm/chronos/values.yaml"), "keda", "lagThreshold"))
	require.Equal(t, float64(lag.FiresPerReplica), float64(deploytest.Get(deploytest.YAMLDoc(t, "deploy/helm/chronos/values.yaml"), "keda", "firesPerReplica").(int)))
}
