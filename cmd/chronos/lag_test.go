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
	run := func(extra ...string) string {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs(append([]string{"lag", "--brokers", b.Addrs()[0], "--topic-prefix", "lt.", "--topic", "lt.chronos-jobs", "--lag-threshold", "10"}, extra...))
		require.NoError(t, root.Execute())
		return out.String()
	}
	out := run()
	require.Contains(t, out, "total lag 30;")
	require.Contains(t, out, "would ask for 2 replicas", "30 lag / 10, capped at 2 partitions")
	require.Equal(t, 2, strings.Count(out, "lt.chronos-scheduler  lt.chronos-jobs"), out)
	require.Contains(t, run("--max-replica-count", "1"), "would ask for 1 replicas (the lag alone: 2)", "maxReplicaCount caps")

	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "lt.chronos-jobs", Partition: 0, At: 15})
	offs.Add(kadm.Offset{Topic: "lt.chronos-jobs", Partition: 1, At: 15})
	_, err = adm.CommitOffsets(ctx, "lt.chronos-scheduler", offs)
	require.NoError(t, err)
	out = run()
	require.Contains(t, out, "total lag 0;")
	require.Contains(t, out, "would ask for 1 replicas (the lag alone: 0)", "KEDA keeps minReplicaCount 1")
	require.Contains(t, run("--min-replica-count", "0"), "would ask for 0 replicas (the lag alone: 0)")
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
