package clients

import (
	"fmt"
	"strings"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
)

// topicManager is the goka.TopicManager of Chronos's processors and views.
// goka's own refreshes the metadata of every topic on the cluster and looks
// the topic up among them (so that asking for a missing topic by name does
// not create it), and each processor and view keeps one for its life, with
// every topic's metadata in it. This one asks for the topic by name with
// auto-creation off (clientSarama), so it keeps only the topics it is asked
// about. It creates nothing: Chronos creates its topics before goka starts,
// and a topic missing here is an error that names it (goka's would create
// it with a replication of 1). Like goka's, with its default
// configuration, it does not check an existing topic's partition count or
// settings: goka checks that co-partitioned topics agree, and
// topology.Layout checks the counts at start-up.
type topicManager struct {
	client sarama.Client
}

func newTopicManager(brokers []string, cfg *sarama.Config) (goka.TopicManager, error) {
	client, err := sarama.NewClient(brokers, cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the topic manager's Kafka client: %w", err)
	}
	return &topicManager{client: client}, nil
}

// Partitions returns the topic's partitions from fresh metadata (goka's
// refreshes too, so that a partition count is never stale).
func (m *topicManager) Partitions(topic string) ([]int32, error) {
	if err := m.client.RefreshMetadata(topic); err != nil {
		return nil, namingTopic(topic, err)
	}
	ps, err := m.client.Partitions(topic)
	if err != nil {
		return nil, namingTopic(topic, err)
	}
	return ps, nil
}

// namingTopic makes err name the topic, unless sarama's already does.
func namingTopic(topic string, err error) error {
	if strings.Contains(err.Error(), topic) {
		return err
	}
	return fmt.Errorf("topic %s: %w", topic, err)
}

func (m *topicManager) ensure(topic string) error {
	if _, err := m.Partitions(topic); err != nil {
		return fmt.Errorf("%w (Chronos creates its topics at start-up; was it deleted?)", err)
	}
	return nil
}

// EnsureTableExists checks that the topic exists.
func (m *topicManager) EnsureTableExists(topic string, _ int) error { return m.ensure(topic) }

// EnsureStreamExists checks that the topic exists.
func (m *topicManager) EnsureStreamExists(topic string, _ int) error { return m.ensure(topic) }

// EnsureTopicExists checks that the topic exists.
func (m *topicManager) EnsureTopicExists(topic string, _, _ int, _ map[string]string) error {
	return m.ensure(topic)
}

// GetOffset returns the offset of a partition at time (sarama.OffsetOldest
// or OffsetNewest for the ends).
func (m *topicManager) GetOffset(topic string, partition int32, time int64) (int64, error) {
	return m.client.GetOffset(topic, partition, time)
}

// Close closes the client.
func (m *topicManager) Close() error { return m.client.Close() }
