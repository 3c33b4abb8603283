package store

import (
	"encoding/binary"
	"errors"
	"math"
	"time"
)

// Key-space prefixes. See doc.go for the full layout.
const (
	prefixTable   byte = 't'
	prefixDue     byte = 'd'
	prefixReverse byte = 'r'
	prefixBucket  byte = 'b'
	prefixMeta    byte = 'm'
)

// Meta key names (stored under prefixMeta).
const (
	metaOffset      = "offset"
	metaIndexedUpTo = "indexedUpTo"
	metaVersion     = "indexVersion"
	metaRebuilding  = "rebuilding"
)

// indexVersion is the current encoding version of the derived indexes. A
// store opened with a different stored version rebuilds its indexes (when an
// Indexer is configured).
const indexVersion = "1"

var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// nanos returns t as unix nanoseconds, clamped to the int64 range.
func nanos(t time.Time) int64 {
	if t.Before(minTime) {
		return math.MinInt64
	}
	if t.After(maxTime) {
		return math.MaxInt64
	}
	return t.UnixNano()
}

// encTime encodes unix nanos so that byte order equals time order, also for
// negative (pre-1970) values.
func encTime(n int64) uint64 { return uint64(n) ^ (1 << 63) }

func decTime(u uint64) time.Time { return time.Unix(0, int64(u^(1<<63))).UTC() }

func prefixed(p byte, s string) []byte {
	k := make([]byte, 1+len(s))
	k[0] = p
	copy(k[1:], s)
	return k
}

func tableKey(key string) []byte   { return prefixed(prefixTable, key) }
func reverseKey(key string) []byte { return prefixed(prefixReverse, key) }
func metaKey(name string) []byte   { return prefixed(prefixMeta, name) }

// appendDueKey appends 'd' + 8-byte big-endian encoded time + key.
func appendDueKey(dst []byte, at int64, key string) []byte {
	dst = append(dst, prefixDue)
	dst = binary.BigEndian.AppendUint64(dst, encTime(at))
	return append(dst, key...)
}

func dueKey(at int64, key string) []byte {
	return appendDueKey(make([]byte, 0, 9+len(key)), at, key)
}

// bucketPrefix is 'b' + uvarint(len(bucket)) + bucket. The uvarint length
// makes the prefix unambiguous for arbitrary bucket bytes.
func appendBucketPrefix(dst []byte, bucket string) []byte {
	dst = append(dst, prefixBucket)
	dst = binary.AppendUvarint(dst, uint64(len(bucket)))
	return append(dst, bucket...)
}

func bucketKey(bucket, key string) []byte {
	dst := appendBucketPrefix(make([]byte, 0, 1+binary.MaxVarintLen64+len(bucket)+len(key)), bucket)
	return append(dst, key...)
}

// prefixEnd returns the smallest key greater than all keys with prefix p, or
// nil if there is none (p is all 0xff).
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

// rev is the reverse entry of a key: which index entries it currently has.
type rev struct {
	hasDue    bool
	due       int64 // unix nanos, valid if hasDue
	hasBucket bool
	bucket    string
}

const (
	revFlagDue    = 1
	revFlagBucket = 2
)

// appendEncode appends flags byte, [8-byte due], [bucket bytes (rest)].
func (r rev) appendEncode(b []byte) []byte {
	var flags byte
	if r.hasDue {
		flags |= revFlagDue
	}
	if r.hasBucket {
		flags |= revFlagBucket
	}
	b = append(b, flags)
	if r.hasDue {
		b = binary.BigEndian.AppendUint64(b, encTime(r.due))
	}
	return append(b, r.bucket...)
}

func (r rev) empty() bool { return !r.hasDue && !r.hasBucket }

var errBadReverse = errors.New("store: corrupt reverse index entry")

func decodeRev(b []byte) (rev, error) {
	var r rev
	if len(b) < 1 {
		return r, errBadReverse
	}
	flags, b := b[0], b[1:]
	if flags&revFlagDue != 0 {
		if len(b) < 8 {
			return r, errBadReverse
		}
		r.hasDue = true
		r.due = int64(binary.BigEndian.Uint64(b) ^ (1 << 63))
		b = b[8:]
	}
	if flags&revFlagBucket != 0 {
		r.hasBucket = true
		r.bucket = string(b)
	} else if len(b) != 0 {
		return r, errBadReverse
	}
	return r, nil
}

func entryRev(e Entry) rev {
	r := rev{hasBucket: e.Bucket != "", bucket: e.Bucket}
	if !e.Due.IsZero() {
		r.hasDue = true
		r.due = nanos(e.Due)
	}
	return r
}

func encodeTimeMeta(t time.Time) []byte {
	if t.IsZero() {
		return []byte{}
	}
	return binary.BigEndian.AppendUint64(nil, encTime(nanos(t)))
}

func decodeTimeMeta(b []byte) (time.Time, error) {
	if len(b) == 0 {
		return time.Time{}, nil
	}
	if len(b) != 8 {
		return time.Time{}, errors.New("store: corrupt time meta value")
	}
	return decTime(binary.BigEndian.Uint64(b)), nil
}
