package lag_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/embedded"
	"github.com/chronos-scheduler/chronos/lag"
)

// TestLagReportsTheBacklogThenZero loads a topic with a known backlog for a
// group: before the group commits, the whole backlog is lag (earliest
// policy) or 1 per partition (latest); after it consumes and commits part of
// it the rest is lag; after all of it, 0.
func TestLagReportsTheBacklogThenZero(t *testing.T) {
	t.Parallel()
	b, err := embedded.Start(embedded.Options{})
	require.NoError(t, err)
	t.Cleanup(b.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.DefaultProduceTopic("work"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	_, err = adm.CreateTopic(ctx, 3, 1, nil, "work")
	require.NoError(t, err)
	for p := int32(0); p < 3; p++ {
		for i := 0; i < 10; i++ {
			require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte("x")}).FirstErr())
		}
	}
	target := lag.Target{Group: "workers", Topic: "work"}
	col := &lag.Collector{Admin: adm, Policy: lag.Earliest, Targets: []lag.Target{target}}
	require.NoError(t, testutil.CollectAndCompare(col, strings.NewReader(expected(10, 10, 10)), "chronos_consumergroup_lag", "chronos_consumergroup_lag_sum"))

	latest, err := lag.Measure(ctx, adm, lag.Latest, target)
	require.NoError(t, err)
	require.Equal(t, int64(3), sum(latest))

	// The group commits 4 records of partition 0 and all of partition 1.
	_, err = adm.CommitOffsets(ctx, "workers", offsets(map[int32]int64{0: 4, 1: 10, 2: 0}))
	require.NoError(t, err)
	require.NoError(t, testutil.CollectAndCompare(col, strings.NewReader(expected(6, 0, 10)), "chronos_consumergroup_lag", "chronos_consumergroup_lag_sum"))
	parts, err := lag.Measure(ctx, adm, lag.Earliest, target)
	require.NoError(t, err)
	require.Equal(t, int64(2), lag.Replicas(parts, 10, false), "16 lag / threshold 10")
	require.Equal(t, int64(3), lag.Replicas(parts, 1, false), "capped at the partition count")
	require.Equal(t, int64(2), lag.Replicas(parts, 1, true), "capped at partitions with lag")

	_, err = adm.CommitOffsets(ctx, "workers", offsets(map[int32]int64{0: 10, 1: 10, 2: 10}))
	require.NoError(t, err)
	require.NoError(t, testutil.CollectAndCompare(col, strings.NewReader(expected(0, 0, 0)), "chronos_consumergroup_lag", "chronos_consumergroup_lag_sum"))
	parts, err = lag.Measure(ctx, adm, lag.Earliest, target)
	require.NoError(t, err)
	require.Zero(t, lag.Replicas(parts, 10, false))
}

func offsets(at map[int32]int64) kadm.Offsets {
	o := kadm.Offsets{}
	for p, a := range at {
		o.Add(kadm.Offset{Topic: "work", Partition: p, At: a})
	}
	return o
}

func sum(parts []lag.Partition) int64 {
	var s int64
	for _, p := range parts {
		s += p.Lag
	}
	return s
}

func expected(l0, l1, l2 int64) string {
	return fmt.Sprintf(`# HELP chronos_consumergroup_lag Consumer group lag per partition: latest offset minus committed offset (as KEDA's Kafka scaler computes it).
# TYPE chronos_consumergroup_lag gauge
chronos_consumergroup_lag{consumergroup="workers",partition="0",topic="work"} %d
chronos_consumergroup_lag{consumergroup="workers",partition="1",topic="work"} %d
chronos_consumergroup_lag{consumergroup="workers",partition="2",topic="work"} %d
# HELP chronos_consumergroup_lag_sum Consumer group lag summed over the partitions of a topic.
# TYPE chronos_consumergroup_lag_sum gauge
chronos_consumergroup_lag_sum{consumergroup="workers",topic="work"} %d
`, l0, l1, l2, l0+l1+l2)
}
