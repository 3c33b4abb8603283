package store

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// Adversary round 46b: the key filter's final code.

func adv46bBits(f *keyFilter) int {
	if f == nil {
		return 0
	}
	return len(f.words) * 64
}

// TestAdv46bFilterShrinksWithTable: promise 3, "bits per key the table
// holds now". A partition registers a burst of one-shot jobs (20,000
// here), they fire and their records are deleted (purged), and the table
// is back to a few hundred jobs that keep being rewritten, plus a little
// churn. The filter was never rebuilt smaller: a rebuild happened only
// when it filled with new keys, so it stayed sized for the burst. Fixed:
// a rebuild also follows as many deletions as the filter has room for,
// and every rebuild is sized from the table; the churn below (as many
// one-shot jobs as the burst had, registered and purged) reaches it.
func TestAdv46bFilterShrinksWithTable(t *testing.T) {
	s := newMemStore(t, Options{Indexer: testIndexer, KeyFilter: true})
	s.filterMin = 64
	require.NoError(t, s.MarkRecovered())
	const live = 200
	burst := 20_000
	if testing.Short() {
		burst = 5_000
	}
	for i := range burst {
		require.NoError(t, s.Set(keyN(i), val(at(i%100), "b")))
	}
	for i := live; i < burst; i++ { // fired and purged
		require.NoError(t, s.Delete(keyN(i)))
	}
	// Normal life afterwards: rewrites of the live jobs, and some one-shot
	// churn (registered then purged).
	for round := range burst / 100 {
		for i := range live {
			require.NoError(t, s.Set(keyN(i), val(at(round+i%100), "b")))
		}
		for i := range 100 {
			k := fmt.Sprintf("churn-%d-%d", round, i)
			require.NoError(t, s.Set(k, val(at(i), "b")))
			require.NoError(t, s.Delete(k))
		}
	}
	f := s.filter.Load()
	require.NotNil(t, f)
	tableKeys := len(tableState(t, s))
	require.Equal(t, live, tableKeys)
	bound := 2 * filterBitsPerKey * max(tableKeys, s.filterMin) // the documented 2x at most
	t.Logf("table %d keys, filter %d bits (limit %d keys): %.0f bits per table key, %d allowed",
		tableKeys, adv46bBits(f), f.limit, float64(adv46bBits(f))/float64(tableKeys), bound)
	require.LessOrEqual(t, adv46bBits(f), 2*bound,
		"a %d-key table keeps a %d-bit filter (%.0f bits a key) sized for the %d keys it held before",
		tableKeys, adv46bBits(f), float64(adv46bBits(f))/float64(tableKeys), burst)
}

// TestAdv46bGrowthPeakMemory: promise 3, the transient peak of a growth
// rebuild. buildFilterLocked allocated the new filter (2x the table) while
// the old one, full, was still s.filter, kept for readers: both were live
// together, ~30 bits a key. Fixed: the old one is dropped first (readers
// go to Pebble for the build). Checked where the new filter is allocated
// (Store.onFilterAlloc): the store holds no other then, at each growth.
func TestAdv46bGrowthPeakMemory(t *testing.T) {
	s := newMemStore(t, Options{KeyFilter: true}) // the history group's shape
	s.filterMin = 64
	const n = 8_000
	for i := range n {
		require.NoError(t, s.Set(keyN(i), []byte("v")))
	}
	require.NoError(t, s.MarkRecovered())
	allocs, held := 0, 0
	s.onFilterAlloc = func(*keyFilter) {
		allocs++
		if s.filter.Load() != nil {
			held++
		}
	}
	next := n
	for range 2 {
		old := s.filter.Load()
		require.NotNil(t, old)
		for s.filter.Load() == old {
			require.NoError(t, s.Set(keyN(next), []byte("v")))
			next++
		}
		require.NotNil(t, s.filter.Load())
	}
	require.Equal(t, 2, allocs, "growth rebuilds")
	require.Zero(t, held, "a growth rebuild allocated its filter while the store still held the old one")
}

// adv46bKeys are keys with unusual bytes: empty, NUL and 0xff bytes,
// invalid UTF-8, keys that are prefixes of one another, keys spelled like
// the store's internal prefixes and meta keys, the scheduler's shard
// record keys, and long keys.
func adv46bKeys() []string {
	keys := []string{"", "\x00", "\x00\x00", "\xff", "\xff\xff", "\xfe\xff\x00", "\x80\x81", "t", "d", "r", "b", "m",
		"toffset", "moffset", "mindexVersion", "indexVersion", "rebuilding", " ", "a\x00b", "a\x00", "a"}
	for p := range 12 {
		keys = append(keys, fmt.Sprintf("__chronos/shard/%d", p))
	}
	base := "tenant/acme/jobs/"
	for i := range len(base) {
		keys = append(keys, base[:i+1])
	}
	keys = append(keys, strings.Repeat("k", 1<<10), strings.Repeat("k", 1<<10)+"\x00",
		strings.Repeat("x", 100<<10), strings.Repeat("\xff", 64<<10), strings.Repeat("ab", 20<<10)+"c")
	seen := map[string]bool{}
	out := keys[:0]
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// TestAdv46bUnusualKeys: promise 1 for keys with unusual bytes, written
// before the recovery ends (the build reads them from the table), after
// it (Set adds them), across growth rebuilds, a restart and a recovery
// into a fresh store; promise 2 for their index entries. Keys never
// written that are prefixes or extensions of written ones must read
// absent. The build hashes it.Key()[1:] with maphash.Bytes and readers
// hash the key with maphash.String: checked equal for each key too.
func TestAdv46bUnusualKeys(t *testing.T) {
	keys := adv46bKeys()
	for _, k := range keys {
		require.Equal(t, maphash.String(filterSeed, k), maphash.Bytes(filterSeed, tableKey(k)[1:]), "hash of %q", k)
	}
	fs := vfs.NewMem()
	opts := Options{FS: fs, Logger: quiet, Indexer: testIndexer, KeyFilter: true, DeferIndexOnRecovery: true,
		RecoveryL0CompactionThreshold: 2, CachedKey: "__chronos/shard/3"}
	open := func(dir string) *Store {
		s := New(dir, opts)
		s.filterMin = 8
		require.NoError(t, s.Open())
		return s
	}
	m := &adv46Model{table: map[string][]byte{}, due: map[string]time.Time{}, bucket: map[string]string{}}
	absentOnes := func() []string {
		var out []string
		for _, k := range keys {
			for _, c := range []string{k + "\x00", k + "z", "\x01" + k} {
				if _, ok := m.table[c]; !ok {
					out = append(out, c)
				}
			}
			if len(k) > 0 {
				if _, ok := m.table[k[:len(k)-1]]; !ok {
					out = append(out, k[:len(k)-1])
				}
			}
		}
		return out
	}
	check := func(s *Store, where string) {
		t.Helper()
		all := append(sortedKeys(m.table), absentOnes()...)
		for _, k := range all {
			v, err := s.Get(k)
			require.NoError(t, err)
			require.Equal(t, m.table[k], v, "%s: Get(%.40q)", where, k)
			has, err := s.Has(k)
			require.NoError(t, err)
			_, want := m.table[k]
			require.Equal(t, want, has, "%s: Has(%.40q)", where, k)
		}
		checkConsistent(t, s)
		idx := dumpIndexes(t, s)
		require.NoError(t, s.RebuildIndexes(at(0)))
		require.Equal(t, idx, dumpIndexes(t, s), "%s: the index differs from a rebuild", where)
	}
	s := open("/a")
	// The recovery writes every other key (batched, deferred indexing).
	for i, k := range keys {
		if i%2 == 0 {
			require.NoError(t, s.Set(k, m.set(k, at(i), fmt.Sprint("b", i%3))))
		}
	}
	require.NoError(t, s.MarkRecovered())
	require.NotNil(t, s.filter.Load())
	check(s, "after the build")
	// The others after it, each after a Get that misses (a callback's).
	for i, k := range keys {
		if i%2 == 1 {
			v, err := s.Get(k)
			require.NoError(t, err)
			require.Nil(t, v)
			require.NoError(t, s.Set(k, m.set(k, at(i), fmt.Sprint("b", i%3))))
		}
	}
	check(s, "after the adds")
	// Growth rebuilds.
	f0 := s.filter.Load()
	for i := 0; s.filter.Load() == f0 || i < 64; i++ {
		k := fmt.Sprintf("fill-%d", i)
		require.NoError(t, s.Set(k, m.set(k, at(i), "b0")))
	}
	// Delete some unusual keys, rewrite others with a Delete first.
	for i, k := range keys {
		switch i % 4 {
		case 0:
			require.NoError(t, s.Delete(k))
			m.del(k)
		case 1:
			require.NoError(t, s.Delete(k))
			require.NoError(t, s.Set(k, m.set(k, at(1000+i), "b2")))
		}
	}
	check(s, "after growth, deletes and re-puts")
	// Restart.
	require.NoError(t, s.Close())
	s = open("/a")
	require.NoError(t, s.MarkRecovered())
	check(s, "after a restart")
	// A recovery into a fresh store (goka replays the table).
	f := open("/b")
	for _, k := range sortedKeys(m.table) {
		require.NoError(t, f.Set(k, m.table[k]))
	}
	require.NoError(t, f.MarkRecovered())
	require.NotNil(t, f.filter.Load())
	check(f, "after a recovery")
	require.Positive(t, s.filterHits.Load()+f.filterHits.Load())
	require.NoError(t, s.Close())
	require.NoError(t, f.Close())
}

// TestAdv46bDeleteThenSetInOneCallback: promise 2 for the write patterns
// of one callback: Get, Delete then Set of the same key; a Set, Delete,
// Set; a Delete of a missing key then Set; the shard record (CachedKey)
// deleted and written again. Growth rebuilds are forced between and
// inside the patterns (a rebuild drops the deleted key from the filter).
// Every read and index matches the model, and the index is what a rebuild
// from the table gives.
func TestAdv46bDeleteThenSetInOneCallback(t *testing.T) {
	for seed := range uint64(4) {
		r := rand.New(rand.NewPCG(seed, 46))
		s := New("/db", Options{FS: vfs.NewMem(), Logger: quiet, Indexer: testIndexer, KeyFilter: true,
			DeferIndexOnRecovery: seed%2 == 0, CachedKey: "__chronos/shard/0"})
		s.filterMin = 8
		require.NoError(t, s.Open())
		m := &adv46Model{table: map[string][]byte{}, due: map[string]time.Time{}, bucket: map[string]string{}}
		universe := []string{"__chronos/shard/0", "__chronos/shard/1", ""}
		for i := range 120 {
			universe = append(universe, fmt.Sprintf("j%03d", i))
		}
		pick := func() string { return universe[r.IntN(len(universe))] }
		bucket := func() string { return []string{"", "b0", "b1", "b2"}[r.IntN(4)] }
		due := func() time.Time {
			if r.IntN(5) == 0 {
				return time.Time{}
			}
			return at(r.IntN(500))
		}
		fill := 0
		maybeGrow := func() {
			if r.IntN(3) != 0 {
				return
			}
			f0 := s.filter.Load()
			for i := 0; i < 50 && f0 != nil && s.filter.Load() == f0; i++ {
				k := fmt.Sprintf("fill-%05d", fill)
				fill++
				require.NoError(t, s.Set(k, m.set(k, at(fill%500), "b1")))
				if r.IntN(2) == 0 {
					require.NoError(t, s.Delete(k))
					m.del(k)
				}
			}
		}
		for step := range 600 {
			if step == 100 {
				require.NoError(t, s.MarkRecovered())
			}
			k := pick()
			switch r.IntN(5) {
			case 0: // Get, Delete, Set
				_, err := s.Get(k)
				require.NoError(t, err)
				require.NoError(t, s.Delete(k))
				m.del(k)
				maybeGrow()
				require.NoError(t, s.Set(k, m.set(k, due(), bucket())))
			case 1: // Get (miss or hit), Set, Delete, Set
				_, err := s.Get(k)
				require.NoError(t, err)
				require.NoError(t, s.Set(k, m.set(k, due(), bucket())))
				require.NoError(t, s.Delete(k))
				m.del(k)
				maybeGrow()
				require.NoError(t, s.Set(k, m.set(k, due(), bucket())))
			case 2: // Delete (maybe missing), Get, Set
				require.NoError(t, s.Delete(k))
				m.del(k)
				v, err := s.Get(k)
				require.NoError(t, err)
				require.Nil(t, v)
				require.NoError(t, s.Set(k, m.set(k, due(), bucket())))
			case 3: // a move, then Delete, then Set
				if s.Recovered() {
					to := at(600 + r.IntN(100))
					require.NoError(t, s.ApplyMoves([]Move{{Key: k, To: to}}, at(0)))
					if _, ok := m.table[k]; ok {
						m.due[k] = to
					}
				}
				require.NoError(t, s.Delete(k))
				m.del(k)
				maybeGrow()
				require.NoError(t, s.Set(k, m.set(k, due(), bucket())))
			case 4: // a plain Delete
				require.NoError(t, s.Delete(k))
				m.del(k)
			}
			if step%100 == 99 && s.Recovered() {
				adv46Check(t, s, m, universe, fmt.Sprintf("seed %d step %d", seed, step))
			}
		}
		adv46Check(t, s, m, universe, fmt.Sprintf("seed %d end", seed))
		idx := dumpIndexes(t, s)
		require.NoError(t, s.RebuildIndexes(at(0)))
		require.Equal(t, idx, dumpIndexes(t, s), "seed %d: the index differs from a rebuild", seed)
		require.Positive(t, s.filterHits.Load())
		require.NoError(t, s.Close())
	}
}

// TestAdv46bViewRebalanceReaders: promise 1 for the job view's store read
// from HTTP handlers (through its Registry) while its partition is
// rebalanced: the store closed, a new one opened on the same directory,
// goka's replay of the changelog's tail, MarkRecovered, new writes. A
// reader may get ErrClosed/ErrNotOpen or no store, never "absent" for a key
// the table holds.
func TestAdv46bViewRebalanceReaders(t *testing.T) {
	fs := vfs.NewMem()
	var reg Registry
	b := reg.Builder("/views", func(int32) Options {
		return Options{FS: fs, Logger: quiet, Indexer: testIndexer, DeferIndexOnRecovery: true, KeyFilter: true,
			RecoveryL0CompactionThreshold: 2}
	})
	openStore := func() *registered {
		st, err := b("jobs-table", 0)
		require.NoError(t, err)
		g := st.(*registered)
		g.Store.filterMin = 8
		require.NoError(t, g.Open())
		return g
	}
	var stable atomic.Int64 // keys v00000..v(stable-1) are in the table for good
	var done atomic.Bool
	var reads, found atomic.Int64
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 46))
			for !done.Load() {
				w := stable.Load()
				st := reg.Get(0)
				if w == 0 || st == nil {
					continue
				}
				k := fmt.Sprintf("v%05d", r.Int64N(w))
				var ok bool
				var err error
				if g == 0 {
					ok, err = st.Has(k)
				} else {
					var v []byte
					v, err = st.Get(k)
					ok = v != nil
				}
				if errors.Is(err, ErrClosed) || errors.Is(err, ErrNotOpen) {
					continue
				}
				reads.Add(1)
				if err == nil && !ok {
					err = fmt.Errorf("%s is in the table, a handler's read found it absent (filter %v, recovered %v)", k, st.filter.Load() != nil, st.Recovered())
				}
				if err != nil {
					errs <- err
					return
				}
				found.Add(1)
			}
		}()
	}
	st := openStore()
	next := 0
	write := func(st *registered, n int) {
		for range n {
			k := fmt.Sprintf("v%05d", next)
			require.NoError(t, st.Set(k, val(at(next%300), fmt.Sprint("b", next%3))))
			next++
			stable.Store(int64(next))
		}
	}
	write(st, 300)
	require.NoError(t, st.MarkRecovered())
	for round := range 8 {
		write(st, 200)
		require.NoError(t, st.Close())
		st = openStore()
		// goka's replay of the tail: rewrites of keys the store holds.
		for i := range 50 {
			k := fmt.Sprintf("v%05d", (round*37+i)%next)
			require.NoError(t, st.Set(k, val(at(i), "b1")))
		}
		require.NoError(t, st.MarkRecovered())
		require.NotNil(t, st.filter.Load())
	}
	write(st, 200)
	done.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d reads, all found; filter hits %d", reads.Load(), st.filterHits.Load())
	require.Positive(t, reads.Load())
	require.NoError(t, st.Close())
}

// TestAdv46bEmptyTableFilter: promise 4 at the small edge of a build's
// size. A store with an empty table (capacity 0: the least, filterMin,
// takes over) and with the least lowered to 1 answers reads and takes
// writes; a filter sized from a count of 0 grows correctly.
func TestAdv46bEmptyTableFilter(t *testing.T) {
	for _, least := range []int{filterMinKeys, 1} {
		s := newMemStore(t, Options{Indexer: testIndexer, KeyFilter: true})
		s.filterMin = least
		require.NoError(t, s.MarkRecovered())
		f := s.filter.Load()
		require.NotNil(t, f)
		require.Positive(t, f.blocks)
		for i := range 200 {
			k := keyN(i)
			v, err := s.Get(k)
			require.NoError(t, err)
			require.Nil(t, v)
			require.NoError(t, s.Set(k, val(at(i), "b0")))
			has, err := s.Has(k)
			require.NoError(t, err)
			require.True(t, has, "least %d: %s", least, k)
		}
		for i := range 200 {
			require.NoError(t, s.Delete(keyN(i)))
		}
		// A growth rebuild of an empty table (everything deleted).
		f0 := s.filter.Load()
		for i := 0; least == 1 && s.filter.Load() == f0; i++ {
			k := fmt.Sprintf("again-%d", i)
			require.NoError(t, s.Set(k, val(at(i), "b0")))
			require.NoError(t, s.Delete(k))
		}
		require.NotNil(t, s.filter.Load())
		for i := range 200 {
			has, err := s.Has(keyN(i))
			require.NoError(t, err)
			require.False(t, has)
		}
		checkConsistent(t, s)
	}
}

// TestAdv46bCloseReleasesFilter: promise 3 for a closed store. Close keeps
// s.filter: whoever still holds the closed *Store keeps its filter
// reachable, sized for a table it no longer holds. The scheduler does hold
// one: processors/scheduler/rederive.go's passes.by[p].st keeps the store
// of each partition it ran a pass on, a revoked partition's closed store
// included, until that partition's next pass on this instance (never,
// if it stays elsewhere).
func TestAdv46bCloseReleasesFilter(t *testing.T) {
	s := New("/db", Options{FS: vfs.NewMem(), Logger: quiet, Indexer: testIndexer, KeyFilter: true})
	s.filterMin = 8
	require.NoError(t, s.Open())
	for i := range 5000 {
		require.NoError(t, s.Set(keyN(i), val(at(i%100), "b")))
	}
	require.NoError(t, s.MarkRecovered())
	require.NotNil(t, s.filter.Load())
	require.NoError(t, s.Close())
	_, err := s.Get(keyN(1))
	require.ErrorIs(t, err, ErrClosed)
	require.Nil(t, s.filter.Load(), "a closed store keeps its %d-bit filter (a table of 5000 keys) reachable", adv46bBits(s.filter.Load()))
}
