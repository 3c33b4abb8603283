// Package store is the Pebble implementation of goka's storage.Storage for
// Chronos shards, with derived due and bucket indexes kept in the same DB.
//
// # Key layout
//
// All keys of one Pebble DB start with a one-byte prefix:
//
//	't' key                                  table record; value = goka value
//	'd' be64(nanos ^ 1<<63) key              due index; empty value
//	'r' key                                  reverse entry of key; value = flags(1) [be64 due] [bucket]
//	'b' uvarint(len(bucket)) bucket key      bucket index; empty value
//	'm' name                                 meta: "offset" (decimal), "indexedUpTo"
//	                                         (be64 time, empty = zero), "indexVersion",
//	                                         "rebuilding" (present while RebuildIndexes runs)
//
// Times are unix nanoseconds (clamped to the int64 range) with the sign bit
// flipped, so byte order equals time order for pre-1970 times too. Keys may
// hold any bytes: the due key has a fixed-width time before the key, and
// the bucket key length-prefixes the bucket, so both decode unambiguously.
// The reverse entry records the index entries a key currently has, so Set,
// Delete and ApplyMoves can remove them in the same atomic batch that writes
// the new ones.
//
// A move that carries what its caller's scan saw (Move.From and
// Move.Bucket) is written without reading the reverse entry. Deleted due
// entries stay as tombstones until a compaction, so scans from the start
// of the due index begin at an in-memory floor (the first entry an earlier
// such scan found, lowered by every due key written).
//
// The indexes are derived state: they are never written to Kafka and can be
// recomputed from the table with RebuildIndexes. Open rebuilds them when the
// index version changed or a rebuild was interrupted (if an Indexer is set).
//
// # Durability
//
// Every mutation is one Pebble batch, so after any crash the DB holds a
// prefix of the acknowledged batches and the table and its indexes are
// consistent with each other. With Options.Sync every batch is fsynced; by
// default batches use pebble.NoSync (the WAL is written, so only a machine
// crash can lose a suffix of recent writes, which goka re-reads from Kafka).
//
// # Offsets
//
// GetOffset, SetOffset and MarkRecovered behave like goka's leveldb storage:
// before MarkRecovered the offset is kept in memory (and persisted every 30s
// and on Close), afterwards every SetOffset that follows the local offset is
// persisted (or, with Options.OffsetEvery, one every that many offsets and
// on Close: for tables whose records may be applied twice). After recovery the offsets come from the process's own
// changelog writes; one that does not follow the local offset means another
// writer (an owner that had not yet noticed it lost the partition) wrote in
// between, so the local offset stops there and the next recovery re-reads
// the records this store does not hold. goka's own storages move past them,
// and a store that got its partition back then never saw them.
package store
