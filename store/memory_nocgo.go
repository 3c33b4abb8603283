//go:build !cgo

package store

// MemoryOnGoHeap reports whether the Memory of the open stores is part of
// Go's heap: true in a binary built without cgo (the shipped image), where
// Pebble's memtables and block caches are Go allocations that Go's collector
// counts as live.
const MemoryOnGoHeap = true
