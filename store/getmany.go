package store

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// GetMany returns the values of keys (nil for a missing key), in the order
// of keys. It looks them up in key order with one iterator, which is several
// times faster than one Get per key for the thousands of keys of a fan-out
// chunk.
func (s *Store) GetMany(keys []string) ([][]byte, error) {
	r, err := s.Records()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.GetMany(keys)
}

// Records reads table records through one iterator over a point-in-time
// view of the table, for a caller that reads many groups of keys with no
// write of its own in between (a fan-out chunk: its records' reads are one
// iterator instead of one per group, so the data blocks a group loaded
// stay loaded for the next, and each lookup in key order continues from
// the last). It sees no write made after it was opened. Close it when
// done: like Iterator's, an open Records holds the view's memtables and
// files, and keeps a recovered store from reopening with Pebble's own
// compaction threshold. Store.Close releases it.
type Records struct {
	it *iterator
}

// errRecordsClosed is GetMany's error on a closed Records (by its Close or
// its store's): ErrClosed, as every method's after Close.
var errRecordsClosed = fmt.Errorf("%w (records reader)", ErrClosed)

// Records opens a Records reader.
func (s *Store) Records() (*Records, error) {
	it, err := s.IteratorWithRange(nil, nil)
	if err != nil {
		return nil, err
	}
	return &Records{it: it.(*iterator)}, nil
}

// GetMany is Store.GetMany on r's view of the table.
func (r *Records) GetMany(keys []string) ([][]byte, error) {
	i := r.it
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.released {
		return nil, errRecordsClosed
	}
	i.positioned = false // Records moves the iterator under it
	i.s.flood.addOther(len(keys))
	out := make([][]byte, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	order := make([]int32, len(keys))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(x, y int32) int { return strings.Compare(keys[x], keys[y]) })
	var k []byte
	for _, o := range order {
		k = append(append(k[:0], prefixTable), keys[o]...)
		if !i.seek(k) {
			if err := i.it.Error(); err != nil {
				return nil, err
			}
			continue
		}
		v, err := i.it.ValueAndErr()
		if err != nil {
			return nil, err
		}
		out[o] = bytes.Clone(v)
		if out[o] == nil {
			out[o] = []byte{}
		}
	}
	return out, i.it.Error()
}

// Close releases r. Idempotent.
func (r *Records) Close() { r.it.Release() }

// nextsBeforeSeek is how many records GetMany steps over with Next before
// it seeks: the keys of a chunk are mostly neighbours in the table (a
// burst fires every job of a second, in key order), and a Next moves one
// level's iterator where a seek repositions every level's.
const nextsBeforeSeek = 4

// seek positions i's iterator at k and reports whether k is there: by Next
// from a position before k when k is at most nextsBeforeSeek records on,
// else by SeekGE.
func (i *iterator) seek(k []byte) bool {
	if i.it.Valid() && bytes.Compare(i.it.Key(), k) < 0 {
		for n := 0; n < nextsBeforeSeek && i.it.Next(); n++ {
			switch c := bytes.Compare(i.it.Key(), k); {
			case c == 0:
				return true
			case c > 0:
				return false
			}
		}
		if !i.it.Valid() && i.it.Error() != nil {
			return false
		}
	}
	return i.it.SeekGE(k) && bytes.Equal(i.it.Key(), k)
}
