package lag_test

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/topology"
)

var updatePlan = flag.Bool("update-plan", false, "rewrite the scaling plan in docs/operations.md")

// measured are the inputs of the plan, from docs/performance.md (2 cores,
// embedded broker in the same process: per replica figures are low).
var measured = lag.Capacity{
	// Burst of 1,000,000 jobs at one second: 98,000-135,000 fires/s
	// (chronos bench --jobs 1000000 --aligned); the lowest.
	FiresPerSecond: 98000,
	// Registration of 1,000,000 puts: 22,700-31,400 jobs/s; the lowest.
	CommandsPerSecond: 22700,
	// A restarted instance with its data dir ready in 4.8 s (SIGTERM).
	RebalancePause: 4.8,
	// A new instance with an empty data dir recovering 10,000,000 jobs:
	// 433 s (161 s with deferred indexing in both stores; shipped in the
	// view's only, not measured at 10M): 43.3 µs per job.
	RecoverySecondsPerJob: 433.0 / 10e6,
}

// pod is measured for the shipped pod: its CPU request (lag.PodCPURequest,
// 500m) of the 2 cores measured, for fires and commands alike (issue 19,
// adversary round 19b: the plan assumed 2 whole cores per replica).
var pod = func() lag.Capacity {
	c := measured
	c.FiresPerSecond *= lag.PodCPURequest / 2
	c.CommandsPerSecond *= lag.PodCPURequest / 2
	return c
}()

// shipped is the autoscaler of deploy/kubernetes/keda-scaledobject.yaml
// (deploy's tests keep the triggers equal to lag.ScaledObjectFor; the
// behavior numbers are the manifest's) with the HPA's default sync period.
func shipped() lag.Autoscaler {
	return lag.Autoscaler{ScaledObject: lag.ScaledObjectFor(topology.Layout{}), Partitions: 12, SyncSeconds: 15,
		ScaleUpWindow: 60, ScaleUpPods: 2, ScaleUpPeriod: 120, ScaleDownWindow: 300, ScaleDownPods: 1, ScaleDownPeriod: 120}
}

var loads = []lag.Load{
	{Name: "steady: 1,000,000 jobs every minute (16,667 fires/s)", Jobs: 1e6, FiresPerSecond: 1e6 / 60.0, Seconds: 900},
	{Name: "burst: 1,000,000 more jobs due at one second, on the steady load", Jobs: 2e6, FiresPerSecond: 1e6 / 60.0, Burst: 1e6, BurstAt: 60, Seconds: 900},
	{Name: "bulk import: 5,000,000 puts at 100,000/s for 50 s, on the steady load", Jobs: 1e6, FiresPerSecond: 1e6 / 60.0,
		CommandsPerSecond: 1e5, CommandsFrom: 60, CommandsFor: 50, Seconds: 900},
	{Name: "overload: 10,000,000 jobs every minute (166,667 fires/s)", Jobs: 1e7, FiresPerSecond: 1e7 / 60.0, Seconds: 1800},
}

// TestScalingPlanInDocs simulates the shipped autoscaler on the loads above
// from the measured inputs and checks docs/operations.md shows that plan
// (go test ./lag/ -run ScalingPlan -update-plan rewrites it).
func TestScalingPlanInDocs(t *testing.T) {
	var outs []lag.Outcome
	for _, l := range loads {
		outs = append(outs, lag.Simulate(pod, shipped(), l))
	}
	// The overload again with what the plan suggests: start at 2.
	two := shipped()
	two.ScaledObject.MinReplicas = 2
	over := loads[3]
	over.Name += ", minReplicaCount 2"
	outs = append(outs, lag.Simulate(pod, two, over))
	table := lag.Table(outs)
	const path, begin, end = "../docs/operations.md", "<!-- scaling-plan:begin (go test ./lag/ -run ScalingPlan -update-plan) -->\n", "<!-- scaling-plan:end -->"
	doc, err := os.ReadFile(path)
	require.NoError(t, err)
	i, j := strings.Index(string(doc), begin), strings.Index(string(doc), end)
	require.True(t, i >= 0 && j > i, "docs/operations.md has no scaling-plan markers")
	if *updatePlan {
		doc = []byte(string(doc[:i+len(begin)]) + table + string(doc[j:]))
		require.NoError(t, os.WriteFile(path, doc, 0o644))
	}
	require.Equal(t, table, string(doc[i+len(begin):j]), "the plan in docs/operations.md is stale: rerun with -update-plan")

	// What the plan says, in words the docs repeat.
	settles := func(o lag.Outcome) int64 {
		return shipped().ScaledObject.Bound(int64(math.Ceil(o.Load.FiresPerSecond / lag.FiresPerReplica)))
	}
	require.Equal(t, settles(outs[0]), outs[0].PeakReplicas, "the steady load gets ceil(fire rate / FiresPerReplica) at once and no more")
	require.Greater(t, outs[1].PeakReplicas, settles(outs[1]), "a burst scales out")
	require.Equal(t, settles(outs[1]), outs[1].Steps[len(outs[1].Steps)-1].Replicas, "after a burst the count returns to the steady load's")
	require.Greater(t, outs[2].PeakReplicas, int64(1), "a bulk import scales out")
	require.Greater(t, outs[3].PeakReplicas, int64(1), "an overload scales out")
	require.Less(t, outs[4].MaxFireLateness, outs[3].MaxFireLateness, "starting at 2 keeps the overload's fires less late")
	// Issue 19, adversary round: the overload flapped (scaled down into its
	// backlog every 300 s). The fire-rate trigger holds the count it needs.
	for _, o := range outs {
		for k := 1; k < len(o.Steps); k++ {
			if o.Load.CommandsPerSecond == 0 && o.Load.Burst == 0 {
				require.GreaterOrEqual(t, o.Steps[k].Replicas, o.Steps[k-1].Replicas, "%s: a steady load never scales down: %v", o.Load.Name, o.Steps)
			}
		}
		if o.Load.Name == loads[3].Name {
			require.Equal(t, settles(o), o.Steps[len(o.Steps)-1].Replicas,
				"the overload settles at ceil(fire rate / FiresPerReplica), at most the partitions")
		}
	}
}

// TestSimulateObeysTheHPA generates loads and autoscalers and checks the
// plan keeps the HPA's rules: the count stays within the bounds, never
// rises by more than the scale-up policy nor falls by more than the
// scale-down policy within their periods, changes only on a sync; and
// without scaling, a lone burst is late by what the capacity implies.
func TestSimulateObeysTheHPA(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 2026))
	for i := range 300 {
		a := shipped()
		a.ScaledObject.MaxReplicas = int64(1 + rng.IntN(12))
		a.ScaleUpPods, a.ScaleUpPeriod = 1+rng.IntN(4), 15*(1+rng.IntN(10))
		a.ScaleDownPods, a.ScaleDownPeriod = 1+rng.IntN(3), 15*(1+rng.IntN(10))
		a.ScaleUpWindow, a.ScaleDownWindow = 15*rng.IntN(6), 15*rng.IntN(25)
		c := lag.Capacity{FiresPerSecond: float64(1000 + rng.IntN(100000)), CommandsPerSecond: float64(1000 + rng.IntN(30000)),
			RebalancePause: float64(rng.IntN(10)), RecoverySecondsPerJob: rng.Float64() * 1e-4}
		l := lag.Load{Name: fmt.Sprint(i), Jobs: float64(rng.IntN(1e7)), FiresPerSecond: float64(rng.IntN(200000)),
			Burst: float64(rng.IntN(2e6)), BurstAt: rng.IntN(300), CommandsPerSecond: float64(rng.IntN(100000)),
			CommandsFrom: rng.IntN(300), CommandsFor: rng.IntN(200), Seconds: 600}
		o := lag.Simulate(c, a, l)
		require.Equal(t, 0, o.Steps[0].At)
		require.Equal(t, int64(1), o.Steps[0].Replicas)
		for k, s := range o.Steps {
			require.GreaterOrEqual(t, s.Replicas, int64(1), "case %d", i)
			require.LessOrEqual(t, s.Replicas, a.ScaledObject.MaxReplicas, "case %d", i)
			if k == 0 {
				continue
			}
			require.Zero(t, s.At%a.SyncSeconds, "case %d: a change off a sync", i)
			var up, down int64
			for _, p := range o.Steps[1 : k+1] {
				d := p.Replicas - o.Steps[indexOf(o.Steps, p)-1].Replicas
				if d > 0 && s.At-p.At < a.ScaleUpPeriod {
					up += d
				}
				if d < 0 && s.At-p.At < a.ScaleDownPeriod {
					down -= d
				}
			}
			require.LessOrEqual(t, up, int64(a.ScaleUpPods), "case %d: %v", i, o.Steps)
			require.LessOrEqual(t, down, int64(a.ScaleDownPods), "case %d: %v", i, o.Steps)
		}
	}

	// One replica, no autoscaling, no steady load: a burst of B fires at
	// f per second leaves its last fires late by ceil(B/f) - 1 seconds.
	for range 100 {
		a := shipped()
		a.ScaledObject.MaxReplicas = 1
		f := float64(1000 + rng.IntN(100000))
		b := float64(1 + rng.IntN(3e6))
		o := lag.Simulate(lag.Capacity{FiresPerSecond: f, CommandsPerSecond: 1}, a, lag.Load{Burst: b, BurstAt: 5, Seconds: int(b/f) + 20})
		want := float64(int64((b+f-1)/f) - 1)
		require.InDelta(t, want, o.MaxFireLateness, 1, "burst %.0f at %.0f/s", b, f)
	}
}

func indexOf(steps []lag.Step, s lag.Step) int {
	for i, x := range steps {
		if x == s {
			return i
		}
	}
	return -1
}

// TestFireRateThresholdWithinPodCapacity keeps "a steady load never
// scales down" and "a sustained load above one replica's capacity scales
// out to ceil(fires per second / 50,000) and stays there"
// (docs/operations.md, Scaling plan) for the pod the project ships. The
// plan's 98,000 fires/s per replica was measured on 2 whole cores
// (chronos bench --aligned, the burst: the cheapest fires); the shipped
// Deployment requests cpu: 500m and the fan-out costs ~9.5 µs of CPU per
// fire in its callbacks alone, plus compactions and flushes of about as
// much again (docs/performance.md), so a pod held to its request
// dispatches about a quarter of that: 24,500/s. FiresPerReplica (then 50,000)
// is then twice what a replica carries: the fire-rate trigger settles on
// half the replicas a load needs, the lateness trigger scales out, the
// backlog drains, lateness falls to 0 and after the 300 s window the HPA
// walks back down into the backlog: the flapping the fire-rate trigger was
// added to stop, each step a rebalance and a restore. (Adversary round 19b,
// issue 19; FiresPerReplica is now derived from PodCPURequest: 6,125.)
func TestFireRateThresholdWithinPodCapacity(t *testing.T) {
	// pod: 2 cores -> the shipped 500m request, 24,500 fires/s
	for _, l := range []lag.Load{
		{Name: "45,000 fires/s (2,700,000 jobs every minute)", Jobs: 2.7e6, FiresPerSecond: 45000, Seconds: 3600},
		{Name: "overload: 10,000,000 jobs every minute (166,667 fires/s)", Jobs: 1e7, FiresPerSecond: 1e7 / 60.0, Seconds: 3600},
	} {
		o := lag.Simulate(pod, shipped(), l)
		t.Logf("%s at %.0f fires/s per pod:\n%s", l.Name, pod.FiresPerSecond, lag.Table([]lag.Outcome{o}))
		var downs int
		for k := 1; k < len(o.Steps); k++ {
			if o.Steps[k].Replicas < o.Steps[k-1].Replicas {
				downs++
			}
		}
		assert.Zero(t, downs, "%s: a steady load scaled down %d times into its backlog: %v (fires late by up to %.0f s)", l.Name, downs, o.Steps, o.MaxFireLateness)
	}
}

// TestOverloadDoesNotOvershoot keeps (adversary round 19b broke it) "a sustained load above one
// replica's capacity scales out to ceil(fires per second / 50,000) and
// stays there" (docs/operations.md, How to read it) with the plan's own
// inputs (98,000 fires/s per replica): the plan checks one overload
// (166,667 fires/s) only. From 100,000 fires/s up, the lateness trigger
// overshoots while the backlog drains and the count comes back down once
// or twice after the 300 s window (200,000/s: 1, 2, 3, 4, 5, then 4; 250,000/s:
// up to 7, then 6, 5), each step a rebalance and a restore. With
// FiresPerReplica from the pod's CPU request the fire-rate trigger asks for
// at least what the lateness trigger reaches.
func TestOverloadDoesNotOvershoot(t *testing.T) {
	for _, rate := range []float64{100000, 150000, 200000, 250000, 300000, 400000, 500000} {
		o := lag.Simulate(measured, shipped(), lag.Load{Name: "steady", Jobs: 1e7, FiresPerSecond: rate, Seconds: 3600})
		want := lag.ScaledObjectFor(topologyDefault()).Bound(int64((rate + lag.FiresPerReplica - 1) / lag.FiresPerReplica))
		assert.Equal(t, want, o.PeakReplicas, "%.0f fires/s, 10M jobs: steps %v", rate, o.Steps)
	}
}

func topologyDefault() topology.Layout { return topology.Layout{} }
