package store

import (
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lovoo/goka/storage"
)

// iterator iterates table keys over a point-in-time view of the DB. Keys are
// returned without the table prefix. It behaves like goka's leveldb
// iterator: unpositioned until the first Next; Seek positions at the first
// key >= the given key (Key/Value valid right after a successful Seek) and
// the following Next moves past it.
type iterator struct {
	mu         sync.Mutex // serializes use with a forced release by Store.Close
	s          *Store
	it         *pebble.Iterator
	positioned bool
	valid      bool
	released   bool
}

var _ storage.Iterator = (*iterator)(nil)

// Iterator returns an iterator over all table records.
func (s *Store) Iterator() (storage.Iterator, error) {
	return s.IteratorWithRange(nil, nil)
}

// IteratorWithRange returns an iterator over table keys in [start, limit).
// nil start: unbounded below. An empty limit means, as in goka's leveldb
// storage, prefix iteration over start (all keys with prefix start; with
// start also empty, all keys).
func (s *Store) IteratorWithRange(start, limit []byte) (storage.Iterator, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	s.flood.addOther(1)
	lower := append([]byte{prefixTable}, start...)
	var upper []byte
	if len(limit) > 0 {
		upper = append([]byte{prefixTable}, limit...)
	} else {
		upper = prefixEnd(lower) // lower starts with 't', so never nil
	}
	pit, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, err
	}
	it := &iterator{s: s, it: pit}
	s.itMu.Lock()
	s.iters[it] = struct{}{}
	s.itMu.Unlock()
	return it, nil
}

func (i *iterator) Next() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.released {
		return false
	}
	switch {
	case !i.positioned:
		i.positioned = true
		i.valid = i.it.First()
	case i.valid:
		i.valid = i.it.Next()
	}
	return i.valid
}

func (i *iterator) Err() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.released {
		return nil
	}
	return i.it.Error()
}

func (i *iterator) Key() []byte {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.released || !i.valid {
		return nil
	}
	return i.it.Key()[1:]
}

func (i *iterator) Value() ([]byte, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.released || !i.valid {
		return nil, nil
	}
	return i.it.ValueAndErr()
}

func (i *iterator) Seek(key []byte) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.released {
		return false
	}
	i.positioned = true
	i.valid = i.it.SeekGE(append([]byte{prefixTable}, key...))
	return i.valid
}

// Release releases the iterator; it is exhausted afterwards. Idempotent.
func (i *iterator) Release() {
	if i.forceRelease() {
		i.s.itMu.Lock()
		if i.s.iters != nil {
			delete(i.s.iters, i)
		}
		i.s.itMu.Unlock()
	}
}

// forceRelease closes the pebble iterator; it reports whether it did.
func (i *iterator) forceRelease() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.released {
		return false
	}
	i.released = true
	i.valid = false
	if err := i.it.Close(); err != nil {
		i.s.logf("store %s: closing iterator: %v", i.s.dir, err)
	}
	return true
}
