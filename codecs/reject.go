package codecs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"
	"unicode/utf8"
)

// Reject is a record of chronos-rejects: an input that could not be
// applied, with the reason and a bounded sample of the original record, so
// that a reject always fits a broker's message size limit whatever the
// input was (see MaxRejectBytes).
type Reject struct {
	V         int    `json:"v"`
	Code      string `json:"code"`
	Field     string `json:"field,omitempty"`
	Reason    string `json:"reason"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	// Key is the original key, or its first RejectSampleBytes bytes when
	// longer (base64 in JSON; null for a null key).
	Key []byte `json:"key"`
	// KeySize is the length of the original key in bytes.
	KeySize int `json:"key_size"`
	// Value is the original value, or its first RejectSampleBytes bytes
	// when longer (base64 in JSON; null for a null value, a tombstone).
	Value []byte `json:"value"`
	// ValueSize is the length of the original value in bytes.
	ValueSize int `json:"value_size"`
	// ValueSHA256 is the hex SHA-256 of the whole original value ("" for a
	// null value), to match a reject with the record that caused it.
	ValueSHA256 string `json:"value_sha256,omitempty"`
	// Truncated is true when Key or Value is only a prefix of the original.
	Truncated bool `json:"truncated,omitempty"`
	// RejectedAt is the rejected record's timestamp; zero (omitted in
	// JSON) when it has none, or one RFC 3339 cannot write (see
	// CheckRecordTime).
	RejectedAt time.Time `json:"rejected_at,omitzero"`
}

// RejectVersion is the version of reject records this release writes:
// 2 since key and value are bounded samples (v1 copied the whole value).
const RejectVersion = 2

// Bounds of a reject record.
const (
	// RejectSampleBytes is the most bytes of the original key and of the
	// original value a reject carries (1 KiB each).
	RejectSampleBytes = 1 << 10
	// MaxRejectTextBytes bounds a reject's reason (its field: 256 bytes).
	MaxRejectTextBytes = 1 << 10
	// MaxRejectBytes is an upper bound of an encoded reject: samples
	// (base64), reason and field (JSON escaping can make each byte six),
	// a topic name (at most 249 bytes) and the fixed fields. Far below any
	// broker's message size limit.
	MaxRejectBytes = 16 << 10
)

// EncodeReject marshals a reject record; it sets V. A reject built by
// RejectOf encodes to at most MaxRejectBytes.
func EncodeReject(r Reject) []byte {
	r.V = RejectVersion
	b, err := json.Marshal(r)
	if err != nil { // cannot happen: every field marshals
		panic(err)
	}
	return b
}

// DecodeReject parses a reject record (v1 or v2).
func DecodeReject(b []byte) (Reject, error) {
	var r Reject
	if err := json.Unmarshal(b, &r); err != nil {
		return Reject{}, jsonError(err)
	}
	return r, nil
}

// RejectOf builds the reject record of an input that failed with err: the
// code, field and reason of a *Error, or CodeMalformed and err's text. Key
// and value are cut to RejectSampleBytes and the text to
// MaxRejectTextBytes, so the result always encodes to at most
// MaxRejectBytes; key and value are copied (not aliased). at, the record's
// timestamp, is left out when CheckRecordTime refuses it: a producer may
// stamp a record with any 64-bit millisecond count, JSON cannot write a
// year after 9999, and a reject must always encode.
func RejectOf(err error, topic string, partition int32, offset int64, key, value []byte, at time.Time) Reject {
	r := Reject{Code: CodeMalformed, Reason: err.Error(), Topic: Truncate(topic, 255), Partition: partition, Offset: offset,
		KeySize: len(key), ValueSize: len(value)}
	if CheckRecordTime(at) == nil {
		r.RejectedAt = at.UTC()
	}
	var ce *Error
	if errors.As(err, &ce) {
		r.Code, r.Field, r.Reason = ce.Code, ce.Field, ce.Reason
	}
	r.Code = Truncate(r.Code, 64)
	r.Field, r.Reason = Truncate(r.Field, 256), Truncate(r.Reason, MaxRejectTextBytes)
	r.Key, r.Truncated = sample(key)
	var cut bool
	r.Value, cut = sample(value)
	r.Truncated = r.Truncated || cut
	if value != nil {
		sum := sha256.Sum256(value)
		r.ValueSHA256 = hex.EncodeToString(sum[:])
	}
	return r
}

// sample copies at most RejectSampleBytes of b (nil stays nil).
func sample(b []byte) ([]byte, bool) {
	if b == nil {
		return nil, false
	}
	n := min(len(b), RejectSampleBytes)
	return append(make([]byte, 0, n), b[:n]...), n < len(b)
}

// Truncate makes s valid UTF-8 (invalid bytes become U+FFFD, as JSON
// would) and cuts it to at most n bytes without splitting a character,
// marking the cut with "…" (within the n bytes).
func Truncate(s string, n int) string {
	if len(s) > n {
		s = s[:n+1] // enough to know a cut is needed; U+FFFD only grows it
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	const mark = "…"
	i := n - len(mark)
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + mark
}
