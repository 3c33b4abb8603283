package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// testIndexer reads "dueNanos|bucket|payload" values; an empty dueNanos
// means no due entry, an empty bucket no bucket entry. Values not in this
// format get no entries.
func testIndexer(_ Reader, _ string, value []byte) (Entry, error) {
	parts := strings.SplitN(string(value), "|", 3)
	if len(parts) < 2 {
		return Entry{}, nil
	}
	var e Entry
	if parts[0] != "" {
		n, err := strconv.ParseInt(parts[0], 10, 64)
		if err != nil {
			return Entry{}, err
		}
		e.Due = time.Unix(0, n)
	}
	e.Bucket = parts[1]
	return e, nil
}

func val(due time.Time, bucket string) []byte {
	d := ""
	if !due.IsZero() {
		d = strconv.FormatInt(due.UnixNano(), 10)
	}
	return []byte(d + "|" + bucket + "|payload")
}

func quiet(string, ...any) {}

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func newMemStore(t testing.TB, opts Options) *Store {
	t.Helper()
	if opts.FS == nil {
		opts.FS = vfs.NewMem()
	}
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	s := New("/db", opts)
	require.NoError(t, s.Open())
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func reopen(t testing.TB, s *Store) *Store {
	t.Helper()
	require.NoError(t, s.Close())
	s2 := New(s.dir, s.opts)
	require.NoError(t, s2.Open())
	t.Cleanup(func() { _ = s2.Close() })
	return s2
}

// rawScan returns all raw (key, value) pairs with prefix p.
func rawScan(t testing.TB, s *Store, p byte) [][2][]byte {
	t.Helper()
	s.mu.RLock()
	require.NoError(t, s.commitPending(), "the writes a recovery batched")
	s.mu.RUnlock()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{p}, UpperBound: []byte{p + 1}})
	require.NoError(t, err)
	var out [][2][]byte
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		require.NoError(t, err)
		out = append(out, [2][]byte{bytes.Clone(it.Key()), bytes.Clone(v)})
	}
	require.NoError(t, it.Close())
	return out
}

// checkConsistent verifies that every index entry points to an existing
// table record with the matching reverse entry (and due time), and that
// every reverse entry has exactly its index entries.
func checkConsistent(t testing.TB, s *Store) {
	t.Helper()
	s.mu.RLock()
	defer s.mu.RUnlock()
	require.NoError(t, s.commitPending(), "the writes a recovery batched")
	has := func(k []byte) bool {
		_, c, err := s.db.Get(k)
		if err == pebble.ErrNotFound {
			return false
		}
		require.NoError(t, err)
		require.NoError(t, c.Close())
		return true
	}
	revs := map[string]rev{}
	for _, kv := range rawScan(t, s, prefixReverse) {
		key := string(kv[0][1:])
		r, err := decodeRev(kv[1])
		require.NoError(t, err, "reverse entry of %q", key)
		require.False(t, r.empty(), "empty reverse entry for %q", key)
		require.True(t, has(tableKey(key)), "reverse entry for missing record %q", key)
		if r.hasDue {
			require.True(t, has(dueKey(r.due, key)), "missing due entry for %q", key)
		}
		if r.hasBucket {
			require.True(t, has(bucketKey(r.bucket, key)), "missing bucket entry for %q", key)
		}
		revs[key] = r
	}
	for _, kv := range rawScan(t, s, prefixDue) {
		require.GreaterOrEqual(t, len(kv[0]), 9)
		n := int64(binary.BigEndian.Uint64(kv[0][1:9]) ^ (1 << 63))
		key := string(kv[0][9:])
		r, ok := revs[key]
		require.True(t, ok, "due entry for %q without reverse entry", key)
		require.True(t, r.hasDue && r.due == n, "due entry for %q at %d, reverse says %+v", key, n, r)
		require.True(t, has(tableKey(key)), "due entry for missing record %q", key)
	}
	for _, kv := range rawScan(t, s, prefixBucket) {
		k := kv[0][1:]
		l, w := binary.Uvarint(k)
		require.Greater(t, w, 0)
		bucket, key := string(k[w:w+int(l)]), string(k[w+int(l):])
		r, ok := revs[key]
		require.True(t, ok, "bucket entry for %q without reverse entry", key)
		require.True(t, r.hasBucket && r.bucket == bucket, "bucket entry %q/%q, reverse says %+v", bucket, key, r)
	}
}

// indexState is a comparable dump of all indexes.
type indexState struct {
	Due     []Due
	Buckets map[string][]string
}

func dumpIndexes(t testing.TB, s *Store) indexState {
	t.Helper()
	due, err := s.DueUpTo(maxTime, Due{}, 0)
	require.NoError(t, err)
	st := indexState{Due: due, Buckets: map[string][]string{}}
	buckets := map[string]bool{}
	s.mu.RLock()
	for _, kv := range rawScan(t, s, prefixReverse) {
		r, err := decodeRev(kv[1])
		require.NoError(t, err)
		if r.hasBucket {
			buckets[r.bucket] = true
		}
	}
	s.mu.RUnlock()
	for b := range buckets {
		keys, err := s.BucketKeys(b, "", 0)
		require.NoError(t, err)
		st.Buckets[b] = keys
	}
	return st
}

// tableState returns all table records.
func tableState(t testing.TB, s *Store) map[string]string {
	t.Helper()
	it, err := s.Iterator()
	require.NoError(t, err)
	defer it.Release()
	m := map[string]string{}
	for it.Next() {
		v, err := it.Value()
		require.NoError(t, err)
		m[string(it.Key())] = string(v)
	}
	require.NoError(t, it.Err())
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func keyN(i int) string { return fmt.Sprintf("key-%05d", i) }

// cloneGuard is a crashable MemFS whose crash clones never run beside a
// Link. Pebble's MemFS.Link (2.1.7) read-locks the MemFS's clone mutex
// twice, and CrashClone write-locks it: a clone taken on one goroutine
// (a file-system hook on a flush's or compaction's goroutine) while
// another links (an ingest of the index rebuild) can arrive between the
// two read locks, and both wait for ever (CI's store package hung 30
// minutes on it, 2026-12-06). Tests that clone from a hook wrap the MemFS
// in one and clone through it.
type cloneGuard struct {
	vfs.FS
	mem     *vfs.MemFS
	linking sync.RWMutex
}

func newCloneGuard(mem *vfs.MemFS) *cloneGuard { return &cloneGuard{FS: mem, mem: mem} }

func (g *cloneGuard) Link(oldname, newname string) error {
	g.linking.RLock()
	defer g.linking.RUnlock()
	return g.FS.Link(oldname, newname)
}

// crashClone takes a crash clone with no Link running.
func (g *cloneGuard) crashClone(cfg vfs.CrashCloneCfg) *vfs.MemFS {
	g.linking.Lock()
	defer g.linking.Unlock()
	return g.mem.CrashClone(cfg)
}

// crashCloner is a crashable MemFS (FS) that takes a crash clone at every
// every-th file operation (0: none), up to limit clones, on whichever
// goroutine makes the operation (Pebble's flushes and compactions too):
// its generator and its clones are under a mutex. The clones' unsynced
// data and generators follow seed; inj seeds the injector's own choices.
type crashCloner struct {
	FS           vfs.FS
	every, limit atomic.Int64

	mu     sync.Mutex
	ops    int64
	clones []*vfs.MemFS
}

func newCrashCloner(seed, inj uint64) *crashCloner {
	c := &crashCloner{}
	irng := rand.New(rand.NewPCG(seed, inj))
	guard := newCloneGuard(vfs.NewCrashableMem()) // an ingest links while the injector clones
	c.FS = errorfs.Wrap(guard, errorfs.InjectorFunc(func(errorfs.Op) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		if e := c.every.Load(); e > 0 {
			if c.ops++; c.ops%e == 0 && int64(len(c.clones)) < c.limit.Load() {
				c.clones = append(c.clones, guard.crashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: irng.IntN(101), RNG: rand.New(rand.NewPCG(seed, uint64(len(c.clones))))}))
			}
		}
		return nil
	}))
	return c
}

// taken returns the clones taken so far.
func (c *crashCloner) taken() []*vfs.MemFS {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clones
}
