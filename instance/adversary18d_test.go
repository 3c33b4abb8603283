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
// says. The embedded broker's bomb check lets each batch inflate to 1 MiB,
// and 1 MiB of empty records (117,424 of them) compresses with zstd to
// 97,917 bytes: ~250 kB on the wire here hold 35 MiB (~120 bytes per
// record). By the same figures one partition's 1 MiB fetch is ~1.2 million
// records, ~140 MiB, against the documented ~9 MiB per busy partition, for
// each of P partitions and 3 consumers of the topics others write.
//
// Run: go test -tags adversary18d -count=1 -run TestAdversary18d ./instance/
package instance_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"hash/crc32"
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
	now := time.Now().UnixMilli()
	b := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: count - 1,
		FirstTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: count, Records: bytes.Join(records, nil)}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// TestAdversary18dValidRecordsNextToABadOne: broken promise (COMMON
// standards, docs/security.md): bad input gets a clear error and never
// stops a processor or loses a valid command. A batch the embedded broker
// (kfake: `chronos dev`, every processors test) stores because its length
// and CRC are right, holding a valid put and then a malformed record (a
// header length that is negative, or past the record's end, in the kept
// headers or in the patched decoder's skip path past 64 headers; or a
// record count that lies), makes sarama fail the whole batch: the valid
// put before the bad record, and the valid put produced after it in a
// batch of its own, never arrive: the partition stops (sarama treats the
// batch as a partial trailing one and doubles its fetch size forever, or
// fails the fetch response). Apache Kafka validates each record on produce
// and refuses such batches.
//
// Run: go test -tags adversary18d -count=1 -run TestAdversary18d ./instance/
func TestAdversary18dValidRecordsNextToABadOne(t *testing.T) {
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
	for _, tc := range []struct {
		name  string
		batch []byte
	}{
		// control: the same encoder with nothing bad; passes.
		{"control-valid", rawBatch(2, good("good", 0), good("good2", 1))},
		{"count-lies", rawBatch(3, good("good", 0), good("good2", 1))},
		{"negative-header-key", rawBatch(2, good("good", 0), rawRecord(1, []byte("bad"), []byte("{}"), hdr(0, -2)))},
		{"header-past-end", rawBatch(2, good("good", 0), rawRecord(1, []byte("bad"), []byte("{}"), hdr(0, 1<<20)))},
		{"skip-path-negative", rawBatch(2, good("good", 0), rawRecord(1, []byte("bad"), []byte("{}"), hdr(70, -5, -1)))},
		{"skip-path-past-end", rawBatch(2, good("good", 0), rawRecord(1, []byte("bad"), []byte("{}"), hdr(70, 1, 'x', 1<<20)))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tenv := testenv.New(t, 1)
			kc, _ := inboundKafka(t, tenv)
			topic := string(tenv.Layout.Jobs())
			adm := kadm.NewClient(tenv.Client)
			var leader int32
			var topicID [16]byte
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
			rp.Records = tc.batch
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := tenv.Client.Broker(int(leader)).Request(context.Background(), req)
			require.NoError(t, err)
			if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
				t.Skipf("the broker refuses the batch (%v): nothing reaches the consumers", kerr.ErrorForCode(code))
			}
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
					t.Fatalf("after 30 s the consumer handed over %q: the valid put before the bad record and the one after it are lost, the partition stopped", got)
				}
			}
			require.Contains(t, got, "good", "the valid put next to the bad record is lost")
		})
	}
}
