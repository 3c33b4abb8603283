// Adversary round 4 of issue 18 (adversary18d): two ways a producer with
// Write on a topic others write broke a promise on the embedded broker
// (kfake: `chronos dev`, every processors test) and not on Apache Kafka,
// which validates each batch on produce and recompresses it to the topic's
// compression.type. The embedded broker now does both (embedded/produce.go);
// these tests run on both brokers (CHRONOS_TEST_BROKERS for Apache Kafka).
package instance_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestCompressedTinyRecordsStayUnderFetchBuffer: docs/configuration.md,
// "Memory": a consumer of a topic others write holds at most
// --fetch-buffer-bytes plus ~1 MiB of the fetch being handed over (plus
// up to ~14 times the wire size for a flood of empty records). A
// compressed batch would defeat every wire-size bound: sarama inflates a
// batch up to clients.MaxInflatedBatchBytes (65 MiB) and decodes every
// record of it at once into a *ConsumerMessage of ~200 bytes, and 1 MiB of
// empty records (117,424 of them) compresses with zstd to 97,917 bytes.
// The embedded broker stored batches as the producer compressed them,
// whatever the topic's compression.type=uncompressed said: 300,000 empty
// records held 35-37 MiB against the bound of 13. Apache Kafka, and now the
// embedded broker, store them uncompressed on these topics, so the fetch's
// 1 MiB per partition is 1 MiB of records.

func TestCompressedTinyRecordsStayUnderFetchBuffer(t *testing.T) {
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
	// The documented bound, with the allowance for a fetch of empty
	// records: ~9 bytes each on the wire, ~120 decoded (a heap profile of
	// this test: ~14 MB in sarama's parseRecords), so 1 MiB of them is
	// ~14 MiB. The measure over the live heap before the consumer started
	// ranged 10.2-17.3 MiB on the embedded broker (in-process: the heap
	// also holds the broker), 11.0 MiB on Apache Kafka.
	bound := int64(cfg.FetchBufferBytes + 1<<20 + 14<<20)
	t.Logf("%d empty records in zstd batches: %.2f MiB held (bound %.1f MiB)", records, float64(kept)/(1<<20), float64(bound)/(1<<20))
	require.LessOrEqual(t, kept, bound, "compressed tiny records held beyond the documented bound")
}

// rawRecord encodes one v2 record (docs: Kafka's record format) with the
// given header fields written as they come: hdrs is the header count, then
// each pair's (key length, key, value length, value) as raw varints/bytes.
func rawRecord(offsetDelta int64, key, value []byte, hdrs []byte) []byte {
	var body []byte
	body = append(body, 0)              // attributes
	body = binary.AppendVarint(body, 0) // timestamp delta
	body = binary.AppendVarint(body, offsetDelta)
	body = binary.AppendVarint(body, int64(len(key)))
	body = append(body, key...)
	body = binary.AppendVarint(body, int64(len(value)))
	body = append(body, value...)
	body = append(body, hdrs...)
	return append(binary.AppendVarint(nil, int64(len(body))), body...)
}

// rawBatch is an uncompressed v2 batch of records, claiming count records,
// with its length and CRC right (what a broker checks before storing it).
func rawBatch(count int32, records ...[]byte) []byte {
	return rawBatchCodec(0, count, bytes.Join(records, nil))
}

// rawBatchCodec is a v2 batch whose records section is data, compressed
// with codec (0: none), claiming count records, with its length and CRC
// right.
func rawBatchCodec(codec int16, count int32, data []byte) []byte {
	now := time.Now().UnixMilli()
	b := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, Attributes: codec, LastOffsetDelta: count - 1,
		FirstTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: count, Records: data}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// produceRawBatch sends batch as it is to topic/0's leader, once the
// topic is visible there, and returns the partition's error code.
func produceRawBatch(t *testing.T, tenv *testenv.Env, topic string, batch []byte) int16 {
	t.Helper()
	var leader int32
	var topicID [16]byte
	adm := kadm.NewClient(tenv.Client)
	testenv.Eventually(t, 30*time.Second, func() error {
		td, err := adm.ListTopics(context.Background(), topic)
		if err != nil {
			return err
		}
		p, ok := td[topic].Partitions[0]
		if !ok || p.Leader < 0 {
			return fmt.Errorf("no leader for %s/0", topic)
		}
		leader, topicID = p.Leader, td[topic].ID
		return nil
	})
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, topicID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := tenv.Client.Broker(int(leader)).Request(context.Background(), req)
	require.NoError(t, err)
	return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

// TestMalformedBatchIsRefusedAndThePartitionGoesOn: bad input gets a
// clear error and never stops a processor or loses a valid command
// (docs/security.md). A batch whose length and CRC are right, holding a
// valid put and then a malformed record (a header length that is
// negative, or past the record's end, in the kept headers or in the
// patched decoder's skip path past 64 headers; a record count that lies;
// the same in a zstd batch), was stored by the embedded broker, and sarama
// then failed the whole batch: the put before the bad record and every
// put after it never arrived, the partition stopped (sarama takes the
// batch for a partial trailing one and doubles its fetch size forever, or
// fails the fetch response). Apache Kafka validates each record on produce
// and refuses such a batch (INVALID_RECORD), and so does the embedded
// broker now: the producer learns that its batch is refused, and the puts
// produced after it arrive. The valid control batch, sent raw the same
// way, is stored and read back whole.
func TestMalformedBatchIsRefusedAndThePartitionGoesOn(t *testing.T) {
	hdr := func(n int, tail ...int64) []byte { // n good empty headers, then a header with raw key length tail[0]
		b := binary.AppendVarint(nil, int64(n+min(len(tail), 1)))
		for range n {
			b = binary.AppendVarint(b, 1)
			b = append(b, 'h')
			b = binary.AppendVarint(b, -1)
		}
		for _, v := range tail {
			b = binary.AppendVarint(b, v)
		}
		return b
	}
	good := func(id string, delta int64) []byte {
		return rawRecord(delta, []byte(id), testenv.PutCommand(id, codecs.JobDef{Cron: "0 0 1 1 *"}), hdr(0))
	}
	bad := func(tail ...int64) []byte { return rawRecord(1, []byte("bad"), []byte("{}"), hdr(0, tail...)) }
	zstdBatch := func(count int32, records ...[]byte) []byte {
		w, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		require.NoError(t, err)
		defer w.Close()
		return rawBatchCodec(4, count, w.EncodeAll(bytes.Join(records, nil), nil))
	}
	tenv := testenv.New(t, 1)
	kc, _ := inboundKafka(t, tenv)
	topic := string(tenv.Layout.Jobs())
	c, err := sarama.NewConsumer(kc.Brokers, kc.Sarama())
	require.NoError(t, err)
	defer c.Close()
	pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
	require.NoError(t, err)
	defer pc.AsyncClose()

	for _, tc := range []struct {
		name  string
		batch []byte
		want  []string // keys read before the marker; nil: refused
	}{
		// control: the same encoder with nothing bad.
		{"control-valid", rawBatch(2, good("good", 0), good("good2", 1)), []string{"good", "good2"}},
		{"control-valid-zstd", zstdBatch(2, good("good3", 0), good("good4", 1)), []string{"good3", "good4"}},
		{"count-lies", rawBatch(3, good("good", 0), good("good2", 1)), nil},
		{"count-lies-low", rawBatch(1, good("good", 0), good("good2", 1)), nil},
		{"negative-header-key", rawBatch(2, good("good", 0), bad(-2)), nil},
		{"header-past-end", rawBatch(2, good("good", 0), bad(1<<20)), nil},
		{"skip-path-negative", rawBatch(2, good("good", 0), rawRecord(1, []byte("bad"), []byte("{}"), hdr(70, -5, -1))), nil},
		{"skip-path-past-end", rawBatch(2, good("good", 0), rawRecord(1, []byte("bad"), []byte("{}"), hdr(70, 1, 'x', 1<<20))), nil},
		{"zstd-count-lies", zstdBatch(3, good("good", 0), good("good2", 1)), nil},
		{"zstd-negative-header-key", zstdBatch(2, good("good", 0), bad(-2)), nil},
	} {
		code := produceRawBatch(t, tenv, topic, tc.batch)
		if tc.want != nil {
			require.Zero(t, code, "%s: stored (%v)", tc.name, kerr.ErrorForCode(code))
		} else {
			require.Equal(t, kerr.InvalidRecord.Code, code, "%s: refused as Apache Kafka does, got %v", tc.name, kerr.ErrorForCode(code))
		}
		marker := "after-" + tc.name
		tenv.Put(marker, codecs.JobDef{Cron: "0 0 1 1 *"}, time.Now())
		var got []string
		deadline := time.After(30 * time.Second)
	read:
		for {
			select {
			case m := <-pc.Messages():
				if string(m.Key) == marker {
					break read
				}
				got = append(got, string(m.Key))
			case err := <-pc.Errors():
				t.Fatalf("%s: the consumer failed: %v", tc.name, err)
			case <-deadline:
				t.Fatalf("%s: after 30 s the consumer handed over %q and not the put produced after the batch: the partition stopped", tc.name, got)
			}
		}
		require.Equal(t, tc.want, got, "%s: what the consumer read before the put produced after the batch", tc.name)
	}
}

// TestNegativeLengthsReadAsNull: Apache Kafka 4.4.0 stores a record whose
// value or header value length is below -1 (it reads any negative length
// as null, as its Java consumer does), and upstream sarama failed the
// whole batch at every fetch ("invalid byteslice length"): the valid put
// before it and everything after it never arrived. The patched decoder
// (third_party/sarama) reads such a length as null, as Kafka does; the
// embedded broker refuses the batch (INVALID_RECORD, stricter than Kafka).
// Either way the put produced after it arrives.
func TestNegativeLengthsReadAsNull(t *testing.T) {
	tenv := testenv.New(t, 1)
	kc, _ := inboundKafka(t, tenv)
	topic := string(tenv.Layout.Jobs())
	put := testenv.PutCommand("good", codecs.JobDef{Cron: "0 0 1 1 *"})
	var body []byte
	body = append(body, 0)
	body = binary.AppendVarint(body, 0)
	body = binary.AppendVarint(body, 1)
	body = binary.AppendVarint(body, 7)
	body = append(body, "nullish"...)
	body = binary.AppendVarint(body, -2) // value
	body = binary.AppendVarint(body, 1)  // one header
	body = binary.AppendVarint(body, 1)
	body = append(body, 'h')
	body = binary.AppendVarint(body, -5) // its value
	nullish := append(binary.AppendVarint(nil, int64(len(body))), body...)
	batch := rawBatch(2, rawRecord(0, []byte("good"), put, []byte{0}), nullish)

	code := produceRawBatch(t, tenv, topic, batch)
	stored := code == 0
	if tenv.Broker != nil {
		require.Equal(t, kerr.InvalidRecord.Code, code, "the embedded broker refuses lengths below -1")
	} else {
		require.Zero(t, code, "Apache Kafka stores lengths below -1 (%v)", kerr.ErrorForCode(code))
	}
	tenv.Put("after", codecs.JobDef{Cron: "0 0 1 1 *"}, time.Now())

	c, err := sarama.NewConsumer(kc.Brokers, kc.Sarama())
	require.NoError(t, err)
	defer c.Close()
	pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
	require.NoError(t, err)
	defer pc.AsyncClose()
	var got []*sarama.ConsumerMessage
	deadline := time.After(30 * time.Second)
	for len(got) == 0 || string(got[len(got)-1].Key) != "after" {
		select {
		case m := <-pc.Messages():
			got = append(got, m)
		case err := <-pc.Errors():
			t.Fatalf("the consumer failed: %v", err)
		case <-deadline:
			t.Fatalf("after 30 s the consumer handed over %d records and not the put produced after the batch: the partition stopped", len(got))
		}
	}
	if !stored {
		require.Len(t, got, 1, "nothing of the refused batch")
		return
	}
	require.Len(t, got, 3)
	require.Equal(t, "good", string(got[0].Key))
	require.Equal(t, put, got[0].Value)
	require.Equal(t, "nullish", string(got[1].Key))
	require.Nil(t, got[1].Value, "a value length of -2 reads as null")
	require.Len(t, got[1].Headers, 1)
	require.Equal(t, "h", string(got[1].Headers[0].Key))
	require.Nil(t, got[1].Headers[0].Value, "a header value length of -5 reads as null")
}

// TestOutOfSequenceOffsetDeltasAreNumberedInOrder: Apache Kafka 4.4.0
// stores an uncompressed batch's offset deltas as the producer wrote them
// (it assigns the batch its offsets, base to base+count-1, in the header
// only), and sarama numbered the records by them: deltas 0, 5 made the
// consumer move past the partition's end ("offset out of range") and
// stop handing over records, deltas 0, 0 made it drop the second record.
// The patched decoder (third_party/sarama) numbers the records of a batch
// that spans as many offsets as it holds records by position; the
// embedded broker refuses such batches (INVALID_RECORD, stricter than
// Kafka). Either way every put produced after the batch arrives, in order,
// at consecutive offsets.
func TestOutOfSequenceOffsetDeltasAreNumberedInOrder(t *testing.T) {
	tenv := testenv.New(t, 1)
	kc, _ := inboundKafka(t, tenv)
	topic := string(tenv.Layout.Jobs())
	c, err := sarama.NewConsumer(kc.Brokers, kc.Sarama())
	require.NoError(t, err)
	defer c.Close()
	pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
	require.NoError(t, err)
	defer pc.AsyncClose()
	put := func(id string, delta int64) []byte {
		return rawRecord(delta, []byte(id), testenv.PutCommand(id, codecs.JobDef{Cron: "0 0 1 1 *"}), []byte{0})
	}
	last := int64(-1)
	for _, deltas := range [][2]int64{{0, 5}, {0, 0}, {1, 0}, {0, 1}} {
		name := fmt.Sprintf("%d-%d", deltas[0], deltas[1])
		code := produceRawBatch(t, tenv, topic, rawBatch(2, put("a-"+name, deltas[0]), put("b-"+name, deltas[1])))
		inSequence := deltas == [2]int64{0, 1}
		var want []string
		switch {
		case inSequence:
			require.Zero(t, code, "%s: stored", name)
			want = []string{"a-" + name, "b-" + name}
		case tenv.Broker != nil:
			require.Equal(t, kerr.InvalidRecord.Code, code, "%s: the embedded broker refuses deltas out of sequence", name)
		default:
			require.Zero(t, code, "%s: Apache Kafka stores deltas out of sequence (%v)", name, kerr.ErrorForCode(code))
			want = []string{"a-" + name, "b-" + name}
		}
		marker := "after-" + name
		tenv.Put(marker, codecs.JobDef{Cron: "0 0 1 1 *"}, time.Now())
		want = append(want, marker)
		var got []string
		deadline := time.After(30 * time.Second)
		for len(got) < len(want) {
			select {
			case m := <-pc.Messages():
				require.Equal(t, last+1, m.Offset, "%s: %s's offset follows the previous record's", name, m.Key)
				last = m.Offset
				got = append(got, string(m.Key))
			case err := <-pc.Errors():
				t.Fatalf("%s: the consumer failed: %v", name, err)
			case <-deadline:
				t.Fatalf("%s: after 30 s the consumer handed over %q of %q: the partition stopped", name, got, want)
			}
		}
		require.Equal(t, want, got, name)
	}
}
