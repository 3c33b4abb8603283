package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// errInvalidRecord reports a batch whose records are not what it declares
// or cannot be decoded: a record count that lies, a length past the
// record's end, a negative header count or header key length, an offset
// delta out of sequence, bytes left after the last record.
var errInvalidRecord = errors.New("embedded: invalid record")

// crc32c is the checksum of a magic-2 batch (Castagnoli).
var crc32c = crc32.MakeTable(crc32.Castagnoli)

// guardProduce makes c validate every batch of every produce request
// before the broker stores it, as Apache Kafka does (its LogValidator) and
// kfake does not, and store compressed batches uncompressed on the topics
// whose compression.type is uncompressed, as Apache Kafka does by
// recompressing each batch to the topic's compression.type (Chronos sets
// it on the topics others write, topology.Layout.Topics). kfake stores a
// batch as produced once its header, length and CRC are right.
//
// Refused, before anything of the request is stored:
//   - a compressed batch that inflates past limit (MESSAGE_TOO_LARGE, a
//     compression bomb: kfake would store it as sent and every consumer
//     inflate it), or that cannot be inflated (CORRUPT_MESSAGE: a truncated
//     or invalid stream, a zstd window over 8 MiB), on every topic;
//   - a batch whose records do not decode as it declares (INVALID_RECORD,
//     what Apache Kafka answers: checkRecords lists the rules): sarama's
//     consumer would fail the whole batch and, for a count that lies,
//     stop the partition;
//   - compressed batches rewritten uncompressed past budget bytes in one
//     request (MESSAGE_TOO_LARGE): the rewritten batches are held until
//     the request is stored, so a request of many tiny compressed batches
//     cannot make the broker hold more than budget.
//
// A request with one bad batch is answered for all its partitions: the
// bad ones with their error (not retriable), the others REQUEST_TIMED_OUT
// (retriable, nothing was appended), so clients resend the good batches
// alone. An acks=0 request with a bad batch is not answered: its
// connection is closed and nothing of it appended, as Apache Kafka does.
// Batches whose header, length, magic or CRC are wrong are left to kfake,
// which refuses them itself (CORRUPT_MESSAGE).
func guardProduce(c *kfake.Cluster, limit, budget int) {
	budget = max(budget, limit)
	c.ControlKey(int16(kmsg.Produce), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := r.(*kmsg.ProduceRequest)
		var (
			bad      map[[2]int]error
			rewrites map[[2]int][]byte
			held     int
		)
		for ti, t := range req.Topics {
			plain := storesUncompressed(c, req, t)
			for pi, p := range t.Partitions {
				out, err := checkBatch(p.Records, limit, plain)
				if err == nil && out != nil {
					if held += len(out); held > budget {
						err = fmt.Errorf("%w: the request's compressed batches inflate past %d bytes together; send fewer per request", errInflated, budget)
					}
				}
				switch {
				case err != nil:
					if bad == nil {
						bad = map[[2]int]error{}
					}
					bad[[2]int{ti, pi}] = err
				case out != nil:
					if rewrites == nil {
						rewrites = map[[2]int][]byte{}
					}
					rewrites[[2]int{ti, pi}] = out
				}
			}
		}
		if bad == nil {
			for k, out := range rewrites {
				req.Topics[k[0]].Partitions[k[1]].Records = out
			}
			return nil, nil, false // kfake stores the request
		}
		if req.Acks == 0 {
			// No response exists for acks=0: like Apache Kafka, close
			// the connection, which is how such a client learns of it.
			for _, err := range bad {
				return nil, fmt.Errorf("%w (acks=0: closing the connection)", err), true
			}
		}
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for ti, t := range req.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for pi, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = kerr.RequestTimedOut.Code
				if err := bad[[2]int{ti, pi}]; err != nil {
					rp.ErrorCode = errorCode(err)
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

// errorCode is the Kafka error code answering err from checkBatch.
func errorCode(err error) int16 {
	switch {
	case errors.Is(err, errInflated):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, errUninflatable):
		return kerr.CorruptMessage.Code
	default:
		return kerr.InvalidRecord.Code
	}
}

// storesUncompressed reports whether topic t of req has compression.type
// uncompressed (set on the topic; the embedded broker's default is
// "producer"). Produce v13 names topics by id only.
func storesUncompressed(c *kfake.Cluster, req *kmsg.ProduceRequest, t kmsg.ProduceRequestTopic) bool {
	var info *kfake.TopicInfo
	if req.Version >= 13 {
		info = c.TopicIDInfo(t.TopicID)
	} else {
		info = c.TopicInfo(t.Topic)
	}
	if info == nil {
		return false // unknown: kfake refuses the batch
	}
	v := info.Configs["compression.type"]
	return v != nil && *v == "uncompressed"
}

// checkBatch validates raw, the records of one partition of a produce
// request (one magic-2 batch), and returns nil to store it as sent, the
// batch rewritten uncompressed when it is compressed and plain is set, or
// why it is refused: errInflated or errUninflatable for a compressed batch
// (inflate, at most limit bytes), errInvalidRecord for records that do not
// decode as declared (checkRecords). A batch whose header, length, magic,
// codec or CRC is wrong is returned as sent (nil): kfake refuses it.
func checkBatch(raw []byte, limit int, plain bool) ([]byte, error) {
	var b kmsg.RecordBatch
	if len(raw) < 12 || b.ReadFrom(raw) != nil || int(b.Length) != len(raw)-12 || b.Magic != 2 ||
		uint32(b.CRC) != crc32.Checksum(raw[21:], crc32c) || b.Attributes&0x07 > 4 || b.Attributes&0x20 != 0 {
		return nil, nil
	}
	if b.NumRecords <= 0 || b.LastOffsetDelta != b.NumRecords-1 {
		return nil, fmt.Errorf("%w: the batch declares %d records and a last offset delta of %d", errInvalidRecord, b.NumRecords, b.LastOffsetDelta)
	}
	codec := b.Attributes & 0x07
	records := b.Records
	if codec != 0 {
		var err error
		if records, err = inflate(codec, b.Records, limit); err != nil {
			return nil, err
		}
	}
	if err := checkRecords(records, b.NumRecords); err != nil {
		return nil, err
	}
	if codec == 0 || !plain {
		return nil, nil
	}
	b.Attributes &^= 0x07
	b.Records = records
	out := b.AppendTo(make([]byte, 0, 61+len(records)))
	binary.BigEndian.PutUint32(out[8:12], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:21], crc32.Checksum(out[21:], crc32c))
	return out, nil
}

// checkRecords checks that data, the (inflated) records section of a
// batch, is exactly count records in Kafka's v2 record format, each
// decodable by Apache Kafka and by sarama's consumer: every length is a
// varint of at most 5 bytes within int32, the record's length covers its
// fields exactly, key and value lengths are -1 (null) or fit the record,
// the header count and every header key length are non-negative and fit,
// header values are -1 or fit, offset deltas run 0, 1, ..., count-1, and
// nothing follows the last record.
//
// Stricter than Apache Kafka in two corners, both of which sarama cannot
// read: Kafka takes any negative key, value or header value length for
// null (sarama accepts only -1), and accepts offset deltas out of sequence
// in an uncompressed batch (sarama then skips records or jumps ahead of
// the valid ones after it).
func checkRecords(data []byte, count int32) error {
	for i := range count {
		if len(data) == 0 {
			return fmt.Errorf("%w: the batch declares %d records and holds %d", errInvalidRecord, count, i)
		}
		size, n, err := varint32(data)
		if err != nil || size < 0 || int(size) > len(data)-n {
			return fmt.Errorf("%w: record %d: length %d with %d bytes left", errInvalidRecord, i, size, len(data)-n)
		}
		if err := checkRecord(data[n:n+int(size)], i); err != nil {
			return fmt.Errorf("%w: record %d: %w", errInvalidRecord, i, err)
		}
		data = data[n+int(size):]
	}
	if len(data) != 0 {
		return fmt.Errorf("%w: %d bytes after the %d records the batch declares", errInvalidRecord, len(data), count)
	}
	return nil
}

// checkRecord checks one record's body (after its length).
func checkRecord(body []byte, index int32) error {
	if len(body) < 1 {
		return errors.New("no attributes")
	}
	body = body[1:]
	if _, n := binary.Varint(body); n <= 0 {
		return errors.New("bad timestamp delta")
	} else {
		body = body[n:]
	}
	delta, n, err := varint32(body)
	if err != nil {
		return fmt.Errorf("offset delta: %w", err)
	}
	if delta != index {
		return fmt.Errorf("offset delta %d, want %d", delta, index)
	}
	body = body[n:]
	for _, field := range []string{"key", "value"} {
		if body, err = bytesField(body, -1); err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
	}
	headers, n, err := varint32(body)
	if err != nil {
		return fmt.Errorf("header count: %w", err)
	}
	if headers < 0 {
		return fmt.Errorf("header count %d", headers)
	}
	body = body[n:]
	for h := range headers {
		if body, err = bytesField(body, 0); err != nil {
			return fmt.Errorf("header %d key: %w", h, err)
		}
		if body, err = bytesField(body, -1); err != nil {
			return fmt.Errorf("header %d value: %w", h, err)
		}
	}
	if len(body) != 0 {
		return fmt.Errorf("%d bytes after the last header", len(body))
	}
	return nil
}

// bytesField skips a varint length and that many bytes of b; the length
// must be at least least (-1: null allowed).
func bytesField(b []byte, least int32) ([]byte, error) {
	l, n, err := varint32(b)
	if err != nil {
		return nil, err
	}
	if l < least || int(l) > len(b)-n {
		return nil, fmt.Errorf("length %d with %d bytes left", l, len(b)-n)
	}
	return b[n+max(int(l), 0):], nil
}

// varint32 reads a zigzag varint of at most 5 bytes whose value fits an
// int32, as Kafka's readVarint does (it refuses longer ones; sarama reads
// 64 bits, so a value past int32 would decode differently).
func varint32(b []byte) (int32, int, error) {
	v, n := binary.Varint(b[:min(len(b), 5)])
	switch {
	case n == 0 && len(b) < 5:
		return 0, 0, errors.New("varint cut short")
	case n == 0:
		return 0, 0, errors.New("varint longer than 5 bytes")
	case n < 0 || v < -1<<31 || v > 1<<31-1:
		return 0, 0, errors.New("varint longer than 5 bytes or past int32")
	}
	return int32(v), n, nil
}
