package store

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// adv46FilterBits is the filter's size in bits.
func adv46FilterBits(f *keyFilter) int { return len(f.words) * 64 }

// TestAdv46FilterGrowsWithKeyChurn: promise 3, "about 10 bits per distinct
// key". A table that never holds more than 32 keys, whose keys are
// replaced (a one-shot job registered, fired, deleted: the scheduler's
// normal life), makes the filter count every new key (a deleted key stays
// in it), and each rebuild sizes the new filter from that count
// (2*f.keys), not from the table it just scanned: the filter doubles at
// every rebuild and its size follows the keys ever written since the last
// restart, not the table.
func TestAdv46FilterGrowsWithKeyChurn(t *testing.T) {
	s := newMemStore(t, Options{Indexer: testIndexer, KeyFilter: true})
	s.filterMin = 64
	require.NoError(t, s.MarkRecovered())
	const live = 32
	n := 20_000
	if testing.Short() {
		n = 5_000 // still ~75 rebuilds of a 64-key filter
	}
	for i := range n {
		require.NoError(t, s.Set(keyN(i), val(at(i%100), "b")))
		if i >= live {
			require.NoError(t, s.Delete(keyN(i-live)))
		}
	}
	f := s.filter.Load()
	require.NotNil(t, f)
	tableKeys := len(tableState(t, s))
	require.LessOrEqual(t, tableKeys, live)
	// Generous: 4x the filter a table of max(keys, filterMin) needs.
	bound := 4 * filterBitsPerKey * max(tableKeys, s.filterMin)
	t.Logf("table %d keys; filter limit %d keys, %d bits (%.0f bits per table key); %d distinct keys ever written",
		tableKeys, f.limit, adv46FilterBits(f), float64(adv46FilterBits(f))/float64(tableKeys), n)
	require.LessOrEqual(t, adv46FilterBits(f), bound,
		"the filter of a %d-key table grew to %d bits (capacity %d keys) after %d distinct keys churned through it",
		tableKeys, adv46FilterBits(f), f.limit, n)
}

// TestAdv46FilterStableUnderRewrites: promise 3, the other half. Sets of
// the same keys again and again (a job's state rewritten on each fire), and
// deletes and re-puts of the same keys, add no count and trigger no
// rebuild: the filter stays at its build size.
func TestAdv46FilterStableUnderRewrites(t *testing.T) {
	s := newMemStore(t, Options{Indexer: testIndexer, KeyFilter: true})
	s.filterMin = 8
	const n = 500
	for i := range n {
		require.NoError(t, s.Set(keyN(i), val(at(i), "b")))
	}
	require.NoError(t, s.MarkRecovered())
	require.NotNil(t, s.filter.Load())
	for round := range 20 {
		for i := range n {
			if round%3 == 2 && i%2 == 0 {
				require.NoError(t, s.Delete(keyN(i)))
			}
			require.NoError(t, s.Set(keyN(i), val(at(i+round), "b")))
		}
	}
	// Deletions rebuild it from the table (after as many as it has room
	// for, adversary round 46b); rewrites alone do not grow it.
	f := s.filter.Load()
	require.NotNil(t, f)
	require.LessOrEqual(t, adv46FilterBits(f), 2*filterBitsPerKey*n+512)
}

// adv46Model is what the table and its indexes must hold.
type adv46Model struct {
	table  map[string][]byte
	due    map[string]time.Time
	bucket map[string]string
}

func (m *adv46Model) set(k string, due time.Time, b string) []byte {
	v := val(due, b)
	m.table[k] = v
	if due.IsZero() {
		delete(m.due, k)
	} else {
		m.due[k] = due
	}
	if b == "" {
		delete(m.bucket, k)
	} else {
		m.bucket[k] = b
	}
	return v
}

func (m *adv46Model) del(k string) {
	delete(m.table, k)
	delete(m.due, k)
	delete(m.bucket, k)
}

// adv46Check compares every read with the model: Get, Has, DueOf, the due
// index, the bucket index, and the package's own consistency check.
func adv46Check(t *testing.T, s *Store, m *adv46Model, keys []string, where string) {
	t.Helper()
	for _, k := range keys {
		v, err := s.Get(k)
		require.NoError(t, err)
		require.Equal(t, m.table[k], v, "%s: Get(%s)", where, k)
		has, err := s.Has(k)
		require.NoError(t, err)
		_, want := m.table[k]
		require.Equal(t, want, has, "%s: Has(%s)", where, k)
		d, err := s.DueOf(k)
		require.NoError(t, err)
		require.True(t, d.Equal(m.due[k]), "%s: DueOf(%s) = %v, model %v", where, k, d, m.due[k])
	}
	due, err := s.DueUpTo(maxTime, Due{}, 0)
	require.NoError(t, err)
	require.Len(t, due, len(m.due), "%s: due entries %v", where, due)
	for _, d := range due {
		require.True(t, d.At.Equal(m.due[d.Key]), "%s: due entry %v, model %v", where, d, m.due[d.Key])
	}
	byBucket := map[string][]string{}
	for k, b := range m.bucket {
		byBucket[b] = append(byBucket[b], k)
	}
	for _, b := range []string{"b0", "b1", "b2"} {
		got, err := s.BucketKeys(b, "", 0)
		require.NoError(t, err)
		want := byBucket[b]
		sort.Strings(want)
		require.Equal(t, len(want), len(got), "%s: bucket %s: %v, model %v", where, b, got, want)
		if len(want) > 0 {
			require.Equal(t, want, got, "%s: bucket %s", where, b)
		}
	}
	checkConsistent(t, s)
}

// TestAdv46NoStaleIndexAfterRebuildDropsDeletedKey: promise 2, the direct
// case. A key is written (due and bucket entries), moved by ApplyMoves,
// deleted; a growth rebuild then drops it from the filter (it is rebuilt
// from the table); its next Set skips the reverse-entry read (the filter
// says absent). No entry of its old life may remain, and the index is what
// a rebuild from the table gives.
func TestAdv46NoStaleIndexAfterRebuildDropsDeletedKey(t *testing.T) {
	s := newMemStore(t, Options{Indexer: testIndexer, KeyFilter: true})
	s.filterMin = 8
	require.NoError(t, s.MarkRecovered())
	m := &adv46Model{table: map[string][]byte{}, due: map[string]time.Time{}, bucket: map[string]string{}}
	k := "victim"
	require.NoError(t, s.Set(k, m.set(k, at(10), "b0")))
	require.NoError(t, s.ApplyMoves([]Move{{Key: k, To: at(20), From: at(10), Bucket: "b0"}}, at(0)))
	m.due[k] = at(20)
	require.NoError(t, s.Delete(k))
	m.del(k)
	f0 := s.filter.Load()
	var keys []string
	for i := 0; s.filter.Load() == f0; i++ {
		kk := keyN(i)
		keys = append(keys, kk)
		require.NoError(t, s.Set(kk, m.set(kk, at(100+i), "b1")))
	}
	require.True(t, s.filterAbsent(k), "the rebuilt filter still holds the deleted key: the attack needs it dropped")
	hits := s.filterHits.Load()
	require.NoError(t, s.Set(k, m.set(k, at(30), "b2")))
	require.Greater(t, s.filterHits.Load(), hits, "the Set did not trust the filter")
	keys = append(keys, k)
	adv46Check(t, s, m, keys, "after the re-put")
	idx := dumpIndexes(t, s)
	require.NoError(t, s.RebuildIndexes(at(0)))
	require.Equal(t, idx, dumpIndexes(t, s), "the index differs from a rebuild from the table")
}

// TestAdv46ModelWithMovesAndRebuilds: promise 2, randomized. Sets (half
// after a Get, as a callback does), Deletes, ApplyMoves with trusted From
// (from the store's own DueUpTo), ApplyScannedMoves over a scanned span
// (range deletion: minSpan lowered), ApplyMoves without From (of keys that
// may be absent), RebuildIndexes, and filter growth (filterMin 8). After
// each batch of ops every key's Get/Has/DueOf and both indexes match the
// model, and no index entry points to a missing record.
func TestAdv46ModelWithMovesAndRebuilds(t *testing.T) {
	for seed := range uint64(6) {
		r := rand.New(rand.NewPCG(seed, 46))
		s := newMemStore(t, Options{Indexer: testIndexer, KeyFilter: true, DeferIndexOnRecovery: seed%2 == 0})
		s.filterMin = 8
		s.minSpan = 2
		m := &adv46Model{table: map[string][]byte{}, due: map[string]time.Time{}, bucket: map[string]string{}}
		universe := make([]string, 300)
		for i := range universe {
			universe[i] = fmt.Sprintf("k%03d", i)
		}
		// Keys enter in waves, so the filter, rebuilt from the table,
		// drops deleted keys that come back later.
		pick := func(op int) string { return universe[r.IntN(min(len(universe), 20+op/4))] }
		for op := range 1500 {
			if op == 30 {
				require.NoError(t, s.MarkRecovered())
			}
			k := pick(op)
			switch x := r.IntN(20); {
			case x < 8:
				if r.IntN(2) == 0 {
					_, err := s.Get(k)
					require.NoError(t, err)
				}
				var due time.Time
				if r.IntN(5) > 0 {
					due = at(r.IntN(500))
				}
				b := ""
				if r.IntN(4) > 0 {
					b = fmt.Sprint("b", r.IntN(3))
				}
				require.NoError(t, s.Set(k, m.set(k, due, b)))
			case x < 12:
				require.NoError(t, s.Delete(k))
				m.del(k)
			case x < 15 && op > 30:
				// Trusted moves from a scan of the index.
				due, err := s.DueUpTo(maxTime, Due{}, 0)
				require.NoError(t, err)
				if len(due) == 0 {
					continue
				}
				i := r.IntN(len(due))
				j := min(len(due), i+1+r.IntN(6))
				span := due[i:j]
				moves := make([]Move, 0, len(span))
				for _, d := range span {
					var to time.Time
					if r.IntN(3) > 0 {
						to = at(r.IntN(500))
					}
					moves = append(moves, Move{Key: d.Key, To: to, From: d.At, Bucket: m.bucket[d.Key]})
				}
				if r.IntN(2) == 0 {
					require.NoError(t, s.ApplyScannedMoves(moves, span[0], span[len(span)-1], at(0)))
				} else {
					require.NoError(t, s.ApplyMoves(moves, at(0)))
				}
				for _, mv := range moves {
					if mv.To.IsZero() {
						delete(m.due, mv.Key)
					} else {
						m.due[mv.Key] = mv.To
					}
				}
			case x < 17 && op > 30:
				// Moves without From: absent keys are skipped.
				var moves []Move
				for range 1 + r.IntN(4) {
					moves = append(moves, Move{Key: pick(op), To: at(r.IntN(500))})
				}
				require.NoError(t, s.ApplyMoves(moves, at(0)))
				for _, mv := range moves {
					if _, ok := m.table[mv.Key]; ok {
						m.due[mv.Key] = mv.To
					}
				}
			case x == 17 && r.IntN(8) == 0:
				require.NoError(t, s.RebuildIndexes(at(0)))
				for k, v := range m.table {
					e, err := testIndexer(nil, k, v)
					require.NoError(t, err)
					if e.Due.IsZero() {
						delete(m.due, k)
					} else {
						m.due[k] = e.Due
					}
				}
			default:
				v, err := s.Get(k)
				require.NoError(t, err)
				require.Equal(t, m.table[k], v, "seed %d op %d: Get(%s)", seed, op, k)
			}
			if op%100 == 99 && op > 30 {
				adv46Check(t, s, m, universe, fmt.Sprintf("seed %d op %d", seed, op))
			}
		}
		require.Positive(t, s.filterHits.Load(), "seed %d: the filter answered nothing", seed)
	}
}

// TestAdv46MarkRecoveredRacesSetsAndReaders: promise 1 under -race. A
// fresh store (deferred indexing, recovery batching, untune's reopen) is
// written by one goroutine (Get then Set of new keys, rewrites, deletes of
// other keys) while another calls MarkRecovered midway (goka's cancelled
// recovery) and readers Get and Has keys already written and never
// deleted. No read may find such a key absent; afterwards the table,
// indexes and filter agree.
func TestAdv46MarkRecoveredRacesSetsAndReaders(t *testing.T) {
	seeds := uint64(3)
	if testing.Short() {
		seeds = 1 // ~20 s a seed under -race
	}
	for seed := range seeds {
		opts := Options{FS: vfs.NewMem(), Logger: quiet, Indexer: testIndexer, KeyFilter: true,
			DeferIndexOnRecovery: true, RecoveryL0CompactionThreshold: 2, MemTableSize: 256 << 10}
		s := New("/db", opts)
		s.filterMin = 8
		require.NoError(t, s.Open())
		const n = 3000
		var stable atomic.Int64 // stable keys s0..s(stable-1) are in the table for good
		var done atomic.Bool
		errs := make(chan error, 8)
		var wg sync.WaitGroup
		for g := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(seed, uint64(g)))
				for !done.Load() {
					w := stable.Load()
					if w == 0 {
						runtime.Gosched()
						continue
					}
					k := fmt.Sprintf("s%05d", r.Int64N(w))
					var ok bool
					var err error
					if g%2 == 0 {
						var v []byte
						v, err = s.Get(k)
						ok = v != nil
					} else {
						ok, err = s.Has(k)
					}
					if err == nil && !ok {
						err = fmt.Errorf("seed %d: %s is in the table, read found it absent (filter %v)", seed, k, s.filter.Load() != nil)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		marked := make(chan error, 1)
		r := rand.New(rand.NewPCG(seed, 99))
		m := &adv46Model{table: map[string][]byte{}, due: map[string]time.Time{}, bucket: map[string]string{}}
		for i := range n {
			if i == n/3 {
				go func() { marked <- s.MarkRecovered() }()
			}
			k := fmt.Sprintf("s%05d", i)
			_, err := s.Get(k)
			require.NoError(t, err)
			require.NoError(t, s.Set(k, m.set(k, at(i%300), fmt.Sprint("b", i%3))))
			stable.Store(int64(i + 1))
			// Churn keys that come and go.
			c := fmt.Sprintf("c%03d", r.IntN(200))
			if r.IntN(2) == 0 {
				require.NoError(t, s.Set(c, m.set(c, at(r.IntN(300)), fmt.Sprint("b", r.IntN(3)))))
			} else {
				require.NoError(t, s.Delete(c))
				m.del(c)
			}
			// Rewrites of a stable key.
			j := fmt.Sprintf("s%05d", r.IntN(i+1))
			require.NoError(t, s.Set(j, m.set(j, at(r.IntN(300)), fmt.Sprint("b", r.IntN(3)))))
		}
		require.NoError(t, <-marked)
		done.Store(true)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		require.NotNil(t, s.filter.Load())
		keys := sortedKeys(m.table)
		for i := range 200 {
			keys = append(keys, fmt.Sprintf("c%03d", i))
		}
		adv46Check(t, s, m, keys, fmt.Sprintf("seed %d", seed))
		idx := dumpIndexes(t, s)
		require.NoError(t, s.RebuildIndexes(at(0)))
		require.Equal(t, idx, dumpIndexes(t, s), "seed %d: the index differs from a rebuild", seed)
		require.NoError(t, s.Close())
	}
}

// TestAdv46CrashedStoreReadsMatchTable: promise 1 across crashes. A store
// (deferred indexing, recovery batching, untune's reopen, OffsetEvery) is
// crash-cloned while open, with any share of its unsynced data kept; the
// new store on the clone replays a few writes (its recovery), is marked
// recovered, and is written on. For every key, Get and Has must agree
// with what an iterator finds in the table (the oracle needs no model: a
// crash may lose any suffix), and the index with the table.
func TestAdv46CrashedStoreReadsMatchTable(t *testing.T) {
	universe := make([]string, 250)
	for i := range universe {
		universe[i] = fmt.Sprintf("k%03d", i)
	}
	verify := func(s *Store, where string) {
		table := tableState(t, s)
		for _, k := range universe {
			v, err := s.Get(k)
			require.NoError(t, err)
			want, ok := table[k]
			if ok {
				require.Equal(t, want, string(v), "%s: Get(%s)", where, k)
			} else {
				require.Nil(t, v, "%s: Get(%s)", where, k)
			}
			has, err := s.Has(k)
			require.NoError(t, err)
			require.Equal(t, ok, has, "%s: Has(%s)", where, k)
		}
		checkConsistent(t, s)
	}
	for seed := range uint64(6) {
		r := rand.New(rand.NewPCG(seed, 7))
		fs := vfs.NewCrashableMem()
		opts := Options{FS: fs, Logger: quiet, Indexer: testIndexer, KeyFilter: true, DeferIndexOnRecovery: true,
			RecoveryL0CompactionThreshold: 2, OffsetEvery: 7}
		open := func() *Store {
			s := New("/db", opts)
			s.filterMin = 8
			require.NoError(t, s.Open())
			return s
		}
		s := open()
		off := int64(0)
		write := func(s *Store, n int) {
			for range n {
				k := universe[r.IntN(len(universe))]
				if r.IntN(4) == 0 {
					require.NoError(t, s.Delete(k))
				} else {
					if r.IntN(2) == 0 {
						_, err := s.Get(k)
						require.NoError(t, err)
					}
					require.NoError(t, s.Set(k, val(at(r.IntN(300)), fmt.Sprint("b", r.IntN(3)))))
				}
				require.NoError(t, s.SetOffset(off))
				off++
				if r.IntN(200) == 0 {
					require.NoError(t, s.Sync())
				}
			}
		}
		write(s, 100)
		require.NoError(t, s.MarkRecovered())
		for round := range 4 {
			write(s, 300)
			verify(s, fmt.Sprintf("seed %d round %d before the crash", seed, round))
			crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: r.IntN(101), RNG: rand.New(rand.NewPCG(seed, uint64(round)))})
			_ = s.Close()
			fs = crashed
			opts.FS = fs
			s = open()
			write(s, r.IntN(60)) // the recovery's replay
			require.NoError(t, s.MarkRecovered())
			verify(s, fmt.Sprintf("seed %d round %d after the crash", seed, round))
		}
		write(s, 300)
		verify(s, fmt.Sprintf("seed %d end", seed))
		require.Positive(t, s.filterHits.Load())
		require.NoError(t, s.Close())
	}
}

// adv46FailingFS fails every read of an sstable while on.
func adv46FailingFS(fs vfs.FS) (vfs.FS, *errorfs.Toggle) {
	tog := &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind.ReadOrWrite() == errorfs.OpIsRead && strings.HasSuffix(op.Path, ".sst") {
			return errorfs.ErrInjected
		}
		return nil
	})}
	return errorfs.Wrap(fs, tog), tog
}

// TestAdv46FilterErrorsDoNotFailWrites: promise 4. With every sstable read
// failing (a bad disk), MarkRecovered, whose filter build reads the whole
// table, must still succeed (no filter: reads go to Pebble); and a Set
// whose growth rebuild fails the same way must succeed and drop the
// filter. Once the reads work again, every key is found.
func TestAdv46FilterErrorsDoNotFailWrites(t *testing.T) {
	mem := vfs.NewMem()
	fs, tog := adv46FailingFS(mem)
	// A tiny block cache: every read of an sstable reaches the FS.
	opts := Options{FS: fs, Logger: quiet, Indexer: testIndexer, KeyFilter: true, CacheSize: 1 << 10}
	s := New("/db", opts)
	s.filterMin = 8
	require.NoError(t, s.Open())
	const n = 400
	for i := range n {
		require.NoError(t, s.Set(keyN(i), val(at(i), "b0")))
	}
	require.NoError(t, s.db.Flush())
	require.NoError(t, s.Close())

	// 1. The build at MarkRecovered fails.
	s = New("/db", opts)
	s.filterMin = 8
	require.NoError(t, s.Open())
	require.NoError(t, s.SetOffset(41)) // MarkRecovered then writes the offset without reading it
	tog.On()
	require.NoError(t, s.MarkRecovered(), "a failed filter build failed MarkRecovered")
	tog.Off()
	require.Nil(t, s.filter.Load(), "the build read nothing from the sstables? (the test needs it to fail)")
	for i := range n {
		v, err := s.Get(keyN(i))
		require.NoError(t, err)
		require.NotNil(t, v, "Get(%s) without a filter", keyN(i))
	}
	require.NoError(t, s.Close())

	// 2. A growth rebuild fails inside a Set.
	s = New("/db", opts)
	s.filterMin = 8
	require.NoError(t, s.Open())
	require.NoError(t, s.MarkRecovered())
	require.NotNil(t, s.filter.Load())
	require.NoError(t, s.Close()) // cold cache for the rebuild
	s = New("/db", opts)
	s.filterMin = 8
	require.NoError(t, s.Open())
	require.NoError(t, s.MarkRecovered())
	f := s.filter.Load()
	require.NotNil(t, f)
	// Fill it to its limit, while reads work (into the memtable).
	i := n
	for f.keys < f.limit {
		k := keyN(i)
		i++
		require.NoError(t, s.Set(k, val(at(i), "b1")))
		require.Same(t, f, s.filter.Load())
	}
	// The next new key the filter reports absent overflows it: its Set
	// rebuilds, which reads the sstables.
	var k string
	for {
		k = keyN(i)
		i++
		if s.filterAbsent(k) {
			break
		}
	}
	tog.On()
	err := s.Set(k, val(at(i), "b2"))
	tog.Off()
	require.NoError(t, err, "a failed filter rebuild failed the Set")
	require.Nil(t, s.filter.Load(), "the rebuild did not fail (the test needs it to)")
	for j := range n {
		v, err := s.Get(keyN(j))
		require.NoError(t, err)
		require.NotNil(t, v, "Get(%s) after the failed rebuild", keyN(j))
	}
	v, err := s.Get(k)
	require.NoError(t, err)
	require.NotNil(t, v, "the Set whose rebuild failed did not write %s", k)
	checkConsistent(t, s)
	require.NoError(t, s.Close())
}
