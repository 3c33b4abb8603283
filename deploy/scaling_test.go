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
	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/processors/scheduler"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/topology"
)

// scaledObject reads a ScaledObject manifest as KEDA does: its bounds, its
// Kafka triggers and its lateness (prometheus) trigger; any other trigger
// fails the test (lag.ScaledObject would not evaluate it).
func scaledObject(t *testing.T, so map[string]any) lag.ScaledObject {
	t.Helper()
	out := lag.ScaledObject{MinReplicas: int64(get(so, "spec", "minReplicaCount").(int)), MaxReplicas: int64(get(so, "spec", "maxReplicaCount").(int))}
	for _, tr := range list(get(so, "spec", "triggers")) {
		md := map[string]string{}
		for k, v := range dict(get(tr, "metadata")) {
			require.IsType(t, "", v, "trigger metadata %s: KEDA takes strings", k)
			md[k] = v.(string)
		}
		switch typ := str(get(tr, "type")); typ {
		case "kafka":
			kt, err := lag.ParseKafkaTrigger(md)
			require.NoError(t, err)
			out.Triggers = append(out.Triggers, kt)
		case "prometheus":
			mt, _ := get(tr, "metricType").(string)
			pt, err := lag.ParsePrometheusTrigger(mt, md)
			require.NoError(t, err)
			switch {
			case strings.Contains(pt.Query, lag.LatenessMetric):
				require.Nil(t, out.Lateness, "one lateness trigger")
				out.Lateness = &pt
			case strings.Contains(pt.Query, "chronos_fires_total"):
				require.Nil(t, out.FireRate, "one fire-rate trigger")
				out.FireRate = &pt
			default:
				t.Fatalf("prometheus query %s: not evaluated by lag.ScaledObject", pt.Query)
			}
		default:
			t.Fatalf("trigger type %s: not evaluated by lag.ScaledObject", typ)
		}
	}
	return out
}

// shippedScaledObject is the ScaledObject of
// deploy/kubernetes/keda-scaledobject.yaml aimed at the chronos Deployment.
func shippedScaledObject(t *testing.T) map[string]any {
	t.Helper()
	for _, d := range yamlDocs(t, "deploy/kubernetes/keda-scaledobject.yaml") {
		if str(get(d, "spec", "scaleTargetRef", "name")) == "chronos" {
			return d
		}
	}
	t.Fatal("deploy/kubernetes/keda-scaledobject.yaml: no ScaledObject for the chronos Deployment")
	return nil
}

// shippedFor is the shipped ScaledObject for env's partitions and prefix:
// lag.ScaledObjectFor(env.Layout), after checking the manifest is
// lag.ScaledObjectFor of the default layout it is written for.
func shippedFor(t *testing.T, env *testenv.Env) lag.ScaledObject {
	t.Helper()
	require.Equal(t, lag.ScaledObjectFor(topology.Layout{}), scaledObject(t, shippedScaledObject(t)), "the manifest is ScaledObjectFor(12 partitions)")
	return lag.ScaledObjectFor(env.Layout)
}

// admin is an admin client on env with its own metadata cache (env.Client's
// saw the topics missing).
func admin(t *testing.T, env *testenv.Env) *kadm.Client {
	t.Helper()
	cl, err := env.Kafka.NewKgo()
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// measure is the lag of so's Kafka triggers now.
func measure(t *testing.T, adm *kadm.Client, so lag.ScaledObject) []lag.Partition {
	t.Helper()
	var parts []lag.Partition
	testenv.Eventually(t, 60*time.Second, func() (err error) { // a fresh broker's coordinator may not be up yet
		parts, err = lag.Measure(context.Background(), adm, lag.Earliest, so.Targets()...)
		return err
	})
	return parts
}

// kafkaAsks is the replica count so's Kafka triggers ask for now (without
// the lateness trigger, as with Prometheus down), and each trigger's lag by
// unprefixed topic.
func kafkaAsks(t *testing.T, env *testenv.Env, adm *kadm.Client, so lag.ScaledObject) (int64, map[string]int64) {
	t.Helper()
	n, verdicts := so.Replicas(measure(t, adm, so), 0)
	return n, byTopic(env, verdicts)
}

func byTopic(env *testenv.Env, verdicts []lag.Verdict) map[string]int64 {
	out := map[string]int64{}
	for _, v := range verdicts {
		out[strings.TrimPrefix(v.Trigger.Topic, env.Layout.Prefix)] = v.Lag
	}
	return out
}

// requireKEDAVersion: the version a manifest names is the one the parity
// test (testenv/keda) runs.
func requireKEDAVersion(t *testing.T, so map[string]any) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s*github.com/kedacore/keda/v2 (v\S+)$`).FindSubmatch(readFile(t, "testenv/keda/go.mod"))
	require.NotNil(t, m, "testenv/keda/go.mod requires no KEDA")
	require.Equal(t, string(m[1]), str(get(so, "metadata", "annotations", "chronos-scheduler.io/keda-version")))
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
	so := shippedFor(t, env)
	adm := admin(t, env)
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
		late := lateness(t, reg)
		n, _ := so.ReplicasWith(measure(t, adm, so), lag.Observed{Lateness: late}, 0)
		return n, late
	}
	at := t0
	tick := func() {
		at = at.Add(time.Second)
		env.Tick(at)
	}
	tick()
	first := at
	waitWatermarks(t, partitions, first, inst)
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
	for _, d := range yamlDocs(t, "deploy/kubernetes/chronos.yaml") {
		if str(get(d, "kind")) != "Deployment" {
			continue
		}
		found = true
		require.Equal(t, lag.PodCPURequest, cores(str(get(d, "spec", "template", "spec", "containers", 0, "resources", "requests", "cpu"))))
	}
	require.True(t, found, "chronos.yaml has a Deployment")
	require.Equal(t, lag.PodCPURequest, cores(str(get(yamlDoc(t, "deploy/helm/chronos/values.yaml"), "resources", "requests", "cpu"))))
	require.Equal(t, float64(lag.FiresPerCore)*lag.PodCPURequest/4, float64(lag.FiresPerReplica))
	require.Equal(t, float64(lag.FiresPerReplica), scaledObject(t, shippedScaledObject(t)).FireRate.Threshold)
	require.Equal(t, int64(lag.CommandsPerReplica), scaledObject(t, shippedScaledObject(t)).Triggers[0].LagThreshold)
	require.Equal(t, fmt.Sprint(lag.CommandsPerReplica), get(yamlDoc(t, "deploy/helm/chronos/values.yaml"), "keda", "lagThreshold"))
	require.Equal(t, float64(lag.FiresPerReplica), float64(get(yamlDoc(t, "deploy/helm/chronos/values.yaml"), "keda", "firesPerReplica").(int)))
}
