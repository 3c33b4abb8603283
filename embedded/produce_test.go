package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// genRecord is one record as a test generates it; nil key, value or
// header value is null.
type genRecord struct {
	key, value []byte
	headers    [][2][]byte
}

// randBytes is nil (null) one time in five, else up to n random bytes.
func randBytes(rng *rand.Rand, n int) []byte {
	if rng.IntN(5) == 0 {
		return nil
	}
	b := make([]byte, rng.IntN(n+1))
	for i := range b {
		b[i] = byte(rng.IntN(256))
	}
	return b
}

// genRecords is 1 to 40 random records, some with up to 70 headers (past
// sarama's 64 kept headers).
func genRecords(rng *rand.Rand) []genRecord {
	recs := make([]genRecord, 1+rng.IntN(40))
	for i := range recs {
		recs[i] = genRecord{key: randBytes(rng, 40), value: randBytes(rng, 300)}
		nh := rng.IntN(4)
		if rng.IntN(10) == 0 {
			nh = rng.IntN(71)
		}
		for range nh {
			k := randBytes(rng, 10)
			if k == nil {
				k = []byte{} // header keys are never null
			}
			recs[i].headers = append(recs[i].headers, [2][]byte{k, randBytes(rng, 20)})
		}
	}
	return recs
}

// appendVarBytes appends b with its varint length (-1 for nil).
func appendVarBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	return append(binary.AppendVarint(dst, int64(len(b))), b...)
}

// encodeRecords is the v2 records section of recs, offset deltas 0..n-1.
func encodeRecords(recs []genRecord) []byte {
	var out []byte
	for i, r := range recs {
		body := []byte{0}
		body = binary.AppendVarint(body, int64(i*3))
		body = binary.AppendVarint(body, int64(i))
		body = appendVarBytes(body, r.key)
		body = appendVarBytes(body, r.value)
		body = binary.AppendVarint(body, int64(len(r.headers)))
		for _, h := range r.headers {
			body = appendVarBytes(appendVarBytes(body, h[0]), h[1])
		}
		out = append(binary.AppendVarint(out, int64(len(body))), body...)
	}
	return out
}

// compressWith compresses records with codec (0 none, 4 zstd; others as
// in TestAdv18bGuardAgreesWithConsumer).
func compressWith(codec int16, records []byte) []byte {
	if codec == 0 {
		return records
	}
	if codec == 4 {
		w, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		defer w.Close()
		return w.EncodeAll(records, nil)
	}
	panic("codec")
}

// batchOf is a magic-2 batch declaring count records whose records
// section is data (compressed with codec), with length and CRC right.
func batchOf(codec int16, count int32, data []byte) []byte {
	now := time.Now().UnixMilli()
	b := kmsg.RecordBatch{Magic: 2, Attributes: codec, LastOffsetDelta: count - 1, NumRecords: count,
		FirstTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, Records: data}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:12], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:21], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// stored is the batch the broker keeps for raw after checkBatch: out if
// rewritten, raw otherwise.
func stored(raw, out []byte) []byte {
	if out != nil {
		return out
	}
	return raw
}

// requireSaramaReads decodes batch with the consumer's decoder and
// requires count records with offset deltas 0..count-1.
func requireSaramaReads(t *testing.T, batch []byte, count int32, msg string) *sarama.RecordBatch {
	t.Helper()
	b, err := sarama.DecodeRecordBatch(batch)
	require.NoError(t, err, "%s: accepted, and sarama's consumer cannot decode it", msg)
	require.Len(t, b.Records, int(count), msg)
	for i, r := range b.Records {
		require.EqualValues(t, i, r.OffsetDelta, "%s: record %d's offset", msg, i)
	}
	return b
}

// TestProduceValidationAcceptsValidBatches generates valid batches
// (random keys, values and headers, nulls, up to 70 headers), plain and
// zstd: each is accepted, a compressed one on an uncompressed topic is
// rewritten uncompressed and otherwise kept as sent, and sarama's consumer
// decodes exactly the generated records from what is stored.
func TestProduceValidationAcceptsValidBatches(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(18, 0xd))
	for i := range 2000 {
		recs := genRecords(rng)
		codec := []int16{0, 4}[rng.IntN(2)]
		plain := rng.IntN(2) == 0
		raw := batchOf(codec, int32(len(recs)), compressWith(codec, encodeRecords(recs)))
		out, err := checkBatch(raw, DefaultMaxInflatedBatchBytes, plain)
		require.NoError(t, err, "case %d: a valid batch is refused", i)
		require.Equal(t, codec != 0 && plain, out != nil, "case %d: rewritten exactly when compressed on an uncompressed topic", i)
		b := requireSaramaReads(t, stored(raw, out), int32(len(recs)), fmt.Sprintf("case %d", i))
		if out != nil {
			require.Equal(t, sarama.CompressionNone, b.Codec, "case %d: stored uncompressed", i)
		}
		for j, r := range recs {
			got := b.Records[j]
			require.Equal(t, r.key, got.Key, "case %d record %d key", i, j)
			require.Equal(t, r.value, got.Value, "case %d record %d value", i, j)
			require.EqualValues(t, max(0, len(r.headers)-sarama.MaxRecordHeaders), got.DroppedHeaders, "case %d record %d", i, j)
			for h, hd := range got.Headers {
				require.Equal(t, r.headers[h][0], hd.Key, "case %d record %d header %d", i, j, h)
				require.Equal(t, r.headers[h][1], hd.Value, "case %d record %d header %d", i, j, h)
			}
		}
	}
}

// FuzzProduceValidation mutates the records section, the declared count
// and the codec of valid batches: checkBatch never panics, and every batch
// it accepts, as it would be stored, decodes cleanly with sarama's
// consumer decoder (third_party/sarama, what Chronos consumes with) into
// exactly the declared records, offsets in sequence; a batch it rewrites
// passes the checks kfake applies after it (length, CRC).
// Run longer: go test -run '^$' -fuzz FuzzProduceValidation ./embedded/
func FuzzProduceValidation(f *testing.F) {
	rng := rand.New(rand.NewPCG(18, 0xf))
	for range 40 {
		recs := genRecords(rng)
		f.Add(encodeRecords(recs), int32(len(recs)), uint8(rng.IntN(2)*4), rng.IntN(2) == 0)
	}
	f.Add([]byte{}, int32(0), uint8(0), false)
	f.Fuzz(func(t *testing.T, records []byte, count int32, codec uint8, plain bool) {
		c := int16(codec % 5)
		if c != 0 && c != 4 {
			c = 0
		}
		raw := batchOf(c, count, compressWith(c, records))
		out, err := checkBatch(raw, 64<<10, plain)
		if err != nil {
			require.True(t, errors.Is(err, errInvalidRecord) || errors.Is(err, errInflated) || errors.Is(err, errUninflatable), "an error of a known kind: %v", err)
			return
		}
		if out != nil {
			var b kmsg.RecordBatch
			require.NoError(t, b.ReadFrom(out))
			require.EqualValues(t, len(out)-12, b.Length)
			require.Equal(t, crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)), uint32(b.CRC))
			require.Zero(t, b.Attributes&7, "rewritten uncompressed")
			require.Equal(t, records, b.Records, "the rewritten batch holds the inflated records")
		}
		requireSaramaReads(t, stored(raw, out), count, "accepted batch")
	})
}

// TestBrokerStoresUncompressedWhereTheTopicSaysSo produces zstd batches
// with franz-go to a topic with compression.type=uncompressed and to one
// without: fetched raw, the first topic's batches are uncompressed, the
// second's as produced, and both read back the same records.
func TestBrokerStoresUncompressedWhereTheTopicSaysSo(t *testing.T) {
	b, err := Start(Options{Partitions: 1})
	require.NoError(t, err)
	defer b.Close()
	adm, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	require.NoError(t, err)
	defer adm.Close()
	ctx := context.Background()
	plainCfg := "uncompressed"
	_, err = kadm.NewClient(adm).CreateTopic(ctx, 1, 1, map[string]*string{"compression.type": &plainCfg}, "plain")
	require.NoError(t, err)
	_, err = kadm.NewClient(adm).CreateTopic(ctx, 1, 1, nil, "asis")
	require.NoError(t, err)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	require.NoError(t, err)
	defer cl.Close()
	for _, topic := range []string{"plain", "asis"} {
		var recs []*kgo.Record
		for i := range 500 {
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte{byte(i)}, Value: bytes.Repeat([]byte("v"), i)})
		}
		require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
	}
	td, err := kadm.NewClient(adm).ListTopics(ctx, "plain", "asis")
	require.NoError(t, err)
	for topic, want := range map[string]int16{"plain": 0, "asis": 4} {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MaxBytes = 100, 64<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, td[topic].ID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 64 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, adm)
		require.NoError(t, err)
		raw := resp.Topics[0].Partitions[0].RecordBatches
		var n int32
		for len(raw) > 0 {
			var rb kmsg.RecordBatch
			require.NoError(t, rb.ReadFrom(raw))
			require.Equal(t, want, rb.Attributes&7, "%s: codec of a stored batch", topic)
			sb := requireSaramaReads(t, raw[:12+rb.Length], rb.NumRecords, topic)
			for _, r := range sb.Records {
				require.Equal(t, bytes.Repeat([]byte("v"), int(n)), r.Value, "%s: record %d", topic, n)
				n++
			}
			raw = raw[12+rb.Length:]
		}
		require.EqualValues(t, 500, n, "%s: every record stored", topic)
	}
}

// TestBrokerBoundsWhatOneRequestInflates sends one request of three zstd
// batches of ~0.9 MiB of zeros each (a few hundred bytes on the wire) to a
// topic stored uncompressed, on a broker whose requests are capped at
// 2 MiB: together they would hold 2.7 MiB, so the third is refused
// (MESSAGE_TOO_LARGE) and the others answered REQUEST_TIMED_OUT with
// nothing stored; each sent alone is stored.
func TestBrokerBoundsWhatOneRequestInflates(t *testing.T) {
	b, err := Start(Options{Partitions: 3, MaxRequestBytes: 2 << 20})
	require.NoError(t, err)
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	require.NoError(t, err)
	defer cl.Close()
	ctx := context.Background()
	plainCfg := "uncompressed"
	_, err = kadm.NewClient(cl).CreateTopic(ctx, 3, 1, map[string]*string{"compression.type": &plainCfg}, "budget")
	require.NoError(t, err)
	td, err := kadm.NewClient(cl).ListTopics(ctx, "budget")
	require.NoError(t, err)
	batch := batchOf(4, 1, compressWith(4, encodeRecords([]genRecord{{key: []byte("k"), value: make([]byte, 900<<10)}})))
	send := func(parts ...int32) []int16 {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = "budget", td["budget"].ID
		for _, p := range parts {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = p, batch
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		var codes []int16
		for _, p := range resp.Topics[0].Partitions {
			codes = append(codes, p.ErrorCode)
		}
		return codes
	}
	require.Equal(t, []int16{kerr.RequestTimedOut.Code, kerr.RequestTimedOut.Code, kerr.MessageTooLarge.Code}, send(0, 1, 2))
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, "budget")
	require.NoError(t, err)
	ends.Each(func(o kadm.ListedOffset) { require.Zero(t, o.Offset, "nothing stored on partition %d", o.Partition) })
	for p := range int32(3) {
		require.Equal(t, []int16{0}, send(p), "partition %d alone", p)
	}
}
