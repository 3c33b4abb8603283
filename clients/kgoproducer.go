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
// the table's local offset) or with the error that failed it.
//
// The producer is never idempotent, whatever the configuration says:
// franz-go's idempotent producer does not fail a record whose request it
// may have written until the broker answers it, so a broker that stops
// answering would hold the history's callback (and, once the buffer below
// is full, the instance's shutdown) for as long as it stays silent
// (adversary round 48). Without idempotence one request is in flight per
// broker, so retries do not reorder a partition's records; a retry may
// write a record twice, which a compacted table of whole records absorbs
// (the later of two equal records wins). A record fails after
// KgoGokaDeliveryTimeout without an acknowledgement; goka then stops the
// partition and the group's supervisor restarts it, and the store, which
// holds the write the changelog lacks, is discarded and restored
// (store.Options.Settled, wired by the instance through
// WriteAcks).
//
// At most KgoGokaBufferedRecords records (and KgoGokaBufferedBytes) wait
// in the client, then an emit blocks its callback until one finishes:
// each waiting record's promise keeps its callback's input (a dispatch
// event with its payload) in memory, so the count bounds that too.
func (c Config) KgoProducerBuilder() goka.ProducerBuilder {
	return func(brokers []string, clientID string, _ func() hash.Hash32) (goka.Producer, error) {
		cfg := c
		cfg.Brokers, cfg.ClientID = brokers, clientID
		cl, err := cfg.NewKgo(
			kgo.DisableIdempotentWrite(),
			kgo.MaxProduceRequestsInflightPerBroker(1),
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
	// KgoGokaBufferedRecords bounds their count, and so the callbacks'
	// inputs their promises keep: with --max-payload 64 KiB, ~65 MiB.
	KgoGokaBufferedRecords = 1 << 10
)

// KgoGokaDeliveryTimeout is how long a record of a KgoProducerBuilder
// producer may wait for its acknowledgement before it fails (a variable
// so that tests can shorten it; read when a producer is built).
var KgoGokaDeliveryTimeout = 30 * time.Second

const (
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
