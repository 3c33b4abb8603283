package embedded

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy/xerial"
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

// errUninflatable reports a compressed batch that cannot be inflated: a
// truncated or invalid stream, or a zstd window over maxZstdWindow.
var errUninflatable = errors.New("embedded: compressed batch cannot be inflated")

// maxZstdWindow is the largest zstd window a batch may declare: under the
// 65 MiB goka's consumers accept (clients.MaxInflatedBatchBytes), and far
// above what encoders use for batches of a few MiB.
const maxZstdWindow = 64 << 20

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
// every topic, whatever compression.type says. A compressed batch that
// cannot be inflated (a truncated or invalid stream, a zstd window over
// 64 MiB) is refused with CORRUPT_MESSAGE, as Apache Kafka does when it
// validates a batch: kfake stores batches without inflating them, and a
// consumer would fail on it at every fetch. A request with one bad batch
// is answered for all its partitions: the bad ones MESSAGE_TOO_LARGE or
// CORRUPT_MESSAGE (not retriable), the others REQUEST_TIMED_OUT
// (retriable, nothing was appended), so clients resend the good batches
// alone. An acks=0 request with a bad batch is not answered: its
// connection is closed and nothing of it appended.
func refuseCompressionBombs(c *kfake.Cluster, limit int) {
	c.ControlKey(int16(kmsg.Produce), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := r.(*kmsg.ProduceRequest)
		var bad error
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				if err := checkInflated(p.Records, limit); err != nil && bad == nil {
					bad = err
				}
			}
		}
		if bad == nil {
			return nil, nil, false
		}
		if req.Acks == 0 {
			// No response exists for acks=0: like Apache Kafka, close
			// the connection, which is how such a client learns of it.
			return nil, fmt.Errorf("%w (acks=0: closing the connection)", bad), true
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
					if errors.Is(err, errUninflatable) {
						rp.ErrorCode = kerr.CorruptMessage.Code
					}
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
// a run of record batches, inflates past limit, and errUninflatable
// (wrapped) if one cannot be inflated. Batches with a malformed header are
// left to the broker, which refuses them itself.
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
			return fmt.Errorf("%w: %w", errUninflatable, err)
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
		return snappySize(data, limit)
	case 3:
		r = lz4.NewReader(bytes.NewReader(data))
	case 4:
		var h zstd.Header
		if h.Decode(data) == nil && h.HasFCS && h.FrameContentSize > uint64(limit) {
			return limit + 1, nil // declared: no need to inflate
		}
		zr, err := zstd.NewReader(bytes.NewReader(data), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(maxZstdWindow))
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

// snappyBufs holds the buffers snappySize decodes into.
var snappyBufs sync.Pool

// snappySize decodes data, raw or in the xerial framing, the way goka's
// sarama consumers do, into a buffer of limit bytes: limit+1 if it does not
// fit. Invalid blocks are an error even if their declared sizes are small.
func snappySize(data []byte, limit int) (int, error) {
	buf, _ := snappyBufs.Get().(*[]byte)
	if buf == nil || cap(*buf) < limit {
		b := make([]byte, 0, limit)
		buf = &b
	}
	defer snappyBufs.Put(buf)
	out, err := xerial.DecodeCapped((*buf)[:0:limit], data)
	if errors.Is(err, xerial.ErrDstTooSmall) {
		return limit + 1, nil
	}
	return len(out), err
}
