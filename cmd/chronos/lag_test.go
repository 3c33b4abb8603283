package main

import (
	"bytes"
	"context"
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
	run := func() string {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs([]string{"lag", "--brokers", b.Addrs()[0], "--topic-prefix", "lt.", "--topic", "lt.chronos-jobs", "--lag-threshold", "10"})
		require.NoError(t, root.Execute())
		return out.String()
	}
	out := run()
	require.Contains(t, out, "total lag 30;")
	require.Contains(t, out, "would ask for 2 replicas", "30 lag / 10, capped at 2 partitions")
	require.Equal(t, 2, strings.Count(out, "lt.chronos-scheduler  lt.chronos-jobs"), out)

	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "lt.chronos-jobs", Partition: 0, At: 15})
	offs.Add(kadm.Offset{Topic: "lt.chronos-jobs", Partition: 1, At: 15})
	_, err = adm.CommitOffsets(ctx, "lt.chronos-scheduler", offs)
	require.NoError(t, err)
	out = run()
	require.Contains(t, out, "total lag 0;")
	require.Contains(t, out, "would ask for 0 replicas")
}
