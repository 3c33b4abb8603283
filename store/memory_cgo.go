//go:build cgo

package store

// MemoryOnGoHeap reports whether the Memory of the open stores is part of
// Go's heap: false in a binary built with cgo, where Pebble allocates its
// memtables and block caches with the C allocator.
const MemoryOnGoHeap = false
