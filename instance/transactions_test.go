package instance_test

import (
	"context"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestAbortedCommandsAreNotHandedOver: adversary 18d found (a
// command is applied once its producer has written it; docs/topics.md,
// chronos-jobs is written by any client): with sarama's default isolation level (read_uncommitted) goka's
// consumers handed over records of transactions their producer aborted. A client writing
// commands with a transactional producer (exactly-once pipelines, Kafka
// Streams, Flink) that aborts a delete after a failure has the job deleted
// anyway. (read_committed has its own cost: an open transaction holds the
// partition at the last stable offset until transaction.timeout.ms.)
//
// Run: go test -count=1 -run TestAbortedCommands ./instance/
func TestAbortedCommandsAreNotHandedOver(t *testing.T) {
	tenv := testenv.New(t, 1)
	kc, _ := inboundKafka(t, tenv)
	topic := string(tenv.Layout.Jobs())
	cl, err := kgo.NewClient(kgo.SeedBrokers(kc.Brokers...), kgo.TransactionalID("adv18d"))
	require.NoError(t, err)
	defer cl.Close()
	ctx := context.Background()
	require.NoError(t, cl.BeginTransaction())
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("aborted"),
		Value: testenv.PutCommand("aborted", codecs.JobDef{Cron: "0 0 1 1 *"})}).FirstErr())
	require.NoError(t, cl.EndTransaction(ctx, kgo.TryAbort))
	tenv.Put("after", codecs.JobDef{Cron: "0 0 1 1 *"}, time.Now())

	c, err := sarama.NewConsumer(kc.Brokers, kc.Sarama())
	require.NoError(t, err)
	defer c.Close()
	pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
	require.NoError(t, err)
	defer pc.AsyncClose()
	var got []string
	deadline := time.After(30 * time.Second)
	for len(got) == 0 || got[len(got)-1] != "after" {
		select {
		case m := <-pc.Messages():
			got = append(got, string(m.Key))
		case <-deadline:
			t.Fatalf("after 30 s the consumer handed over %q", got)
		}
	}
	require.Equal(t, []string{"after"}, got, "a command of an aborted transaction is handed over to the processors")
}
