package store

import "sync"

// Memory is what the open stores of this process hold in memory outside
// Go's heap accounting when cgo is on (Pebble allocates its memtables and
// block cache with the C allocator then; without cgo they are Go
// allocations, seen by the heap profile as pebble's manual.New). Together
// with the Go heap it is most of a process's RSS.
type Memory struct {
	// Stores is how many stores are open.
	Stores int
	// MemTables is the bytes held by the stores' memtables (the mutable
	// one and those waiting to be flushed, plus zombies an iterator still
	// holds): up to two memtables of Options.MemTableSize per store while
	// it is written, more while flushes fall behind.
	MemTables uint64
	// BlockCache is the bytes held in the stores' block caches (at most
	// Options.CacheSize each).
	BlockCache uint64
}

// openStores is every open store of the process.
var openStores sync.Map // *Store -> struct{}

// OpenMemory sums Memory over every store of the process that is open.
// Safe for concurrent use; it reads each store's Pebble metrics, so call
// it at a scrape's pace, not per operation.
func OpenMemory() Memory {
	var m Memory
	openStores.Range(func(k, _ any) bool {
		if sm, ok := k.(*Store).memory(); ok {
			m.Stores++
			m.MemTables += sm.MemTables
			m.BlockCache += sm.BlockCache
		}
		return true
	})
	return m
}

// memory returns what s holds; false if it is not open.
func (s *Store) memory() (Memory, bool) {
	if s.acquireNoCommit() != nil {
		return Memory{}, false
	}
	pm := s.db.Metrics()
	s.mu.RUnlock()
	return Memory{Stores: 1, MemTables: pm.MemTable.Size + pm.MemTable.ZombieSize, BlockCache: uint64(max(pm.BlockCache.Size, 0))}, true
}
