package topology_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/embedded"
	"github.com/chronos-scheduler/chronos/topology"
)

func TestLayoutValidate(t *testing.T) {
	t.Parallel()
	ok := topology.Layout{Names: topology.Names{Prefix: "p."}, Partitions: topology.DefaultPartitions, Replication: -1}
	require.NoError(t, ok.Validate())
	for _, l := range []topology.Layout{
		{Partitions: 1, Replication: 1},
		{Partitions: 10000, Replication: 3},
	} {
		require.NoError(t, l.Validate())
	}
	for _, tc := range []struct {
		l    topology.Layout
		want []string
	}{
		{topology.Layout{}, []string{"partitions 0", "replication factor 0"}},
		{topology.Layout{Names: topology.Names{Prefix: "a b"}, Partitions: -1, Replication: -2}, []string{`prefix "a b"`, "partitions -1", "replication factor -2"}},
		{topology.Layout{Partitions: 10001, Replication: 1}, []string{"partitions 10001"}},
		{topology.Layout{Names: topology.Names{Prefix: "ä"}, Partitions: 1, Replication: 1}, []string{"prefix"}},
	} {
		err := tc.l.Validate()
		require.Error(t, err)
		for _, w := range tc.want {
			require.Contains(t, err.Error(), w)
		}
		require.Len(t, strings.Split(err.Error(), "\n"), len(tc.want), "one line per problem: %v", err)
	}
}

func TestLayoutTopics(t *testing.T) {
	t.Parallel()
	l := topology.Layout{Names: topology.Names{Prefix: "x."}, Partitions: 7, Replication: 1}
	got := make(map[string]topology.Topic)
	for _, tp := range l.Topics() {
		require.NotContains(t, got, tp.Name, "duplicate topic")
		got[tp.Name] = tp
	}
	compact := map[string]string{"cleanup.policy": "compact"}
	inbound := map[string]string{"compression.type": "uncompressed"}
	want := map[string]topology.Topic{
		"x.chronos-jobs":               {Partitions: 7, Sharded: true, Configs: inbound},
		"x.chronos-shard-triggers":     {Partitions: 7, Sharded: true},
		"x.chronos-scheduler-table":    {Partitions: 7, Sharded: true, Configs: compact},
		"x.chronos-scheduler-loop":     {Partitions: 7, Sharded: true},
		"x.chronos-scheduler-backfill": {Partitions: 7, Sharded: true},
		"x.chronos-dispatch":           {Partitions: 7, Sharded: true},
		"x.chronos-rejects":            {Partitions: 7, Sharded: true},
		"x.chronos-bucket-triggers":    {Partitions: 7, Sharded: true, Configs: inbound},
		"x.chronos-results":            {Partitions: 7, Sharded: true, Configs: inbound},
		"x.chronos-history-table":      {Partitions: 7, Sharded: true, Configs: compact},
		"x.chronos-clock":              {Partitions: 1, Configs: map[string]string{"message.timestamp.type": "LogAppendTime"}},
		"x.chronos-clock-table":        {Partitions: 1, Configs: compact},
		"x.chronos-calendars":          {Partitions: 1, Configs: map[string]string{"cleanup.policy": "compact", "compression.type": "uncompressed"}},
	}
	require.Len(t, got, len(want))
	for name, w := range want {
		w.Name = name
		require.Equal(t, w, got[name], name)
	}
	s := l.String()
	require.Equal(t, len(want), strings.Count(s, "\n"))
	require.Contains(t, s, "x.chronos-clock-table\tpartitions=1 cleanup.policy=compact\n")
	require.Contains(t, s, "x.chronos-jobs\tpartitions=7 compression.type=uncompressed\n")
	require.True(t, strings.HasPrefix(s, "x.chronos-bucket-triggers\t"), "sorted: %s", s)
}

// newAdmin starts an embedded broker and returns a function that makes a
// new admin client for it. kadm caches metadata (including "unknown topic")
// for MetadataMinAge, so checks after Ensure use a new client.
func newAdmin(t *testing.T) func() *kadm.Client {
	t.Helper()
	b, err := embedded.Start(embedded.Options{})
	require.NoError(t, err)
	t.Cleanup(b.Close)
	return func() *kadm.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
		require.NoError(t, err)
		t.Cleanup(cl.Close)
		return kadm.NewClient(cl)
	}
}

func TestLayoutEnsure(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	newAdm := newAdmin(t)
	l := topology.Layout{Names: topology.Names{Prefix: "e."}, Partitions: 5, Replication: 1}
	require.NoError(t, l.Ensure(ctx, newAdm()))
	adm := newAdm()

	names := make([]string, 0, 9)
	for _, tp := range l.Topics() {
		names = append(names, tp.Name)
	}
	details, err := adm.ListTopics(ctx, names...)
	require.NoError(t, err)
	require.NoError(t, details.Error())
	for _, tp := range l.Topics() {
		d, ok := details[tp.Name]
		require.True(t, ok, tp.Name)
		require.Len(t, d.Partitions, int(tp.Partitions), tp.Name)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, names...)
	require.NoError(t, err)
	require.Len(t, rcs, len(names))
	for _, tp := range l.Topics() {
		rc, err := rcs.On(tp.Name, nil)
		require.NoError(t, err)
		require.NoError(t, rc.Err)
		policy := "delete"
		if tp.Configs["cleanup.policy"] != "" {
			policy = "compact"
		}
		var found bool
		for _, c := range rc.Configs {
			if c.Key == "cleanup.policy" {
				found = true
				require.NotNil(t, c.Value, tp.Name)
				require.Equal(t, policy, *c.Value, tp.Name)
			}
		}
		if policy == "compact" {
			require.True(t, found, "%s has no cleanup.policy", tp.Name)
		}
	}

	// Idempotent, with fresh metadata and with cached metadata.
	require.NoError(t, l.Ensure(ctx, adm))
	require.NoError(t, l.Ensure(ctx, adm))
	require.NoError(t, l.Ensure(ctx, newAdm()))

	// A layout that validates badly never reaches the broker.
	require.Error(t, topology.Layout{Partitions: 0, Replication: 1}.Ensure(ctx, adm))
}

func TestLayoutEnsurePartitionMismatch(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	newAdm := newAdmin(t)
	adm := newAdm()
	l := topology.Layout{Names: topology.Names{Prefix: "m."}, Partitions: 6, Replication: 1}
	_, err := adm.CreateTopic(ctx, 4, 1, nil, string(l.Dispatch()))
	require.NoError(t, err)
	_, err = adm.CreateTopic(ctx, 6, 1, nil, string(l.Jobs()))
	require.NoError(t, err)

	err = l.Ensure(ctx, adm)
	require.Error(t, err)
	require.Contains(t, err.Error(), "m.chronos-dispatch has 4 partitions, want 6")
	require.NotContains(t, err.Error(), "m.chronos-jobs")

	// The other topics were still created.
	adm = newAdm()
	details, err := adm.ListTopics(ctx, string(l.ShardTriggers()), string(l.ClockTable()))
	require.NoError(t, err)
	require.NoError(t, details.Error())
	require.Len(t, details[string(l.ShardTriggers())].Partitions, 6)
	require.Len(t, details[string(l.ClockTable())].Partitions, 1)

	// The same layout with the existing count is fine.
	l.Partitions = 4
	err = l.Ensure(ctx, newAdm())
	require.Error(t, err, "now the other topics mismatch")
	require.NotContains(t, err.Error(), "m.chronos-dispatch")
	require.Contains(t, err.Error(), "m.chronos-jobs has 6 partitions, want 4")
}

// The clock topic trusts the broker's append time, and the topics others
// write have the broker refuse compression bombs; Ensure creates them so and
// repairs ones created without it (by an earlier release, or by hand).
func TestLayoutEnsureRepairsSettings(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	newAdm := newAdmin(t)
	adm := newAdm()
	config := func(topic, key string) string {
		rcs, err := newAdm().DescribeTopicConfigs(ctx, topic)
		require.NoError(t, err)
		rc, err := rcs.On(topic, nil)
		require.NoError(t, err)
		require.NoError(t, rc.Err)
		for _, c := range rc.Configs {
			if c.Key == key && c.Value != nil {
				return *c.Value
			}
		}
		return ""
	}
	type setting struct{ topic, key, want, old string }
	settings := func(l topology.Layout) []setting {
		return []setting{
			{string(l.Clock()), "message.timestamp.type", "LogAppendTime", "CreateTime"},
			{string(l.Jobs()), "compression.type", "uncompressed", "producer"},
			{string(l.BucketTriggers()), "compression.type", "uncompressed", "zstd"},
		}
	}
	fresh := topology.Layout{Names: topology.Names{Prefix: "ct."}, Partitions: 2, Replication: 1}
	require.NoError(t, fresh.Ensure(ctx, adm))
	for _, s := range settings(fresh) {
		require.Equal(t, s.want, config(s.topic, s.key), "%s %s", s.topic, s.key)
	}

	old := topology.Layout{Names: topology.Names{Prefix: "cu."}, Partitions: 2, Replication: 1}
	for _, s := range settings(old) {
		parts := int32(2)
		if s.key == "message.timestamp.type" {
			parts = 1
		}
		_, err := adm.CreateTopic(ctx, parts, 1, map[string]*string{s.key: kadm.StringPtr(s.old)}, s.topic)
		require.NoError(t, err)
		require.Equal(t, s.old, config(s.topic, s.key))
	}
	require.NoError(t, old.Ensure(ctx, newAdm()))
	for _, s := range settings(old) {
		require.Equal(t, s.want, config(s.topic, s.key), "%s %s repaired", s.topic, s.key)
	}
}
