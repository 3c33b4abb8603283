package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/embedded"
)

// TestLagCommandReportsTheBacklogThenZero gives the scheduler group a known
// backlog on chronos-jobs and checks `chronos lag` prints it and the
// replicas KEDA would ask for, then 0 once the group has committed it all.
func TestLagCommandReportsTheBacklogThenZero(t *testing.T) {
	t.Parallel()
	b, err := embedded.Start(embedded.Options{})
	require.NoError(t, err)
	t.Cleanup(b.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	ctx := context.Background()
	adm := kadm.NewClient(cl)
	_, err = adm.CreateTopic(ctx, 2, 1, nil, "lt.chronos-jobs")
	require.NoError(t, err)
	for p := int32(0); p < 2; p++ {
		for i := 0; i < 15; i++ {
			require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "lt.chronos-jobs", Partition: p, Value: []byte("{}")}).FirstErr())
		}
	}
	run := func(args ...string) string {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs(append([]string{"lag", "--brokers", b.Addrs()[0], "--topic-prefix", "lt."}, args...))
		require.NoError(t, root.Execute())
		return out.String()
	}
	one := func(extra ...string) string {
		return run(append([]string{"--topic", "lt.chronos-jobs", "--lag-threshold", "10"}, extra...)...)
	}
	out := one()
	require.Contains(t, out, "topic lt.chronos-jobs: lag 30, KEDA metric 20 (lagThreshold 10), active true", "30 lag, capped at 2 partitions x 10")
	require.Contains(t, out, "would ask for 2 replicas (the largest trigger alone: 2)")
	require.Equal(t, 2, strings.Count(out, "lt.chronos-scheduler  lt.chronos-jobs"), out)
	require.Contains(t, one("--max-replica-count", "1"), "would ask for 1 replicas (the largest trigger alone: 2)", "maxReplicaCount caps")
	require.Contains(t, one("--lag-threshold", "11"), "KEDA metric 30 (lagThreshold 11), active true (activationLagThreshold 0): 3 replicas",
		"KEDA's cap uses integer division: 30/11 = 2 is not above 2 partitions, so 30 stays and asks for 3")
	require.Contains(t, one("--lag-threshold", "14", "--current-replicas", "2"), "KEDA metric 30 (lagThreshold 14), active true (activationLagThreshold 0): 2 replicas",
		"30/(14*2) = 1.07, within the HPA's 10% tolerance of the 2 running")

	// Without --topic: the shipped ScaledObject's triggers, and the lag of
	// the inputs no trigger watches.
	out = run() // without the fan-out's and the history group's topics: said, not an error
	require.Contains(t, out, "fan-out inputs (lt.chronos-shard-triggers, lt.chronos-scheduler-loop): lag not measured")
	require.Contains(t, out, "history group lt.chronos-history: lag not measured")
	require.Contains(t, out, "backfill steps (lt.chronos-scheduler-backfill): lag not measured")
	for _, topic := range []string{"lt.chronos-shard-triggers", "lt.chronos-scheduler-loop", "lt.chronos-dispatch", "lt.chronos-results", "lt.chronos-scheduler-backfill"} {
		_, err = adm.CreateTopic(ctx, 2, 1, nil, topic)
		require.NoError(t, err)
	}
	for i := 0; i < 60; i++ {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "lt.chronos-shard-triggers", Partition: int32(i % 2), Value: []byte("{}")}).FirstErr())
	}
	out = run("--partitions", "2")
	require.Contains(t, out, "trigger 0, topic lt.chronos-jobs: lag 30, KEDA metric 30 (lagThreshold 1000), active true (activationLagThreshold 10): 1 replicas")
	require.Equal(t, 2, strings.Count(out, "lt.chronos-scheduler  lt.chronos-shard-triggers"), "listed, 30 per partition: %s", out)
	require.Contains(t, out, "  30\n", out)
	require.NotContains(t, out, "trigger 1, topic", "no Kafka trigger on the fan-out's inputs")
	require.Contains(t, out, "trigger 1, prometheus max(chronos_fanout_lateness_seconds) or vector(0): not evaluated (give its value with --lateness)")
	require.Contains(t, out, "trigger 2, prometheus sum(rate(chronos_fires_total[2m])) or vector(0): not evaluated (give its value with --fire-rate)")
	require.Contains(t, out, "KEDA (minReplicaCount 1, maxReplicaCount 2, current 0) would ask for 1 replicas (the largest trigger alone: 1)",
		"60 advances waiting ask for nothing: the lateness says whether fires are late")
	// The history group's lag is listed too: 15 commands per partition on
	// chronos-jobs it has not consumed, nothing on its other inputs.
	require.Equal(t, 2, strings.Count(out, "lt.chronos-history    lt.chronos-jobs"), out)
	require.Equal(t, 2, strings.Count(out, "lt.chronos-history    lt.chronos-dispatch"), out)
	require.NotContains(t, out, "lag not measured")
	out = run("--partitions", "6", "--lateness", "21.5")
	require.Contains(t, out, "trigger 1, prometheus max(chronos_fanout_lateness_seconds) or vector(0): 21.5 (threshold 5), active true: 5 replicas")
	require.Contains(t, out, "trigger 2, prometheus sum(rate(chronos_fires_total[2m])) or vector(0): 0 (threshold 6125), active false: 0 replicas")
	require.Contains(t, out, "KEDA (minReplicaCount 1, maxReplicaCount 6, current 0) would ask for 5 replicas (the largest trigger alone: 5)")
	out = run("--partitions", "6", "--fire-rate", "24000")
	require.Contains(t, out, "trigger 2, prometheus sum(rate(chronos_fires_total[2m])) or vector(0): 24000 (threshold 6125), active true: 4 replicas")
	require.Contains(t, out, "would ask for 4 replicas (the largest trigger alone: 4)")
	root0 := newRoot()
	root0.SetArgs([]string{"lag", "--brokers", b.Addrs()[0], "--topic", "x", "--lateness", "3"})
	require.ErrorContains(t, root0.Execute(), "--lateness and --fire-rate need the shipped triggers")
	root := newRoot()
	root.SetArgs([]string{"lag", "--brokers", b.Addrs()[0], "--lag-threshold", "5"})
	require.ErrorContains(t, root.Execute(), "--lag-threshold needs --topic")

	offs := kadm.Offsets{}
	for _, topic := range []string{"lt.chronos-jobs", "lt.chronos-shard-triggers"} {
		ends, err := adm.ListEndOffsets(ctx, topic)
		require.NoError(t, err)
		ends.Each(func(o kadm.ListedOffset) { offs.Add(kadm.Offset{Topic: topic, Partition: o.Partition, At: o.Offset}) })
	}
	_, err = adm.CommitOffsets(ctx, "lt.chronos-scheduler", offs)
	require.NoError(t, err)
	out = one()
	require.Contains(t, out, "lag 0, KEDA metric 0")
	require.Contains(t, out, "would ask for 1 replicas (the largest trigger alone: 0)", "KEDA keeps minReplicaCount 1")
	require.Contains(t, one("--min-replica-count", "0"), "would ask for 0 replicas (the largest trigger alone: 0)")
	require.Contains(t, run(), "would ask for 1 replicas (the largest trigger alone: 0)")
}

// TestLagReplicaBoundsMatchTheManifests: the defaults of `chronos lag
// --min-replica-count/--max-replica-count` are the bounds every
// ScaledObject in deploy/kubernetes sets, so its answer is KEDA's there.
func TestLagReplicaBoundsMatchTheManifests(t *testing.T) {
	flags := newLag().Flags()
	files, err := filepath.Glob("../../deploy/kubernetes/keda-*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, bound := range []struct{ flag, key string }{{"min-replica-count", "minReplicaCount"}, {"max-replica-count", "maxReplicaCount"}} {
		def := flags.Lookup(bound.flag).DefValue
		if def == "-1" { // the partition count
			def = flags.Lookup("partitions").DefValue
		}
		re := regexp.MustCompile(`(?m)^\s*` + bound.key + `:\s*(\d+)\s*$`)
		for _, f := range files {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			ms := re.FindAllStringSubmatch(string(b), -1)
			require.NotEmpty(t, ms, "%s sets no %s", f, bound.key)
			for _, m := range ms {
				require.Equal(t, def, m[1], "%s: %s %s, but chronos lag --%s defaults to %s", f, bound.key, m[1], bound.flag, def)
			}
		}
	}
}
