//go:build adversary18d

// Adversary round 4 of issue 18 (bounded resources). Broken promise:
// docs/configuration.md, "Memory": a consumer of a topic others write holds
// at most --fetch-buffer-bytes plus ~1 MiB of the fetch being handed over
// (plus ~8 times the wire size for a flood of records of a few bytes). A
// compressed batch defeats every wire-size bound: sarama inflates a batch up
// to clients.MaxInflatedBatchBytes (65 MiB) and decodes every record of it
// at once into a *ConsumerMessage of ~200 bytes, while the embedded broker
// (kfake, `chronos dev` and every processors test) stores the batch as the
// producer compressed it, whatever the topic's compression.type=uncompressed
// says. A few kB on the wire become tens of MiB held by one partition.
//
// Run: go test -tags adversary18d -count=1 -run TestAdversary18d ./instance/
package instance_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/testenv"
)

func TestAdversary18dCompressedTinyRecordsStayUnderFetchBuffer(t *testing.T) {
	const records = 300_000
	tenv := testenv.New(t, 1)
	kc, cfg := inboundKafka(t, tenv)
	topic := string(tenv.Layout.Jobs())
	cl, err := kgo.NewClient(kgo.SeedBrokers(kc.Brokers...),
		kgo.ProducerBatchCompression(kgo.ZstdCompression()),
		kgo.ProducerBatchMaxBytes(60<<20), kgo.ProducerLinger(time.Second))
	require.NoError(t, err)
	recs := make([]*kgo.Record, records)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Value: []byte{}}
	}
	require.NoError(t, cl.ProduceSync(context.Background(), recs...).FirstErr())
	cl.Close()
	recs = nil

	before := liveHeap()
	c, err := sarama.NewConsumer(kc.Brokers, kc.Sarama())
	require.NoError(t, err)
	defer c.Close()
	pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
	require.NoError(t, err)
	defer pc.AsyncClose()
	testenv.Eventually(t, 2*time.Minute, func() error {
		if got := len(pc.Messages()); got < cap(pc.Messages()) {
			return fmt.Errorf("%d of %d buffered", got, cap(pc.Messages()))
		}
		return nil
	})
	kept := liveHeap() - before
	// The documented bound, with the tiny-record allowance (8 MiB).
	bound := int64(cfg.FetchBufferBytes + 1<<20 + 8<<20)
	t.Logf("%d empty records in zstd batches: %.2f MiB held (bound %.1f MiB)", records, float64(kept)/(1<<20), float64(bound)/(1<<20))
	require.LessOrEqual(t, kept, bound, "compressed tiny records held beyond the documented bound")
}
