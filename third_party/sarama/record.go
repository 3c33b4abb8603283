package sarama

import (
	"bytes"
	"encoding/binary"
	"time"
)

// MaxRecordHeaders is the most headers the decoder keeps per record
// (Chronos patch, see third_party/sarama/README.md). Each kept header costs
// a *RecordHeader (~56 bytes) and copies of its key and value for 2 bytes
// on the wire at least, so a record of a million empty headers would
// decode to ~28 times its size; the headers past this count are skipped
// without allocating and counted in Record.DroppedHeaders.
const MaxRecordHeaders = 64

// MaxRecordHeaderBytes is the most bytes of header keys and values the
// decoder keeps per record (Chronos patch): a header that would pass it is
// skipped and counted in Record.DroppedHeaders like one past
// MaxRecordHeaders. A consumer's callback may hold its record while its
// commit waits (Chronos counts the key, value and kept headers), and 64
// headers of up to a whole record each would otherwise be held whole.
const MaxRecordHeaderBytes = 16 << 10

const (
	isTransactionalMask   = 0x10
	controlMask           = 0x20
	maximumRecordOverhead = 5*binary.MaxVarintLen32 + binary.MaxVarintLen64 + 1
)

// RecordHeader stores key and value for a record header
type RecordHeader struct {
	Key   []byte
	Value []byte
}

func (h *RecordHeader) encode(pe packetEncoder) error {
	if err := pe.putVarintBytes(h.Key); err != nil {
		return err
	}
	return pe.putVarintBytes(h.Value)
}

func (h *RecordHeader) decode(pd packetDecoder) (err error) {
	if h.Key, err = pd.getVarintBytes(); err != nil {
		return err
	}

	if h.Value, err = getNullableBytes(pd); err != nil {
		return err
	}
	return nil
}

// getNullableBytes reads a record's key, value or header value: a varint
// length and that many bytes, or null for any negative length (Chronos
// patch). Apache Kafka reads a record the same way: it stores a record
// whose length is -2 and its Java consumer reads null, where upstream
// sarama fails the whole batch at every fetch (invalid byteslice length)
// and the partition stops.
func getNullableBytes(pd packetDecoder) ([]byte, error) {
	n, err := pd.getVarint()
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, nil
	}
	if n > int64(pd.remaining()) {
		return nil, ErrInsufficientData
	}
	return pd.getRawBytes(int(n))
}

// Record is kafka record type
type Record struct {
	Headers []*RecordHeader

	Attributes     int8
	TimestampDelta time.Duration
	OffsetDelta    int64
	Key            []byte
	Value          []byte
	// DroppedHeaders is how many headers past MaxRecordHeaders the decoder
	// skipped (Chronos patch); 0 for a record decoded whole.
	DroppedHeaders int64
	length         varintLengthField
}

func (r *Record) encode(pe packetEncoder) error {
	pe.push(&r.length)
	pe.putInt8(r.Attributes)
	pe.putVarint(int64(r.TimestampDelta / time.Millisecond))
	pe.putVarint(r.OffsetDelta)
	if err := pe.putVarintBytes(r.Key); err != nil {
		return err
	}
	if err := pe.putVarintBytes(r.Value); err != nil {
		return err
	}
	pe.putVarint(int64(len(r.Headers)))

	for _, h := range r.Headers {
		if err := h.encode(pe); err != nil {
			return err
		}
	}

	return pe.pop()
}

func (r *Record) decode(pd packetDecoder) (err error) {
	if err = pd.push(&r.length); err != nil {
		return err
	}

	if r.Attributes, err = pd.getInt8(); err != nil {
		return err
	}

	timestamp, err := pd.getVarint()
	if err != nil {
		return err
	}
	r.TimestampDelta = time.Duration(timestamp) * time.Millisecond

	if r.OffsetDelta, err = pd.getVarint(); err != nil {
		return err
	}

	// Chronos patch: key, value and headers are copied out of the packet,
	// so a decoded record holds its own bytes and never keeps the whole
	// fetch response alive (third_party/sarama/README.md).
	if r.Key, err = getNullableBytes(pd); err != nil {
		return err
	}
	r.Key = bytes.Clone(r.Key)

	if r.Value, err = getNullableBytes(pd); err != nil {
		return err
	}
	r.Value = bytes.Clone(r.Value)

	numHeaders, err := pd.getVarint()
	if err != nil {
		return err
	}

	if numHeaders >= 0 {
		if numHeaders > int64(pd.remaining()) {
			return ErrInsufficientData
		}
		r.Headers = make([]*RecordHeader, 0, min(numHeaders, MaxRecordHeaders))
	}
	headerBytes := 0
	for i := range numHeaders {
		if i >= MaxRecordHeaders {
			// Skipped in place: getVarintBytes returns a slice of the
			// packet, nothing is allocated.
			if _, err := pd.getVarintBytes(); err != nil {
				return err
			}
			if _, err := getNullableBytes(pd); err != nil {
				return err
			}
			r.DroppedHeaders++
			continue
		}
		hdr := new(RecordHeader)
		if err := hdr.decode(pd); err != nil {
			return err
		}
		if headerBytes += len(hdr.Key) + len(hdr.Value); headerBytes > MaxRecordHeaderBytes {
			// Skipped: hdr holds slices of the packet, not copies.
			r.DroppedHeaders++
			continue
		}
		hdr.Key, hdr.Value = bytes.Clone(hdr.Key), bytes.Clone(hdr.Value)
		r.Headers = append(r.Headers, hdr)
	}

	return pd.pop()
}
