package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	kgzip "github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawBatch is a magic-2 record batch of one record whose records section
// is raw as given (already compressed with codec), with the lengths and
// CRC a broker checks: what a hostile client can put on the wire.
func rawBatch(codec int16, raw []byte) []byte {
	b := kmsg.RecordBatch{
		Magic: 2, Attributes: codec, LastOffsetDelta: 0, NumRecords: 1,
		FirstTimestamp: time.Now().UnixMilli(), MaxTimestamp: time.Now().UnixMilli(),
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, Records: raw,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:12], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:21], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// produceRaw sends one produce request with batch on topic/0 and returns
// the partition's error code.
func produceRaw(t *testing.T, cl *kgo.Client, topic string, batch []byte) int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	td, err := kadm.NewClient(cl).ListTopics(context.Background(), topic)
	require.NoError(t, err)
	rt.TopicID = td[topic].ID // produce v13 names topics by id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = 0
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err, "the broker answers")
	return resp.Topics[0].Partitions[0].ErrorCode
}

// TestAdv18bHostileCompressedBatches sends hand-made compressed batches the
// compression-bomb guard must not let through and must not crash on:
//
//   - a snappy batch in the xerial framing cut short after its 8-byte magic
//     (the guard sliced data[16:] and panicked in the broker's goroutine,
//     killing `chronos dev` and every test process: any local client could
//     do it with one request);
//   - a zstd frame declaring a 128 MiB window holding 80 MiB of zeros
//     (the guard's decoder refused windows over 64 MiB, took the error for
//     "not a bomb" and stored it; sarama's consumer then fails the batch:
//     the partition stops, the promise of docs/security.md's "Size limits"
//     row for the embedded broker is broken);
//   - a single-segment zstd frame of 64.5 MiB (the same error path: stored,
//     and sarama, whose bound is 65 MiB, inflates it whole, 64 times the
//     1 MiB the embedded broker promises);
//   - gzip and lz4 streams that are not valid (stored as is by kfake,
//     which does not inflate; Apache Kafka answers CORRUPT_MESSAGE, and a
//     consumer cannot decode them).
//
// Each must be refused (MESSAGE_TOO_LARGE or CORRUPT_MESSAGE), nothing
// stored, and the broker must keep serving a valid batch afterwards.
func TestAdv18bHostileCompressedBatches(t *testing.T) {
	b, err := Start(Options{Partitions: 1})
	require.NoError(t, err)
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.AllowAutoTopicCreation(),
		kgo.BrokerMaxWriteBytes(256<<20), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	const topic = "hostile"
	require.NoError(t, cl.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Value: []byte("first")}).FirstErr())

	bigWindow := func() []byte {
		var buf bytes.Buffer
		w, err := zstd.NewWriter(&buf, zstd.WithWindowSize(128<<20), zstd.WithEncoderConcurrency(1), zstd.WithSingleSegment(false))
		require.NoError(t, err)
		_, err = w.Write(make([]byte, 80<<20))
		require.NoError(t, err)
		require.NoError(t, w.Close())
		return buf.Bytes()
	}
	singleSegment := func() []byte {
		w, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithSingleSegment(true))
		require.NoError(t, err)
		defer w.Close()
		return w.EncodeAll(make([]byte, 64<<20+512<<10), nil)
	}
	cases := []struct {
		name  string
		codec int16
		raw   func() []byte
	}{
		{"snappy xerial header cut short", 2, func() []byte { return append(append([]byte{}, xerialMagic...), 0, 0, 0, 1) }},
		{"snappy xerial magic alone", 2, func() []byte { return append([]byte{}, xerialMagic...) }},
		{"zstd 128 MiB window", 4, bigWindow},
		// Adversary 18e: 79 bytes declaring a 64 MiB window cost the guard's
		// decoder 64 MiB each; windows over 8 MiB are refused.
		{"zstd 64 MiB window, 8 bytes of content", 4, func() []byte {
			f := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x80, 1 | 8<<3, 0, 0} // window 2^26, last raw block of 8 bytes
			return append(f, "8 bytes."...)
		}},
		{"zstd single segment 64.5 MiB", 4, singleSegment},
		{"gzip garbage", 1, func() []byte { return []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 1, 2, 3} }},
		{"lz4 garbage", 3, func() []byte { return []byte{0x04, 0x22, 0x4d, 0x18, 0x64, 0x40, 0xa7, 0xff, 0xff, 0xff, 0x7f} }},
	}
	for _, c := range cases {
		raw := c.raw()
		code := produceRaw(t, cl, topic, rawBatch(c.codec, raw))
		assert.Contains(t, []int16{kerr.MessageTooLarge.Code, kerr.CorruptMessage.Code}, code,
			"%s (%d bytes on the wire): refused, got %v", c.name, len(raw), kerr.ErrorForCode(code))
	}
	require.NoError(t, cl.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Value: []byte("last")}).FirstErr(),
		"the broker still serves valid batches")
	fetched := consumeAll(t, b.Addrs(), topic)
	require.Equal(t, []string{"first", "last"}, fetched, "nothing hostile was stored")
}

// consumeAll reads topic/0 from the start to its end offset.
func consumeAll(t *testing.T, addrs []string, topic string) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxBytes(256<<20), kgo.FetchMaxPartitionBytes(256<<20), kgo.BrokerMaxReadBytes(512<<20))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []string
	for {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "read %v so far", out)
		for _, e := range fs.Errors() {
			require.NoError(t, e.Err, "fetching %s: the log holds a batch no client can read", topic)
		}
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, string(r.Value))
			done = done || string(r.Value) == "last"
		})
		if done {
			return out
		}
	}
}

// consumerInflate inflates data as goka's sarama consumers do (the same
// libraries and calls as sarama's decompress, with its 65 MiB bound): the
// oracle for what the guard lets through.
// Snappy output is capped at snappyCap (sarama's cap is the bound; any
// output past the guard's limit fails the check either way).
func consumerInflate(codec int16, data []byte, snappyCap int) ([]byte, error) {
	const bound = 65 << 20
	switch codec {
	case 1:
		zr, err := kgzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(io.LimitReader(zr, bound+1))
	case 2:
		return xerial.DecodeCapped(make([]byte, 0, snappyCap), data)
	case 3:
		return io.ReadAll(io.LimitReader(lz4.NewReader(bytes.NewReader(data)), bound+1))
	case 4:
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(bound))
		if err != nil {
			return nil, err
		}
		defer d.Close()
		return d.DecodeAll(data, nil)
	}
	return data, nil
}

// TestAdv18bGuardAgreesWithConsumer mutates valid compressed batches of
// every codec at random (flipped bytes, cuts, spliced xerial and zstd
// headers) and checks the guard against the consumer: it never panics,
// and whatever it lets through the consumer inflates without error to at
// most the limit.
func TestAdv18bGuardAgreesWithConsumer(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(18, 0xb))
	const limit = 64 << 10
	compress := map[int16]func([]byte) []byte{
		1: func(p []byte) []byte {
			var b bytes.Buffer
			w := kgzip.NewWriter(&b)
			_, _ = w.Write(p)
			_ = w.Close()
			return b.Bytes()
		},
		2: func(p []byte) []byte {
			if rng.IntN(2) == 0 {
				return xerial.Encode(nil, p)
			}
			return s2.EncodeSnappy(nil, p)
		},
		3: func(p []byte) []byte {
			var b bytes.Buffer
			w := lz4.NewWriter(&b)
			_, _ = w.Write(p)
			_ = w.Close()
			return b.Bytes()
		},
		4: func(p []byte) []byte {
			w, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
			defer w.Close()
			return w.EncodeAll(p, nil)
		},
	}
	for i := range 4000 {
		codec := int16(1 + rng.IntN(4))
		plain := bytes.Repeat([]byte{byte(rng.IntN(3))}, rng.IntN(2*limit))
		data := compress[codec](plain)
		for range rng.IntN(4) {
			switch rng.IntN(4) {
			case 0:
				if len(data) > 0 {
					data[rng.IntN(len(data))] ^= byte(1 + rng.IntN(255))
				}
			case 1:
				data = data[:rng.IntN(len(data)+1)]
			case 2:
				data = append(append([]byte{}, xerialMagic...), data[min(len(data), 8):]...)
			case 3:
				data = append(data, data[:rng.IntN(len(data)+1)]...)
			}
		}
		_, err := inflate(codec, data, limit)
		if err != nil {
			continue
		}
		out, cerr := consumerInflate(codec, data, 2*limit)
		require.NoError(t, cerr, "case %d codec %d: the guard let through a batch the consumer cannot inflate", i, codec)
		require.LessOrEqual(t, len(out), limit, "case %d codec %d: let through past the limit", i, codec)
	}
}

// TestAdv18bBombWithAcksZeroClosesTheConnection sends a compression bomb
// with acks=0 on a raw connection. Apache Kafka answers nothing to an
// acks=0 produce and closes the connection when it refuses one, which is
// how the client learns of it. The guard answered it with a produce
// response the client never asked for, which the next response read on
// that connection would take for its own. Now the connection is closed,
// with no bytes written, and nothing is stored.
func TestAdv18bBombWithAcksZeroClosesTheConnection(t *testing.T) {
	b, err := Start(Options{Partitions: 1})
	require.NoError(t, err)
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.AllowAutoTopicCreation())
	require.NoError(t, err)
	defer cl.Close()
	const topic = "acks0"
	require.NoError(t, cl.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Value: []byte("first")}).FirstErr())

	w, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	require.NoError(t, err)
	bomb := w.EncodeAll(make([]byte, 8<<20), nil)
	require.NoError(t, w.Close())
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9 // names topics by name
	req.Acks = 0
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = rawBatch(4, bomb)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("adv18b")).AppendRequest(nil, req, 1)

	conn, err := net.Dial("tcp", b.Addrs()[0])
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write(frame)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	n, err := conn.Read(make([]byte, 64))
	require.Zero(t, n, "an acks=0 produce gets no answer")
	require.ErrorIs(t, err, io.EOF, "the broker closes the connection of a refused acks=0 produce")

	require.NoError(t, cl.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Value: []byte("last")}).FirstErr())
	require.Equal(t, []string{"first", "last"}, consumeAll(t, b.Addrs(), topic), "the bomb was not stored")
}
