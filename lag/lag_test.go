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

	// The group commits 4 records of partition 0 and all of partition 1;
	// partition 2 has no commit.
	_, err = adm.CommitOffsets(ctx, "workers", offsets(map[int32]int64{0: 4, 1: 10}))
	require.NoError(t, err)
	require.NoError(t, testutil.CollectAndCompare(col, strings.NewReader(expected(6, 0, 10)), "chronos_consumergroup_lag", "chronos_consumergroup_lag_sum"))
	parts, err := lag.Measure(ctx, adm, lag.Earliest, target)
	require.NoError(t, err)
	require.Equal(t, int64(2), alone(parts, lag.KafkaTrigger{LagThreshold: 10}), "16 lag / threshold 10")
	require.Equal(t, int64(3), alone(parts, lag.KafkaTrigger{LagThreshold: 1}), "capped at the partition count")
	require.Equal(t, int64(2), alone(parts, lag.KafkaTrigger{LagThreshold: 1, LimitToPartitionsWithLag: true}), "capped at partitions with lag")
	require.Equal(t, int64(16), alone(parts, lag.KafkaTrigger{LagThreshold: 1, AllowIdleConsumers: true}), "no cap")

	// Retention (here DeleteRecords) removes the first 7 records of
	// partition 2, which has no commit: earliest counts the 3 left, as KEDA
	// 2.21 does. A commit past the end counts negative, as KEDA adds it.
	_, err = adm.DeleteRecords(ctx, offsets(map[int32]int64{2: 7}))
	require.NoError(t, err)
	_, err = adm.CommitOffsets(ctx, "workers", offsets(map[int32]int64{1: 15}))
	require.NoError(t, err)
	parts, err = lag.Measure(ctx, adm, lag.Earliest, target)
	require.NoError(t, err)
	require.Equal(t, []int64{6, -5, 3}, lags(parts))
	require.Equal(t, int64(7), parts[2].Start)
	require.NoError(t, testutil.CollectAndCompare(col, strings.NewReader(expected(6, -5, 3)), "chronos_consumergroup_lag", "chronos_consumergroup_lag_sum"))

	_, err = adm.CommitOffsets(ctx, "workers", offsets(map[int32]int64{0: 10, 1: 10, 2: 10}))
	require.NoError(t, err)
	require.NoError(t, testutil.CollectAndCompare(col, strings.NewReader(expected(0, 0, 0)), "chronos_consumergroup_lag", "chronos_consumergroup_lag_sum"))
	parts, err = lag.Measure(ctx, adm, lag.Earliest, target)
	require.NoError(t, err)
	require.Zero(t, alone(parts, lag.KafkaTrigger{LagThreshold: 10}))
}

// alone is the replica count tr's metric alone asks for (the HPA's
// proposal with no current count).
func alone(parts []lag.Partition, tr lag.KafkaTrigger) int64 {
	tr.Group, tr.Topic = "workers", "work"
	m, _ := tr.Metric(parts)
	return lag.Proposal(float64(m), float64(tr.LagThreshold), 0)
}

func lags(parts []lag.Partition) []int64 {
	out := make([]int64, len(parts))
	for i, p := range parts {
		out[i] = p.Lag
	}
	return out
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
# HELP chronos_consumergroup_lag_sum Consumer group lag summed over the partitions of a topic, uncapped (KEDA's metric caps it at lagThreshold times the partition count; chronos lag prints both).
# TYPE chronos_consumergroup_lag_sum gauge
chronos_consumergroup_lag_sum{consumergroup="workers",topic="work"} %d
`, l0, l1, l2, l0+l1+l2)
}
