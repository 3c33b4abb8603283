package embedded

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
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

// maxZstdWindow is the largest zstd window a batch may declare: 8 MiB,
// four times what Kafka's producers declare at their default level (2 MiB
// for a stream of unknown size) and eight times the largest batch the
// inbound topics take. The decoder allocates the declared window up front,
// so this bounds what one batch costs (adversary 18e: a 79-byte batch
// declaring 64 MiB cost 64 MiB; a request of 100 of them, 6.4 GB).
const maxZstdWindow = 8 << 20

// zstdDecoders holds up to two idle zstd decoders for reuse: a decoder
// keeps its window buffer, so a request of many batches allocates it
// once, not per batch. (A sync.Pool would not do: the collector empties
// it, and each refill is another window.)
var zstdDecoders = make(chan *zstd.Decoder, 2)

func getZstd() *zstd.Decoder {
	select {
	case d := <-zstdDecoders:
		return d
	default:
	}
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(maxZstdWindow))
	if err != nil {
		panic(err) // only for invalid options
	}
	return d
}

func putZstd(d *zstd.Decoder) {
	_ = d.Reset(nil) // drops the data; keeps the buffers
	select {
	case zstdDecoders <- d:
	default:
		d.Close()
	}
}

// inflate returns the records section data of a batch compressed with
// codec, inflated: errInflated (wrapped) as soon as it passes limit bytes,
// errUninflatable (wrapped) if it cannot be inflated. It never holds more
// than limit+1 bytes of output.
func inflate(codec int16, data []byte, limit int) ([]byte, error) {
	var r io.Reader
	switch codec {
	case 1:
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errUninflatable, err)
		}
		r = zr
	case 2:
		return snappyInflate(data, limit)
	case 3:
		r = lz4.NewReader(bytes.NewReader(data))
	case 4:
		var h zstd.Header
		if h.Decode(data) == nil && h.HasFCS && h.FrameContentSize > uint64(limit) {
			return nil, tooLarge(len(data), limit) // declared: no need to inflate
		}
		zr := getZstd()
		defer putZstd(zr)
		if err := zr.Reset(bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("%w: %w", errUninflatable, err)
		}
		r = zr
	default:
		return nil, fmt.Errorf("%w: unknown codec %d", errUninflatable, codec)
	}
	out, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUninflatable, err)
	}
	if len(out) > limit {
		return nil, tooLarge(len(data), limit)
	}
	return out, nil
}

// tooLarge is errInflated for a batch of n compressed bytes.
func tooLarge(n, limit int) error {
	return fmt.Errorf("%w: a batch of %d compressed bytes inflates past %d bytes (Kafka's max.message.bytes)", errInflated, n, limit)
}

// xerialMagic starts a snappy stream in the Java client's framing, which
// Kafka's clients use; anything else is one raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// snappyBufs holds the buffers snappyInflate decodes into.
var snappyBufs sync.Pool

// snappyInflate decodes data, raw or in the xerial framing, the way goka's
// sarama consumers do, into a buffer of limit bytes (errInflated if it
// does not fit), and returns a copy of the output. Invalid blocks are an
// error even if their declared sizes are small.
func snappyInflate(data []byte, limit int) ([]byte, error) {
	buf, _ := snappyBufs.Get().(*[]byte)
	if buf == nil || cap(*buf) < limit {
		b := make([]byte, 0, limit)
		buf = &b
	}
	defer snappyBufs.Put(buf)
	out, err := xerial.DecodeCapped((*buf)[:0:limit], data)
	if errors.Is(err, xerial.ErrDstTooSmall) {
		return nil, tooLarge(len(data), limit)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUninflatable, err)
	}
	return bytes.Clone(out), nil
}
