package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// Adversary round 65: the one-pass growth of the key filter (2985fce).
// Interleavings, failures and Close around the rebuilds. The tests marked
// "goroutines" start goroutines (for the race list).

// adv65ReadAll reads every key of keys with Get and Has from a goroutine
// of its own and returns what it found wrong (nil: all present).
func adv65ReadAll(s *Store, keys []string) error {
	done := make(chan error, 1)
	go func() {
		for _, k := range keys {
			v, err := s.Get(k)
			if err == nil && v == nil {
				err = fmt.Errorf("Get(%s): absent (filter %v)", k, s.filter.Load() != nil)
			}
			if err == nil {
				var ok bool
				ok, err = s.Has(k)
				if err == nil && !ok {
					err = fmt.Errorf("Has(%s): absent (filter %v)", k, s.filter.Load() != nil)
				}
			}
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		return errors.New("readers stuck during a rebuild")
	}
}

// TestAdversary65ReadersInsideRebuildPasses: promise 1 (and 4) inside the
// rebuild. Churn makes the estimate more than twice the count, so a
// growth runs all three passes (by estimate, counting, by count); from
// the hooks at each point (the filter dropped, the old one gone) a reader
// goroutine reads every key the table holds, with Get and Has, while the
// writer holds s.wmu: all are found, none is stuck. Background readers
// read stable keys all along. Goroutines.
func TestAdversary65ReadersInsideRebuildPasses(t *testing.T) {
	s := adv65Fresh(t, 600, true, 8)
	var stable atomic.Int64 // key-00000..key-(stable-1) stay in the table
	stable.Store(299)
	table := map[string]bool{}
	for i := range 600 {
		table[keyN(i)] = true
	}
	var inHook []error
	var hooks, allocs, counts int
	check := func(what string) {
		hooks++
		if s.filter.Load() != nil {
			inHook = append(inHook, fmt.Errorf("%s: a filter is held during the rebuild", what))
		}
		keys := sortedKeys(table)
		if err := adv65ReadAll(s, keys); err != nil {
			inHook = append(inHook, fmt.Errorf("%s: %w", what, err))
		}
	}
	s.onFilterAlloc = func(*keyFilter) { allocs++; check(fmt.Sprint("alloc ", allocs)) }
	s.onFilterCount = func() { counts++; check(fmt.Sprint("count ", counts)) }

	var done atomic.Bool
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 65))
			for !done.Load() {
				k := keyN(r.IntN(int(stable.Load())))
				var ok bool
				var err error
				if g == 0 {
					var v []byte
					v, err = s.Get(k)
					ok = v != nil
				} else {
					ok, err = s.Has(k)
				}
				if err == nil && !ok {
					err = fmt.Errorf("background reader: %s is in the table, read absent", k)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	// Churn: keys 300..599 purged one by one while new ones come, then
	// steady churn of the new ones (oldest first).
	oldest, next := 300, 600
	for range 4000 {
		k := keyN(next)
		next++
		_, err := s.Get(k)
		require.NoError(t, err)
		require.NoError(t, s.Set(k, val(at(next%100), "b")))
		table[k] = true
		require.NoError(t, s.Delete(keyN(oldest)))
		delete(table, keyN(oldest))
		oldest++
		// Since round 65's fix a growth's estimate is the keys the filter
		// saw less its deletions: a key deleted and put again makes it
		// short of the table, so growths run their pass by the count too,
		// and the deletions' rebuilds their counting pass.
		require.NoError(t, s.Delete(keyN(299)))
		require.NoError(t, s.Set(keyN(299), val(at(0), "b")))
	}
	done.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s.onFilterAlloc, s.onFilterCount = nil, nil
	for _, err := range inHook {
		t.Error(err)
	}
	t.Logf("%d hook points read the whole table (%d filters allocated, %d counting passes)", hooks, allocs, counts)
	require.Positive(t, counts, "no rebuild ran its counting pass")
	require.Greater(t, allocs, counts, "no growth ran")
	f := s.filter.Load()
	require.NotNil(t, f)
	for k := range table {
		require.True(t, f.mayContain(filterHash(k)), k)
	}
	require.Equal(t, len(table), len(tableState(t, s)))
	checkConsistent(t, s)
}

// TestAdversary65RebuildFailsAtEachPass: promises 1 and 4 for a growth
// rebuild whose estimate is too large (three passes) failing in each of
// them: the pass by estimate, the counting pass, the pass by count
// (every read of an sstable failing from that point). The Set that
// overflowed the filter succeeds and is written; the filter is dropped;
// every key the table holds is read as present, every purged one as
// absent; later writes work; a restart builds a filter holding every key.
func TestAdversary65RebuildFailsAtEachPass(t *testing.T) {
	// No "count": since round 65's fix a growth has no counting pass (a
	// pass by an estimate that was off is followed by one sized by the
	// keys it met).
	for _, where := range []string{"estimate", "by-count"} {
		t.Run(where, func(t *testing.T) {
			mem := vfs.NewMem()
			fs, tog := adv46FailingFS(mem)
			opts := Options{FS: fs, Logger: quiet, Indexer: testIndexer, KeyFilter: true, CacheSize: 1 << 10}
			open := func() *Store {
				s := New("/db", opts)
				s.filterMin = 8
				require.NoError(t, s.Open())
				return s
			}
			s := open()
			const n = 400
			model := map[string][]byte{}
			for i := range n {
				v := val(at(i%100), "b0")
				require.NoError(t, s.Set(keyN(i), v))
				model[keyN(i)] = v
			}
			require.NoError(t, s.db.Flush())
			require.NoError(t, s.Close())
			s = open() // not fresh: MarkRecovered builds by count (1.25x)
			defer func() { _ = s.Close() }()
			require.NoError(t, s.MarkRecovered())
			f := s.filter.Load()
			require.NotNil(t, f)
			// Purge 100, and delete and put again one key 300 times: the
			// estimate (keys seen less deletions) falls short of the table.
			for i := range 100 {
				require.NoError(t, s.Delete(keyN(i)))
				delete(model, keyN(i))
			}
			for range 300 {
				require.NoError(t, s.Delete(keyN(399)))
				require.NoError(t, s.Set(keyN(399), model[keyN(399)]))
			}
			require.Same(t, f, s.filter.Load())
			next := n
			for f.keys < f.limit {
				k := keyN(next)
				next++
				v := val(at(next%100), "b1")
				require.NoError(t, s.Set(k, v))
				model[k] = v
				require.Same(t, f, s.filter.Load())
			}
			k := adv65NextAbsent(s, &next)
			allocs, counts := 0, 0
			s.onFilterAlloc = func(*keyFilter) {
				allocs++
				if where == "by-count" && allocs == 2 {
					tog.On()
				}
			}
			s.onFilterCount = func() { counts++ }
			if where == "estimate" {
				tog.On()
			}
			v := val(at(7), "b2")
			err := s.Set(k, v)
			tog.Off()
			s.onFilterAlloc, s.onFilterCount = nil, nil
			require.NoError(t, err, "a failed rebuild failed the Set")
			model[k] = v
			require.Nil(t, s.filter.Load(), "the rebuild did not fail (allocs %d, counts %d)", allocs, counts)
			switch where {
			case "estimate":
				require.Equal(t, 1, allocs)
			case "by-count":
				require.Equal(t, 2, allocs)
			}
			verify := func(s *Store, when string) {
				for i := range next {
					key := keyN(i)
					got, err := s.Get(key)
					require.NoError(t, err)
					require.Equal(t, model[key], got, "%s: Get(%s)", when, key)
					has, err := s.Has(key)
					require.NoError(t, err)
					_, want := model[key]
					require.Equal(t, want, has, "%s: Has(%s)", when, key)
				}
				checkConsistent(t, s)
			}
			verify(s, "after the failed rebuild")
			// Later writes, with no filter.
			for i := range 50 {
				key := fmt.Sprintf("late-%02d", i)
				v := val(at(i), "b0")
				require.NoError(t, s.Set(key, v))
				model[key] = v
				require.NoError(t, s.Delete(keyN(300+i)))
				delete(model, keyN(300+i))
			}
			verify(s, "after later writes")
			require.NoError(t, s.Close())
			s = open()
			require.NoError(t, s.MarkRecovered())
			g := s.filter.Load()
			require.NotNil(t, g)
			for key := range model {
				require.True(t, g.mayContain(filterHash(key)), "after the restart: %s", key)
			}
			verify(s, "after the restart")
		})
	}
}

// TestAdversary65CloseDuringRebuild: promise 4. Close is called while a
// Set's growth rebuild is in its counting pass (s.mu read-held, s.wmu
// held): Close waits for the Set, the Set completes, Close returns, the
// closed store keeps no filter and answers ErrClosed. Nothing waits
// forever (a timeout fails the test instead). Goroutines.
func TestAdversary65CloseDuringRebuild(t *testing.T) {
	// "count" is Close during a deletions' rebuild's counting pass; since
	// round 65's fix a growth has none.
	for _, at2 := range []string{"count", "alloc2"} {
		t.Run(at2, func(t *testing.T) {
			s := New("/db", Options{FS: vfs.NewMem(), Logger: quiet, Indexer: testIndexer, KeyFilter: true})
			s.filterMin = 8
			require.NoError(t, s.Open())
			for i := range 500 {
				require.NoError(t, s.Set(keyN(i), val(at(i%100), "b")))
			}
			require.NoError(t, s.MarkRecovered())
			f := s.filter.Load()
			for i := range 100 {
				require.NoError(t, s.Delete(keyN(i)))
			}
			// A key deleted and put again: the growth's estimate falls short
			// (alloc2); for "count", deletions past the filter's room.
			churn := 300
			if at2 == "count" {
				churn = f.limit - 100 // the next deletion rebuilds
			}
			for range churn {
				require.NoError(t, s.Delete(keyN(499)))
				require.NoError(t, s.Set(keyN(499), val(at(0), "b")))
			}
			closed := make(chan error, 1)
			started := false
			startClose := func() {
				if started {
					return
				}
				started = true
				go func() { closed <- s.Close() }()
				time.Sleep(50 * time.Millisecond) // Close now waits for s.mu
			}
			allocs := 0
			s.onFilterCount = func() {
				if at2 == "count" {
					startClose()
				}
			}
			s.onFilterAlloc = func(*keyFilter) {
				if allocs++; at2 == "alloc2" && allocs == 2 {
					startClose()
				}
			}
			setDone := make(chan error, 1)
			go func() {
				next := 500
				for s.filter.Load() == f && !started {
					if at2 == "count" {
						if err := s.Delete(keyN(499)); err != nil {
							setDone <- err
							return
						}
						if started {
							continue // this Delete's rebuild started Close
						}
						if err := s.Set(keyN(499), val(at(0), "b")); err != nil {
							setDone <- err
							return
						}
						continue
					}
					if err := s.Set(keyN(next), val(at(next%100), "b")); err != nil {
						setDone <- err
						return
					}
					next++
				}
				setDone <- nil
			}()
			select {
			case err := <-setDone:
				require.NoError(t, err, "the Set whose rebuild Close waited for")
			case <-time.After(15 * time.Second):
				t.Fatal("the Set is stuck (Close during its rebuild)")
			}
			require.True(t, started, "no rebuild reached the hook: the attack needs the estimate too large")
			select {
			case err := <-closed:
				require.NoError(t, err)
			case <-time.After(15 * time.Second):
				t.Fatal("Close is stuck")
			}
			require.Nil(t, s.filter.Load())
			_, err := s.Get(keyN(450))
			require.ErrorIs(t, err, ErrClosed)
			require.ErrorIs(t, s.Set("x", []byte("v")), ErrClosed)
		})
	}
}
