package clients

import (
	"context"
	"hash"
	"time"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/twmb/franz-go/pkg/kgo"
)

// KgoProducerBuilder returns a goka producer builder whose producers are
// franz-go clients of this configuration (seeds, client id, TLS, SASL,
// acks, idempotence, linger, batch size and compression as every other
// producer of Chronos; goka's FNV-1a partitioning, topology.Partitioner),
// for a goka group whose table writes follow its input one for one: the
// history group writes its changelog once per dispatch event, and
// sarama's producer spent ~6 µs of CPU on each such record where
// franz-go spends a fraction (docs/performance.md, "Producer path").
//
// What goka sees is the same: each emit's promise finishes once the
// broker acknowledged the record (with its offset, which goka stores as
// the table's local offset) or with the error that failed it. A record
// fails after KgoGokaDeliveryTimeout without an acknowledgement (sarama
// failed after its retries, ~1 s of an unreachable leader); the
// processor then stops the partition's callback as with sarama and the
// group's supervisor restarts it. At most KgoGokaBufferedBytes of
// records wait in the client (then an emit blocks its callback until
// the broker acknowledges), so a slow broker holds the processor back
// instead of filling memory.
func (c Config) KgoProducerBuilder() goka.ProducerBuilder {
	return func(brokers []string, clientID string, _ func() hash.Hash32) (goka.Producer, error) {
		cfg := c
		cfg.Brokers, cfg.ClientID = brokers, clientID
		cl, err := cfg.NewKgo(
			kgo.MaxBufferedBytes(KgoGokaBufferedBytes),
			kgo.MaxBufferedRecords(KgoGokaBufferedRecords),
			kgo.RecordDeliveryTimeout(KgoGokaDeliveryTimeout),
		)
		if err != nil {
			return nil, err
		}
		return kgoProducer{cl: cl}, nil
	}
}

const (
	// KgoGokaBufferedBytes bounds the records a KgoProducerBuilder
	// producer holds unacknowledged.
	KgoGokaBufferedBytes = 16 << 20
	// KgoGokaBufferedRecords bounds their count.
	KgoGokaBufferedRecords = 1 << 16
	// KgoGokaDeliveryTimeout is how long a record may wait for its
	// acknowledgement before it fails.
	KgoGokaDeliveryTimeout = 30 * time.Second
	// kgoCloseWait bounds Close's wait for the records still in flight
	// (goka's sarama producer waits 60 s too).
	kgoCloseWait = 60 * time.Second
)

// kgoProducer is goka.Producer on a franz-go client.
type kgoProducer struct{ cl *kgo.Client }

func (p kgoProducer) Emit(topic, key string, value []byte) *goka.Promise {
	return p.EmitWithHeaders(topic, key, value, nil)
}

func (p kgoProducer) EmitWithHeaders(topic, key string, value []byte, headers goka.Headers) *goka.Promise {
	promise, finish := goka.NewPromiseWithFinisher()
	rec := &kgo.Record{Topic: topic, Key: []byte(key), Value: value}
	if len(headers) > 0 {
		rec.Headers = make([]kgo.RecordHeader, 0, len(headers))
		for k, v := range headers {
			rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: k, Value: v})
		}
	}
	p.cl.Produce(context.Background(), rec, func(r *kgo.Record, err error) {
		finish(&sarama.ProducerMessage{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}, err)
	})
	return promise
}

// Close waits for the records in flight (at most kgoCloseWait; those
// still unacknowledged then fail) and closes the client.
func (p kgoProducer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), kgoCloseWait)
	defer cancel()
	_ = p.cl.Flush(ctx)
	p.cl.Close()
	return nil
}
