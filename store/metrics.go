package store

import "github.com/cockroachdb/pebble/v2"

// Writes are the bytes a store's Pebble DB wrote to disk since it opened,
// by cause. Taken before and after a run, their difference divided by the
// run's operations is the store's write cost per operation.
type Writes struct {
	WAL        uint64 // write-ahead log, with its block overhead
	Flush      uint64 // sstables written by memtable flushes
	Compaction uint64 // sstables written by compactions
}

// Total is the sum of the three.
func (w Writes) Total() uint64 { return w.WAL + w.Flush + w.Compaction }

// Sub returns w minus before, field by field.
func (w Writes) Sub(before Writes) Writes {
	return Writes{WAL: w.WAL - before.WAL, Flush: w.Flush - before.Flush, Compaction: w.Compaction - before.Compaction}
}

// Written returns the bytes the store wrote since it opened. Safe for
// concurrent use.
func (s *Store) Written() (Writes, error) {
	if err := s.acquireNoCommit(); err != nil {
		return Writes{}, err
	}
	defer s.mu.RUnlock()
	return writesOf(s.db.Metrics()), nil
}

func writesOf(m *pebble.Metrics) Writes {
	t := m.Total()
	return Writes{WAL: m.WAL.BytesWritten, Flush: t.TableBytesFlushed + t.BlobBytesFlushed,
		Compaction: t.TableBytesCompacted + t.BlobBytesCompacted}
}
