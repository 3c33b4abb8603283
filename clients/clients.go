// Package clients builds the Kafka clients Chronos uses from one validated
// Config: sarama configs for goka (a fresh *sarama.Config per builder, since
// goka writes ClientID into the config it is given) and franz-go options for
// the dispatch producer, the ticker, the admin client and the tools.
//
// Defaults differ from goka's on purpose: acks=all with the idempotent
// producer (goka defaults to acks=1), a 5 ms linger instead of a 100 ms flush
// timer, and new consumer groups start at the oldest offset so commands
// produced before the first start are not skipped. Batches are uncompressed
// by default (goka's too): every Kafka client reads them without a codec
// plugin (docs/topics.md, "Compression").
package clients

import (
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/topology"
)

// Acks settings.
const (
	AcksAll    = "all"    // every in-sync replica (default; required for idempotence)
	AcksLeader = "leader" // the partition leader only
	AcksNone   = "none"   // fire and forget
)

// Config is the Kafka connection and producer configuration shared by every
// client of one instance. Use Default and override fields; Validate reports
// every problem. A value; safe for concurrent use.
type Config struct {
	// Brokers are the bootstrap brokers, host:port.
	Brokers []string
	// ClientID prefixes the client ids Chronos sends (default "chronos").
	ClientID string
	// Acks is all (default), leader or none.
	Acks string
	// Idempotent enables the idempotent producer (default true; needs acks=all).
	Idempotent bool
	// Linger is how long a producer waits to fill a batch (default 5ms).
	Linger time.Duration
	// BatchBytes is the largest batch a producer sends (default 1 MiB).
	BatchBytes int
	// FetchBuffer is how many fetched records each of goka's consumers
	// (scheduler, router, clock, view) holds ahead of its callbacks per
	// partition (default DefaultFetchBuffer, goka's): a count, so its bytes
	// are this times the records' size. Instances derive it from a byte
	// budget (instance.Config.FetchBufferBytes).
	FetchBuffer int
	// FetchBytes is the most bytes one fetch response of goka's consumers
	// may carry across partitions (sarama's Consumer.Fetch.MaxBytes; the
	// broker adds one batch beyond it when the first is larger). 0 keeps
	// sarama's 50 MiB. Instances set it to their fetch buffer budget: a
	// partition whose callback is busy keeps the response its next records
	// came in until it has handed them over.
	FetchBytes int
	// Compression is none (default), gzip, snappy, lz4 or zstd: the codec of
	// every batch Chronos produces, on every topic. none and gzip are read
	// by every common client as is; kafkajs needs a plugin for the others.
	Compression string
	// TLS encrypts (and with a client certificate, authenticates) every
	// connection to the brokers (default off).
	TLS TLS
	// SASL authenticates every connection (default off). Its password
	// never prints; see Secret.
	SASL SASL
}

// MaxInflatedBatchBytes bounds what one compressed batch may inflate to in
// goka's sarama consumers: the largest batch --batch-bytes allows (64 MiB)
// plus framing. Brokers refuse bigger ones on the topics others write
// (compression.type=uncompressed, topology.Layout.Topics); this is defense
// in depth for a topic whose setting was changed behind Chronos' back. A
// batch over it is not inflated: sarama logs "decompressed record batch is
// larger than the configured limit" and retries the fetch, so the
// partitions fetched with it stop until the record is removed, where
// without a bound the process would run out of memory on every restart.
const MaxInflatedBatchBytes = 65 << 20

func init() {
	// A process-wide sarama setting; Chronos sets nothing else there.
	sarama.MaxDecompressedBatchSize = MaxInflatedBatchBytes
}

// Default returns the default configuration for brokers.
func Default(brokers ...string) Config {
	return Config{Brokers: brokers, ClientID: "chronos", Acks: AcksAll, Idempotent: true,
		Linger: 5 * time.Millisecond, BatchBytes: 1 << 20, Compression: "none", FetchBuffer: DefaultFetchBuffer}
}

// DefaultFetchBuffer is the default FetchBuffer, goka's.
const DefaultFetchBuffer = 256

// Validate reports every problem with c.
func (c Config) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("clients: no brokers"))
	}
	for _, b := range c.Brokers {
		if !strings.Contains(b, ":") {
			errs = append(errs, fmt.Errorf("clients: broker %q is not host:port", b))
		}
	}
	switch c.Acks {
	case AcksAll, AcksLeader, AcksNone:
	default:
		errs = append(errs, fmt.Errorf("clients: acks %q, want all, leader or none", c.Acks))
	}
	if c.Idempotent && c.Acks != AcksAll {
		errs = append(errs, errors.New("clients: the idempotent producer needs acks=all"))
	}
	if c.Linger < 0 || c.Linger > time.Minute {
		errs = append(errs, fmt.Errorf("clients: linger %s, want 0..1m", c.Linger))
	}
	if c.BatchBytes < 1<<10 || c.BatchBytes > 64<<20 {
		errs = append(errs, fmt.Errorf("clients: batch bytes %d, want 1KiB..64MiB", c.BatchBytes))
	}
	if c.FetchBuffer < 0 || c.FetchBuffer > 4096 {
		errs = append(errs, fmt.Errorf("clients: fetch buffer %d, want 1..4096 records (0: the default)", c.FetchBuffer))
	}
	if c.FetchBytes < 0 || c.FetchBytes > 1<<30 {
		errs = append(errs, fmt.Errorf("clients: fetch bytes %d, want up to 1 GiB (0: sarama's default)", c.FetchBytes))
	}
	if _, err := c.saramaCodec(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.TLS.validate()...)
	errs = append(errs, c.SASL.validate()...)
	return errors.Join(errs...)
}

func (c Config) saramaCodec() (sarama.CompressionCodec, error) {
	switch c.Compression {
	case "none", "":
		return sarama.CompressionNone, nil
	case "gzip":
		return sarama.CompressionGZIP, nil
	case "snappy":
		return sarama.CompressionSnappy, nil
	case "lz4":
		return sarama.CompressionLZ4, nil
	case "zstd":
		return sarama.CompressionZSTD, nil
	}
	return 0, fmt.Errorf("clients: compression %q, want none, gzip, snappy, lz4 or zstd", c.Compression)
}

func (c Config) kgoCodec() kgo.CompressionCodec {
	switch c.Compression {
	case "gzip":
		return kgo.GzipCompression()
	case "snappy":
		return kgo.SnappyCompression()
	case "lz4":
		return kgo.Lz4Compression()
	case "zstd":
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

// Sarama returns a new *sarama.Config for one goka builder, with the TLS and
// SASL settings of c (SCRAM through franz-go's implementation).
func (c Config) Sarama() *sarama.Config {
	s := goka.DefaultConfig()
	s.Version = sarama.V3_6_0_0
	s.ClientID = c.ClientID
	s.Consumer.Offsets.Initial = sarama.OffsetOldest
	// Records of transactions their producer aborted are never handed over
	// (a client writing commands with a transactional producer that aborts
	// a delete keeps its job); an open transaction holds its partition at
	// the last stable offset until it ends or transaction.timeout.ms
	// passes (docs/topics.md).
	s.Consumer.IsolationLevel = sarama.ReadCommitted
	if c.FetchBuffer > 0 {
		s.ChannelBufferSize = c.FetchBuffer
	}
	if c.FetchBytes > 0 {
		s.Consumer.Fetch.MaxBytes = int32(c.FetchBytes)
	}
	// The patched decoder (third_party/sarama) copies each record's bytes
	// out of the fetch response and keeps at most sarama.MaxRecordHeaders
	// headers; a record it cut is marked here for the processors to reject.
	s.Consumer.Interceptors = append(s.Consumer.Interceptors, markCutHeaders{})
	s.Producer.Return.Successes = true
	s.Producer.Flush.Frequency = c.Linger
	if c.Linger == 0 {
		s.Producer.Flush.Frequency = time.Millisecond
	}
	s.Producer.Flush.Bytes = c.BatchBytes
	s.Producer.MaxMessageBytes = c.BatchBytes
	s.Producer.Compression, _ = c.saramaCodec()
	switch c.Acks {
	case AcksAll:
		s.Producer.RequiredAcks = sarama.WaitForAll
	case AcksLeader:
		s.Producer.RequiredAcks = sarama.WaitForLocal
	default:
		s.Producer.RequiredAcks = sarama.NoResponse
	}
	if c.Idempotent {
		s.Producer.Idempotent = true
		s.Net.MaxOpenRequests = 1
	}
	c.saramaSecurity(s)
	return s
}

// clientSarama is Sarama for goka's consumers, consumer groups, producers
// and topic managers: a client that keeps the metadata of the topics it uses
// only, not of every topic on the cluster (sarama's Metadata.Full, on by
// default): each goka consumer, consumer group, producer and topic manager has its own
// sarama client, and on a cluster other teams share every one of them held
// all of its topics and partitions (44 MB of an instance's 61 MB of heap
// next to 2,000 topics of 6 partitions, docs/performance.md). A topic it
// asks for by name is never created by the asking (Chronos creates its
// topics first, topology.EnsureVisible).
func (c Config) clientSarama() *sarama.Config {
	s := c.Sarama()
	s.Metadata.Full = false
	s.Metadata.AllowAutoTopicCreation = false
	return s
}

// GokaPartitionChannel is the size of the channel each goka processor keeps
// per partition between its consumers and its callbacks (goka's default is
// 10; docs/configuration.md, "Memory"). Every record in it is a record
// fetched ahead on top of sarama's FetchBuffer, and on the topics others
// write a record may be as large as the broker's max.message.bytes: 0 hands
// each record over directly.
const GokaPartitionChannel = 0

// GokaProcessorOptions returns the goka options that make a processor use
// this configuration, each builder with its own sarama config, and a
// partition channel of GokaPartitionChannel records. (The instance adds
// StrictTableWrites, which needs its stores' failure count.)
func (c Config) GokaProcessorOptions() []goka.ProcessorOption {
	return []goka.ProcessorOption{
		goka.WithPartitionChannelSize(GokaPartitionChannel),
		goka.WithProducerBuilder(c.producerBuilder()),
		goka.WithConsumerGroupBuilder(goka.ConsumerGroupBuilderWithConfig(c.clientSarama())),
		goka.WithConsumerSaramaBuilder(goka.SaramaConsumerBuilderWithConfig(c.clientSarama())),
		goka.WithTopicManagerBuilder(c.TopicManagerBuilder()),
	}
}

// GokaViewOptions returns the goka options for a view.
func (c Config) GokaViewOptions() []goka.ViewOption {
	return []goka.ViewOption{
		goka.WithViewConsumerSaramaBuilder(goka.SaramaConsumerBuilderWithConfig(c.clientSarama())),
		goka.WithViewTopicManagerBuilder(c.TopicManagerBuilder()),
	}
}

// TopicManagerBuilder returns the topic manager goka's processors and
// views use (see topicManager): it creates nothing, since Chronos creates
// every topic itself beforehand (topology.EnsureVisible).
func (c Config) TopicManagerBuilder() goka.TopicManagerBuilder {
	return func(brokers []string) (goka.TopicManager, error) {
		return newTopicManager(brokers, c.clientSarama())
	}
}

// GokaProducer returns goka's producer (sarama) with this configuration and
// goka's partitioning, the producer goka's ctx.Emit and SetValue use, as
// it is (the processors' is wrapped in InOrder): what `chronos bench`
// measures the transport's ceiling with.
func (c Config) GokaProducer() (goka.Producer, error) {
	return c.saramaProducerBuilder()(c.Brokers, c.ClientID, goka.DefaultHasher())
}

// producerBuilder is the processors' producer: goka's, reporting its
// records in order and failing every record after one that failed
// (InOrder).
func (c Config) producerBuilder() goka.ProducerBuilder {
	pb := c.saramaProducerBuilder()
	return func(brokers []string, clientID string, hasher func() hash.Hash32) (goka.Producer, error) {
		p, err := pb(brokers, clientID, hasher)
		if err != nil {
			return nil, err
		}
		return InOrder(p), nil
	}
}

func (c Config) saramaProducerBuilder() goka.ProducerBuilder {
	cfg := c.clientSarama()
	return func(brokers []string, clientID string, hasher func() hash.Hash32) (goka.Producer, error) {
		cfg.ClientID = clientID
		cfg.Producer.Partitioner = sarama.NewCustomHashPartitioner(hasher)
		return goka.NewProducer(brokers, cfg)
	}
}

// Kgo returns franz-go options for a client of this configuration: seeds,
// client id, TLS and SASL, producer settings and goka-compatible
// partitioning.
func (c Config) Kgo(extra ...kgo.Opt) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.Brokers...),
		kgo.ClientID(c.ClientID),
		kgo.RecordPartitioner(topology.Partitioner()),
		kgo.ProducerLinger(c.Linger),
		kgo.ProducerBatchMaxBytes(int32(c.BatchBytes)),
		kgo.ProducerBatchCompression(c.kgoCodec()),
		kgo.MaxBufferedRecords(1 << 20),
	}
	switch c.Acks {
	case AcksAll:
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case AcksLeader:
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
	default:
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
	}
	if !c.Idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	opts = append(opts, c.kgoSecurity()...)
	return append(opts, extra...)
}

// NewKgo returns a franz-go client of this configuration.
func (c Config) NewKgo(extra ...kgo.Opt) (*kgo.Client, error) {
	cl, err := kgo.NewClient(c.Kgo(extra...)...)
	if err != nil {
		return nil, fmt.Errorf("clients: %w", err)
	}
	return cl, nil
}

// markCutHeaders is a sarama consumer interceptor that replaces the headers
// of a record the decoder cut (more than sarama.MaxRecordHeaders) with one
// codecs.DroppedHeadersHeader holding the record's header count, so the
// processors reject it (codecs.CheckHeaders) instead of applying a record
// whose headers are incomplete.
type markCutHeaders struct{}

// OnConsume marks msg if its decoder dropped headers.
func (markCutHeaders) OnConsume(msg *sarama.ConsumerMessage) {
	if msg.DroppedHeaders > 0 {
		n := int64(len(msg.Headers)) + msg.DroppedHeaders
		msg.Headers = []*sarama.RecordHeader{{Key: []byte(codecs.DroppedHeadersHeader), Value: strconv.AppendInt(nil, n, 10)}}
	}
}
