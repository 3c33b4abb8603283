package clients

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGokaClientsKeepOnlyTheirTopics: a sarama client built from the config
// goka's consumers, consumer groups and producers get, and the topic manager
// Chronos gives goka, learn the metadata of the topics they use, not of
// every topic on a cluster shared with other teams, and asking either for a
// topic that does not exist does not create it, on a broker that creates
// topics on request (like Chronos's embedded one).
func TestGokaClientsKeepOnlyTheirTopics(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	require.NoError(t, err)
	defer kc.Close()
	brokers := kc.ListenAddrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var others []string
	for i := range 40 {
		others = append(others, fmt.Sprintf("other-team.events-%02d", i))
	}
	_, err = adm.CreateTopics(ctx, 6, 1, nil, append(others, "ours")...)
	require.NoError(t, err)
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "ours", Partition: 0, Value: []byte("x")}).FirstErr())

	c := Default(brokers...)
	client, err := sarama.NewClient(brokers, c.clientSarama())
	require.NoError(t, err)
	defer client.Close()
	consumer, err := sarama.NewConsumerFromClient(client)
	require.NoError(t, err)
	defer consumer.Close()
	pc, err := consumer.ConsumePartition("ours", 0, sarama.OffsetOldest)
	require.NoError(t, err)
	defer pc.Close()
	select {
	case m := <-pc.Messages():
		require.Equal(t, "x", string(m.Value))
	case <-ctx.Done():
		t.Fatal("no record consumed")
	}
	require.NoError(t, client.RefreshMetadata("ours")) // what the background refresh does
	known, err := client.Topics()
	require.NoError(t, err)
	require.Equal(t, []string{"ours"}, known, "the client learned only the topic it consumes")

	_, err = consumer.ConsumePartition("missing-topic", 0, sarama.OffsetOldest)
	require.Error(t, err)
	topics, err := adm.ListTopics(ctx)
	require.NoError(t, err)
	require.False(t, topics.Has("missing-topic"), "asking for a missing topic created it")

	// goka's topic manager, as Chronos builds it: the same, and it creates
	// nothing.
	tmb, err := c.TopicManagerBuilder()(brokers)
	require.NoError(t, err)
	defer tmb.Close()
	ps, err := tmb.Partitions("ours")
	require.NoError(t, err)
	require.Equal(t, []int32{0, 1, 2, 3, 4, 5}, ps)
	_, err = tmb.Partitions("missing-table")
	require.Error(t, err)
	require.ErrorContains(t, tmb.EnsureTableExists("missing-table", 6), "missing-table")
	require.NoError(t, tmb.EnsureStreamExists("ours", 6))
	oldest, err := tmb.GetOffset("ours", 0, sarama.OffsetOldest)
	require.NoError(t, err)
	newest, err := tmb.GetOffset("ours", 0, sarama.OffsetNewest)
	require.NoError(t, err)
	require.Equal(t, int64(1), newest-oldest)
	known, err = tmb.(*topicManager).client.Topics()
	require.NoError(t, err)
	require.Equal(t, []string{"ours"}, known, "the topic manager learned only the topic it was asked about")
	topics, err = adm.ListTopics(ctx)
	require.NoError(t, err)
	require.False(t, topics.Has("missing-table"), "asking the topic manager for a missing topic created it")
	require.True(t, topics.Has("other-team.events-07"))
}
