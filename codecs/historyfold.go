package codecs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sort"
	"time"
)

// The history group folds every dispatch event and result into its job's
// record. Decoding the whole record and encoding it again for each one
// costs an allocation per kept string (about a hundred for 50 fires and 20
// changes); FoldFire and FoldChange instead walk the record's entries in
// place, decode only the entry they change, and splice its new encoding
// in. The result is byte for byte what DecodeHistory, the same change
// and AppendHistory give (TestFoldMatchesDecodeMergeEncode).

// fireSpan is where one encoded fire lies in a record, and its sort key.
type fireSpan struct {
	start, end int
	at         time.Time
	suffix     []byte
}

// historySpans is an encoded record's layout.
type historySpans struct {
	commandOffset int64
	firesCount    int // where the fire count starts
	fires         []fireSpan
	firesEnd      int   // where the change count starts
	changes       []int // where each change starts
}

// scanHistory walks an encoded record (nil or empty: an empty history),
// checking it as DecodeHistory does, without allocating its strings.
func scanHistory(b []byte) (historySpans, error) {
	s := historySpans{commandOffset: -1}
	if len(b) == 0 {
		return s, nil
	}
	r := &reader{b: b}
	pos := func() int { return len(b) - len(r.b) }
	if r.byte() != historyMagic || r.byte() != historyVersion {
		return s, ErrHistoryRecord
	}
	s.commandOffset = r.varint()
	s.firesCount = pos()
	n := r.count(12)
	s.fires = make([]fireSpan, 0, n+1)
	for range n {
		f := fireSpan{start: pos()}
		f.suffix = r.bytes()
		f.at = r.time()
		flags, trig, st := r.byte(), r.byte(), r.byte()
		if r.err == nil && (flags > 1 || int(trig) >= len(triggerCodes) || int(st) >= len(statusCodes)) {
			r.err = errors.New("bad code")
		}
		r.time()
		r.varint()
		r.bytes()
		r.uvarint()
		r.time()
		r.time()
		r.bytes()
		f.end = pos()
		s.fires = append(s.fires, f)
	}
	s.firesEnd = pos()
	n = r.count(5)
	s.changes = make([]int, 0, n+1)
	for range n {
		s.changes = append(s.changes, pos())
		r.varint()
		r.time()
		if op := r.byte(); r.err == nil && int(op) >= len(opCodes) {
			r.err = errors.New("bad code")
		}
		r.bytes()
		r.bytes()
	}
	if r.err != nil || len(r.b) != 0 {
		return historySpans{commandOffset: -1}, ErrHistoryRecord
	}
	return s, nil
}

// FireBySuffix finds the kept fire whose fire_id suffix is suffix in the
// encoded record b: its scheduled time and whether a dispatch event was
// seen for it. ok is false when none is kept; an unreadable b gives
// ErrHistoryRecord.
func FireBySuffix(b []byte, suffix string) (at time.Time, dispatched, ok bool, err error) {
	s, err := scanHistory(b)
	if err != nil {
		return at, false, false, err
	}
	for _, f := range s.fires {
		if string(f.suffix) == suffix {
			r := &reader{b: b[f.start:f.end]}
			e := r.fire()
			return e.ScheduledAt, e.Dispatched, r.err == nil, r.err
		}
	}
	return at, false, false, nil
}

// less orders a kept fire against (at, suffix), as the history keeps them.
func (f *fireSpan) less(at time.Time, suffix string) bool {
	if !f.at.Equal(at) {
		return f.at.Before(at)
	}
	return string(f.suffix) < suffix
}

// FoldFire folds into the encoded history record b the fire (at, suffix)
// of a job that keeps keep fires: apply is called on the kept entry of that
// fire, or on a new entry {Suffix: suffix, ScheduledAt: at} inserted in
// order, dropping the oldest entries over keep (a fire older than keep
// kept ones is not kept: apply is not called). It returns the new record
// and whether it differs from b; b itself is not modified. An unreadable b
// gives ErrHistoryRecord.
func FoldFire(b []byte, at time.Time, suffix string, keep int, apply func(*FireEntry)) ([]byte, bool, error) {
	s, err := scanHistory(b)
	if err != nil {
		return nil, false, err
	}
	n := len(s.fires)
	i := sort.Search(n, func(i int) bool { return !s.fires[i].less(at, suffix) })
	existing := i < n && s.fires[i].at.Equal(at) && string(s.fires[i].suffix) == suffix
	var old []byte
	if existing {
		old = b[s.fires[i].start:s.fires[i].end]
	} else if n >= keep && i == 0 {
		return b, false, nil
	}
	// kept: the old entries kept before and after the folded one, which is
	// dropped when it is new and older than all that stay.
	first, keepNew := 0, true
	if !existing {
		if over := n + 1 - keep; over > 0 {
			first = over
			if i < over {
				first, keepNew = over-1, false
			}
		}
	}
	var enc []byte
	if keepNew {
		var f FireEntry
		if existing {
			r := &reader{b: old}
			f = r.fire()
			if r.err != nil {
				return nil, false, ErrHistoryRecord
			}
		} else {
			f = FireEntry{Suffix: suffix, ScheduledAt: at}
		}
		apply(&f)
		enc = appendFire(make([]byte, 0, len(old)+64), &f)
		if existing && bytes.Equal(enc, old) {
			return b, false, nil
		}
	}
	count := n - first
	if !existing && keepNew {
		count++
	}
	out := make([]byte, 0, len(b)+len(enc)+16)
	out = append(out, historyMagic, historyVersion)
	out = binary.AppendVarint(out, s.commandOffset)
	out = binary.AppendUvarint(out, uint64(count))
	start := func(j int) int {
		if j < n {
			return s.fires[j].start
		}
		return s.firesEnd
	}
	switch {
	case existing:
		out = append(out, b[start(first):s.fires[i].start]...)
		out = append(out, enc...)
		out = append(out, b[s.fires[i].end:s.firesEnd]...)
	case keepNew:
		out = append(out, b[start(first):start(i)]...)
		out = append(out, enc...)
		out = append(out, b[start(i):s.firesEnd]...)
	default:
		out = append(out, b[start(first):s.firesEnd]...)
	}
	if len(b) == 0 {
		return binary.AppendUvarint(out, 0), true, nil
	}
	return append(out, b[s.firesEnd:]...), true, nil
}

// FoldChange appends the command c to the encoded history record b unless
// it was applied already (c.Offset is not after the record's
// CommandOffset), keeping the last keep; the caller bounds c's strings
// (HistoryActorBytes, HistoryDetailBytes). It returns the new record and
// whether it differs from b; b is not modified. An unreadable b gives
// ErrHistoryRecord.
func FoldChange(b []byte, c Change, keep int) ([]byte, bool, error) {
	s, err := scanHistory(b)
	if err != nil {
		return nil, false, err
	}
	if c.Offset <= s.commandOffset {
		return b, false, nil
	}
	first := max(len(s.changes)+1-keep, 0)
	out := make([]byte, 0, len(b)+64)
	out = append(out, historyMagic, historyVersion)
	out = binary.AppendVarint(out, c.Offset)
	if len(b) == 0 {
		out = binary.AppendUvarint(out, 0)
	} else {
		out = append(out, b[s.firesCount:s.firesEnd]...)
	}
	out = binary.AppendUvarint(out, uint64(len(s.changes)-first+1))
	if first < len(s.changes) {
		out = append(out, b[s.changes[first]:]...)
	}
	return appendChange(out, &c), true, nil
}
