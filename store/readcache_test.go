package store

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// shardKeyForTest is the CachedKey of the tests below: a record the
// indexer reads for every other record, as the scheduler's shard record.
const shardKeyForTest = "shard"

// shiftIndexer is testIndexer with every due time shifted by the seconds
// the shard record holds (none: 0), so an index built with a stale shard
// value differs from one built with the right one.
func shiftIndexer(r Reader, key string, value []byte) (Entry, error) {
	if key == shardKeyForTest {
		return Entry{}, nil
	}
	e, err := testIndexer(r, key, value)
	if err != nil || e.Due.IsZero() {
		return e, err
	}
	v, err := r.Get(shardKeyForTest)
	if err != nil {
		return Entry{}, err
	}
	if len(v) > 0 {
		n, err := strconv.Atoi(string(v))
		if err != nil {
			return Entry{}, err
		}
		e.Due = e.Due.Add(time.Duration(n) * time.Second)
	}
	return e, nil
}

// TestReadCacheMatchesAStoreWithout: twin stores get the same generated
// history; one keeps the shard record in memory (CachedKey) and reads a
// job's record before writing it, as goka's callbacks do (so its Set skips
// the reverse entry's read after a Get that missed), the other keeps
// nothing and never reads before it writes. Between a Get and its Set the
// history may write anything else (another key, the shard record, moves,
// a rebuild, a put or delete of the same key); stores reopen, and some restart empty and recover
// their table with deferred indexing. Every read answers the same in both,
// and both hold the same, consistent indexes.
func TestReadCacheMatchesAStoreWithout(t *testing.T) {
	t.Parallel()
	seeds := uint64(80)
	if testing.Short() {
		seeds = 20
	}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 0x5ead))
		base := Options{Indexer: shiftIndexer}
		if seed%2 == 1 {
			base.MemTableSize = 1 << 16
		}
		withCache := base
		withCache.CachedKey = shardKeyForTest
		a := newMemStore(t, withCache)
		b := newMemStore(t, base)
		keys := 8 + rng.IntN(40)
		key := func() string { return keyN(rng.IntN(keys)) }
		value := func() []byte {
			if rng.IntN(8) == 0 {
				return []byte("not indexed")
			}
			bucket := ""
			if rng.IntN(3) == 0 {
				bucket = fmt.Sprintf("b%d", rng.IntN(3))
			}
			return val(at(rng.IntN(600)), bucket)
		}
		both := func(what string, f func(s *Store) error) {
			require.NoError(t, f(a), "seed %d: %s (cached)", seed, what)
			require.NoError(t, f(b), "seed %d: %s", seed, what)
		}
		get := func(k string) {
			va, err := a.Get(k)
			require.NoError(t, err)
			vb, err := b.Get(k)
			require.NoError(t, err)
			require.Equal(t, vb, va, "seed %d: Get(%q)", seed, k)
		}
		// other is one write besides the job's own, between its read and
		// its write.
		other := func() {
			switch rng.IntN(7) {
			case 0:
				v := []byte(strconv.Itoa(rng.IntN(5) - 2))
				both("shard put", func(s *Store) error { return s.Set(shardKeyForTest, v) })
			case 1:
				both("shard delete", func(s *Store) error { return s.Delete(shardKeyForTest) })
			case 2:
				k, v := key(), value()
				both("other put", func(s *Store) error { return s.Set(k, v) })
			case 3:
				k := key()
				both("other delete", func(s *Store) error { return s.Delete(k) })
			case 4:
				moves := []Move{{Key: key(), To: at(rng.IntN(900))}, {Key: key()}}
				both("moves", func(s *Store) error { return s.ApplyMoves(moves, at(rng.IntN(900))) })
			case 5:
				both("rebuild", func(s *Store) error { return s.RebuildIndexes(at(1)) })
			case 6:
				get(shardKeyForTest)
			}
		}
		for op := range 400 {
			switch r := rng.IntN(100); {
			case r < 55: // a command: read the job's record, maybe something else, write it
				k, v := key(), value()
				get(k)
				if rng.IntN(4) == 0 {
					other()
				}
				if rng.IntN(10) == 0 {
					k = key() // a write of another key than the one read
				}
				both("put", func(s *Store) error { return s.Set(k, v) })
			case r < 65:
				k := key()
				get(k)
				both("delete", func(s *Store) error { return s.Delete(k) })
			case r < 90:
				other()
			case r < 95:
				a, b = reopen(t, a), reopen(t, b)
			default: // an empty disk: the table recovered with deferred indexing
				fresh := func(s *Store, opts Options) *Store {
					table := tableState(t, s)
					require.NoError(t, s.Close())
					opts.FS, opts.DeferIndexOnRecovery = vfs.NewMem(), true
					n := newMemStore(t, opts)
					for _, k := range sortedKeys(table) {
						require.NoError(t, n.Set(k, []byte(table[k])))
						if rng.IntN(50) == 0 { // a read during the recovery commits its batch
							_, err := n.Get(shardKeyForTest)
							require.NoError(t, err)
						}
					}
					require.NoError(t, n.MarkRecovered())
					return n
				}
				a, b = fresh(a, withCache), fresh(b, base)
			}
			if op%50 == 49 {
				get(shardKeyForTest)
				checkConsistent(t, a)
				require.Equal(t, dumpIndexes(t, b), dumpIndexes(t, a), "seed %d op %d", seed, op)
				require.Equal(t, tableState(t, b), tableState(t, a), "seed %d op %d", seed, op)
			}
		}
		checkConsistent(t, a)
		require.Equal(t, dumpIndexes(t, b), dumpIndexes(t, a), "seed %d", seed)
	}
}

// TestReadCacheNeverGoesBack: one goroutine writes the shard record
// 0, 1, 2, ... while others read it; a reader never sees a value older
// than one it saw, and after the writer stops a read sees the last. Jobs
// are read and written meanwhile from a second writer goroutine (the store
// serializes writers), so the kept misses race other writes too; the
// indexes stay consistent.
func TestReadCacheNeverGoesBack(t *testing.T) {
	t.Parallel()
	s := newMemStore(t, Options{Indexer: shiftIndexer, CachedKey: shardKeyForTest})
	const last = 3000
	var wg sync.WaitGroup
	stop, written := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(written)
		for i := range last + 1 {
			if err := s.Set(shardKeyForTest, []byte(strconv.Itoa(i))); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(1, 2))
		for {
			select {
			case <-stop:
				return
			default:
			}
			k := keyN(rng.IntN(200))
			if _, err := s.Get(k); err != nil {
				t.Error(err)
				return
			}
			if err := s.Set(k, val(at(rng.IntN(100)), "")); err != nil {
				t.Error(err)
				return
			}
			if rng.IntN(3) == 0 {
				if err := s.Delete(k); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := -1
			for {
				select {
				case <-stop:
					return
				default:
				}
				v, err := s.Get(shardKeyForTest)
				if err != nil {
					t.Error(err)
					return
				}
				if v == nil {
					if seen >= 0 {
						t.Errorf("shard record gone after %d", seen)
						return
					}
					continue
				}
				n, err := strconv.Atoi(string(v))
				if err != nil || n < seen {
					t.Errorf("shard value %q after %d (%v)", v, seen, err)
					return
				}
				seen = n
			}
		}()
	}
	<-written
	v, err := s.Get(shardKeyForTest)
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(last), string(v))
	close(stop)
	wg.Wait()
	checkConsistent(t, s)
}
