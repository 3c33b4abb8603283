package store

import "bytes"

// Two reads a goka callback makes just before it writes, kept so that the
// write, or the next read, does not go to Pebble for them again (a point
// read of a key not in the memtable looks through every level; at
// registration the scheduler's commands spent 10% of their CPU reading the
// shard record and 13% reading the reverse entry of a new job):
//
//   - the value of Options.CachedKey (the scheduler's shard record: every
//     command reads it, an advance writes it);
//   - the key of the last Get that found nothing. A key not in the table
//     has no index entries (Set, Delete and rebuilds write a record and its
//     entries in one batch; ApplyMoves skips keys not in the table), so a
//     Set of that key with no write in between needs no read of its reverse
//     entry.
//
// Both are checked against wseq, which every write of the table or its
// indexes raises when it begins and when it ends (with wmu held): a read is
// kept only if wseq did not move between its start and its use, so no
// write overlapped it.

// cachedValue is CachedKey's value; nil v: the key is absent.
type cachedValue struct{ v []byte }

// miss is a Get that found no record of key while wseq was seq.
type miss struct {
	key string
	seq uint64
}

// beginWrite marks a write under way and returns its end (defer it); the
// caller holds wmu.
func (s *Store) beginWrite() func() {
	s.wseq.Add(1)
	return func() { s.wseq.Add(1) }
}

// writesKey marks a write of the table record key: it drops the kept value
// if key is CachedKey. The caller holds wmu.
func (s *Store) writesKey(key string) {
	if s.opts.CachedKey != "" && key == s.opts.CachedKey {
		s.cached.Store(nil)
	}
}

// resetCache forgets both (Open: the data may not be what it was).
func (s *Store) resetCache() {
	s.cached.Store(nil)
	s.lastMiss.Store(nil)
}

// knownAbsent reports whether the last Get found no record of key and
// nothing was written since; the caller holds wmu.
func (s *Store) knownAbsent(key string) bool {
	m := s.lastMiss.Load()
	return m != nil && m.key == key && m.seq == s.wseq.Load()
}

// getCached is Get of Options.CachedKey.
func (s *Store) getCached() ([]byte, error) {
	if err := s.acquireNoCommit(); err != nil {
		return nil, err
	}
	c := s.cached.Load()
	s.mu.RUnlock()
	if c != nil {
		return bytes.Clone(c.v), nil
	}
	v, seq, err := s.get(s.opts.CachedKey)
	if err != nil {
		return nil, err
	}
	s.wmu.Lock()
	// Kept only if no write began or ended since the read began (get).
	if s.wseq.Load() == seq {
		s.cached.Store(&cachedValue{v: bytes.Clone(v)})
	}
	s.wmu.Unlock()
	return v, nil
}

// readTable is tableReader's Get: CachedKey from the kept value when there
// is one (a Set of CachedKey drops it before indexing), else from Pebble.
// The caller holds wmu, and is writing, so nothing it reads is kept.
func (s *Store) readTable(key string) ([]byte, error) {
	if s.opts.CachedKey != "" && key == s.opts.CachedKey {
		if c := s.cached.Load(); c != nil {
			return bytes.Clone(c.v), nil
		}
	}
	return s.getRaw(tableKey(key))
}
