package embedded

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DefaultMaxInflatedBatchBytes is the largest size a compressed batch may
// inflate to on the embedded broker: Kafka's default max.message.bytes
// (1,048,588), the limit Apache Kafka applies to the recompressed batch on a
// topic with compression.type=uncompressed.
const DefaultMaxInflatedBatchBytes = 1048588

// errInflated reports a batch that inflates past the limit.
var errInflated = errors.New("embedded: compressed batch inflates past the limit")

// refuseCompressionBombs makes c answer MESSAGE_TOO_LARGE to a produce
// request any of whose compressed batches inflates past limit, on every
// topic, before the broker stores it.
//
// Apache Kafka does the same on a topic with compression.type=uncompressed
// (Chronos sets it on the topics others write, topology.Layout.Topics): it
// recompresses each batch and checks the result against max.message.bytes.
// kfake keeps batches as produced, so without this a batch of a few kB
// holding hundreds of MiB of zeros would reach every consumer, which
// inflates it whole (docs/security.md, "Size limits").
//
// The embedded broker is stricter than Kafka here: it applies the rule on
// every topic, whatever compression.type says. A request with one bad batch
// is answered for all its partitions: the bad ones MESSAGE_TOO_LARGE (not
// retriable), the others REQUEST_TIMED_OUT (retriable, nothing was
// appended), so clients resend the good batches alone.
func refuseCompressionBombs(c *kfake.Cluster, limit int) {
	c.ControlKey(int16(kmsg.Produce), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := r.(*kmsg.ProduceRequest)
		bad := false
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				if checkInflated(p.Records, limit) != nil {
					bad = true
				}
			}
		}
		if !bad {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = kerr.RequestTimedOut.Code
				if err := checkInflated(p.Records, limit); err != nil {
					rp.ErrorCode = kerr.MessageTooLarge.Code
					msg := err.Error()
					rp.ErrorMessage = &msg
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
}

// checkInflated returns errInflated (wrapped) if a compressed batch in raw,
// a run of record batches, inflates past limit. Malformed batches are left
// to the broker, which refuses them itself.
func checkInflated(raw []byte, limit int) error {
	for len(raw) >= 12 {
		n := int(int32(binary.BigEndian.Uint32(raw[8:12]))) + 12
		if n < 12 || n > len(raw) {
			return nil
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw[:n]); err != nil {
			return nil
		}
		raw = raw[n:]
		codec := b.Attributes & 0x07
		if codec == 0 {
			continue
		}
		size, err := inflatedSize(codec, b.Records, limit)
		if err != nil {
			continue
		}
		if size > limit {
			return fmt.Errorf("%w: a batch of %d compressed bytes inflates past %d bytes (Kafka's max.message.bytes)", errInflated, len(b.Records), limit)
		}
	}
	return nil
}

// inflatedSize returns the inflated size of a batch's records compressed
// with codec, or limit+1 as soon as it passes limit; it never holds more
// than a small buffer.
func inflatedSize(codec int16, data []byte, limit int) (int, error) {
	var r io.Reader
	switch codec {
	case 1:
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return 0, err
		}
		r = zr
	case 2:
		return snappySize(data)
	case 3:
		r = lz4.NewReader(bytes.NewReader(data))
	case 4:
		zr, err := zstd.NewReader(bytes.NewReader(data), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(64<<20))
		if err != nil {
			return 0, err
		}
		defer zr.Close()
		r = zr
	default:
		return 0, fmt.Errorf("embedded: unknown codec %d", codec)
	}
	n, err := io.Copy(io.Discard, io.LimitReader(r, int64(limit)+1))
	return int(n), err
}

// xerialMagic starts a snappy stream in the Java client's framing, which
// Kafka's clients use; anything else is one raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// snappySize sums the decoded lengths snappy blocks declare, without
// decoding them.
func snappySize(data []byte) (int, error) {
	if !bytes.HasPrefix(data, xerialMagic) {
		return s2.DecodedLen(data)
	}
	data = data[16:]
	total := 0
	for len(data) >= 4 {
		n := int(binary.BigEndian.Uint32(data))
		data = data[4:]
		if n < 0 || n > len(data) {
			return 0, errors.New("embedded: truncated snappy chunk")
		}
		m, err := s2.DecodedLen(data[:n])
		if err != nil {
			return 0, err
		}
		total += m
		data = data[n:]
	}
	return total, nil
}
