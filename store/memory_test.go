package store

import (
	"context"
	"strconv"
	"strings"
	"testing"
)

// TestOpenMemory checks that a store counts in OpenMemory from Open to
// Close, that its memtables grow with what is written to them and that
// reads fill its block cache.
func TestOpenMemory(t *testing.T) {
	before := OpenMemory()
	s := New(t.TempDir(), Options{MemTableSize: 2 << 20, CacheSize: 32 << 20})
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	empty, ok := s.memory()
	if !ok {
		t.Fatal("an open store has no memory figures")
	}
	if got := OpenMemory().Stores; got != before.Stores+1 {
		t.Fatalf("open stores %d, want %d", got, before.Stores+1)
	}
	val := strings.Repeat("v", 1000)
	for i := range 2000 {
		if err := s.Set("job-"+strconv.Itoa(i), []byte(val)); err != nil {
			t.Fatal(err)
		}
	}
	written, _ := s.memory()
	if written.MemTables < empty.MemTables+2000*1000 {
		t.Fatalf("memtables %d bytes after 2 MB of writes, %d before", written.MemTables, empty.MemTables)
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	// Compacted into one level first: a compaction finishing after the
	// reads deletes the files they read and evicts their blocks (seen once,
	// block cache 0, with the machine loaded).
	if err := s.db.Compact(context.Background(), []byte{0}, []byte{0xff}, false); err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		if _, err := s.Get("job-" + strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	read, _ := s.memory()
	if read.BlockCache == 0 || read.BlockCache > 32<<20 {
		t.Fatalf("block cache %d bytes after reading a flushed table, want 1..%d", read.BlockCache, 32<<20)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.memory(); ok {
		t.Fatal("a closed store still reports memory")
	}
	if got := OpenMemory().Stores; got != before.Stores {
		t.Fatalf("open stores %d after Close, want %d", got, before.Stores)
	}
}

// TestMemTablesTakeTheCache pins a fact of Pebble the configuration docs
// rely on: a store's memtables are reserved out of its block cache
// (pebble's Cache.Reserve), so a cache no larger than the memtables holds
// no blocks at all, and reads of a flushed table all miss.
func TestMemTablesTakeTheCache(t *testing.T) {
	for _, c := range []struct {
		cache  int64
		cached bool
	}{{2 << 20, false}, {32 << 20, true}} {
		s := New(t.TempDir(), Options{MemTableSize: 8 << 20, CacheSize: c.cache})
		if err := s.Open(); err != nil {
			t.Fatal(err)
		}
		for i := range 2000 {
			if err := s.Set("job-"+strconv.Itoa(i), make([]byte, 1000)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.db.Flush(); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			for i := range 2000 {
				if _, err := s.Get("job-" + strconv.Itoa(i)); err != nil {
					t.Fatal(err)
				}
			}
		}
		bc := s.db.Metrics().BlockCache
		if got := bc.Hits > 0 && bc.Size > 0; got != c.cached {
			t.Errorf("cache %d MiB with 8 MiB memtables: %+v, want cached=%v", c.cache>>20, bc, c.cached)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
