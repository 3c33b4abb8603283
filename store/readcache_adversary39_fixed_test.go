package store

import (
	"runtime"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Adversary round 39: the kept value of Options.CachedKey (readcache.go)
// on a store that batches its writes (a recovery: no Indexer, or
// DeferIndexOnRecovery on a fresh store).
//
// getCached keeps what its Pebble read found if wseq did not move between
// the read's start (s.get: the load of wseq after acquire) and the fill.
// But acquire commits the recovery's batch *before* that load: a Set that
// runs entirely between acquire's pendingAny check (or its commit) and the
// load of wseq puts its value in the batch, where the Pebble read does not
// see it, and raises wseq before the load, so the fill keeps the older
// value from Pebble. Nothing drops it afterwards: the batch's commit raises
// wseq but does not touch the kept value (only Set/Delete of the key do).
// Every later Get of the key, and every Indexer read of it (the rebuild at
// MarkRecovered), is then served the value the Set replaced.
//
// The interleaving is forced with Go's mutex hand-off: with GOMAXPROCS 1 a
// sync.Mutex in starvation mode hands itself to the next waiter on Unlock
// and the unlocking goroutine yields. The reader R waits for wmu in
// acquire's commitPending, the writer W (a Set of the key) waits behind it;
// the test holds wmu meanwhile (standing for any write that holds it for
// more than a millisecond, which is what starvation mode takes) and lets it
// go so that R, then W, get it by hand-off. R commits the batch, unlocks,
// yields to W; W's Set completes (its value in a new batch); R resumes,
// loads wseq, reads Pebble (the old value) and keeps it. Only the order of
// the goroutines is forced; every step is the store's own code.
//
// Fixed: a read takes wseq before acquire, so acquire's commit of the
// batch, and any Set batched after it, move it, and the fill does not keep
// what the read found. Whatever order the sleeps below give, the tests
// must pass.
func raceStaleFill(t *testing.T, s *Store, key string, newValue []byte) (readerSaw []byte) {
	t.Helper()
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	require.True(t, s.pendingAny.Load(), "setup: a batched write pending, so that the reader commits it")
	require.Nil(t, s.cached.Load(), "setup: nothing kept, so that the reader reads Pebble")

	s.wmu.Lock() // some write holding wmu
	rDone := make(chan []byte, 1)
	go func() {
		v, err := s.Get(key)
		if err != nil {
			t.Error(err)
		}
		rDone <- v
	}()
	time.Sleep(3 * time.Millisecond) // R waits for wmu in acquire's commitPending
	wDone, hold := make(chan struct{}), make(chan struct{})
	go func() {
		if err := s.Set(key, newValue); err != nil {
			t.Error(err)
		}
		close(wDone)
		<-hold // W's goroutine (a goka callback) goes on with something else
	}()
	time.Sleep(3 * time.Millisecond) // W waits for wmu behind R
	s.wmu.Unlock()
	s.wmu.Lock()                     // barge in: R, woken after >1ms, finds it taken: the mutex starves
	time.Sleep(3 * time.Millisecond) // R queues again, first
	s.wmu.Unlock()                   // hand-off to R, whose unlock hands off to W
	readerSaw = <-rDone
	<-wDone
	close(hold)
	return readerSaw
}

// TestAdversary39StaleShardAfterBatchedSet: a Set of CachedKey on a
// batching store has returned; a Get of the key then answers the value
// the Set replaced, and keeps answering it after the batch is committed.
func TestAdversary39StaleShardAfterBatchedSet(t *testing.T) {
	s := newMemStore(t, Options{CachedKey: shardKeyForTest}) // no Indexer: the recovery batches
	require.NoError(t, s.Set(shardKeyForTest, []byte("old")))
	_, err := s.Has("x") // commits the batch
	require.NoError(t, err)
	require.NoError(t, s.Set("other", []byte("1"))) // a batched write: pendingAny

	saw := raceStaleFill(t, s, shardKeyForTest, []byte("new"))
	t.Logf("the reader racing the Set saw %q (either is right for it)", saw)

	// The Set returned: every read from now on must see "new".
	v, err := s.Get(shardKeyForTest)
	require.NoError(t, err)
	assert.Equal(t, "new", string(v), "Get after the Set returned")
	_, err = s.Has("x") // commits the batch holding "new"
	require.NoError(t, err)
	require.Equal(t, "new", tableState(t, s)[shardKeyForTest], "the table")
	v, err = s.Get(shardKeyForTest)
	require.NoError(t, err)
	require.Equal(t, "new", string(v), "Get after the batch's commit")
}

// TestAdversary39DeferredRebuildIndexesStaleShard: the scheduler's setup
// (an Indexer that reads the shard record, DeferIndexOnRecovery on a fresh
// store). The recovery restores the shard record's new value while a
// reader reads it; MarkRecovered's rebuild then indexes the jobs with the
// value kept from before (readTable), so the due index is not the one the
// table gives, and Get of the shard record answers the replaced value.
func TestAdversary39DeferredRebuildIndexesStaleShard(t *testing.T) {
	opts := Options{Indexer: shiftIndexer, CachedKey: shardKeyForTest, DeferIndexOnRecovery: true, FS: vfs.NewMem()}
	s := newMemStore(t, opts)
	require.True(t, s.deferIndex && s.batching, "a fresh store with deferred indexing batches its recovery")
	job := keyN(1)
	require.NoError(t, s.Set(job, val(at(100), "")))
	require.NoError(t, s.Set(shardKeyForTest, []byte("0")))
	_, err := s.Has("x") // commits
	require.NoError(t, err)
	require.NoError(t, s.Set(keyN(2), val(at(50), ""))) // pending

	raceStaleFill(t, s, shardKeyForTest, []byte("7"))
	require.NoError(t, s.MarkRecovered())

	// What a store without the cache holds for the same table.
	// (The shard record first, so every job is indexed with its value,
	// as a rebuild indexes them.)
	ref := newMemStore(t, Options{Indexer: shiftIndexer, FS: vfs.NewMem()})
	table := tableState(t, s)
	require.NoError(t, ref.Set(shardKeyForTest, []byte(table[shardKeyForTest])))
	for _, k := range sortedKeys(table) {
		require.NoError(t, ref.Set(k, []byte(table[k])))
	}
	require.Equal(t, "7", tableState(t, s)[shardKeyForTest])
	due, err := s.DueOf(job)
	require.NoError(t, err)
	want, err := ref.DueOf(job)
	require.NoError(t, err)
	v, err := s.Get(shardKeyForTest)
	require.NoError(t, err)
	assert.Equal(t, "7", string(v), "Get of the shard record after the recovery")
	assert.Equal(t, want, due, "due of %s", job)
	assert.Equal(t, dumpIndexes(t, ref), dumpIndexes(t, s), "indexes: the table's (shard 7) against the rebuilt ones")
}
