// Adversary round 58: the index pass as sorted sstables (b021886,
// store/indexbuild.go, Store.indexAll).
//
// Run:
//
//	go test -count 1 -timeout 10m -run Adv58 ./store/
package store

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// adv58Model is what per-record indexing of the table's values gives:
// key -> entry.
type adv58Model map[string]Entry

func adv58Key(rng *rand.Rand, n int) string {
	i := rng.IntN(n)
	switch i % 7 {
	case 0:
		return fmt.Sprintf("k%04d", i)
	case 1:
		return fmt.Sprintf("k%04d\x00tail", i) // a NUL inside: sorts before "k0001" + anything longer
	case 2:
		return fmt.Sprintf("\xff\xfe%04d", i)
	case 3:
		return strings.Repeat("x", 200) + strconv.Itoa(i) // long keys fill runs quickly
	case 4:
		return fmt.Sprintf("k%04d", i/7) // a prefix of case 1's keys
	case 5:
		return string([]byte{byte(i), byte(i >> 8)})
	default:
		return fmt.Sprintf("\x00%d", i)
	}
}

func adv58Due(rng *rand.Rand) (int64, bool) {
	switch rng.IntN(10) {
	case 0:
		return 0, false
	case 1:
		return math.MinInt64 + int64(rng.IntN(3)), true
	case 2:
		return math.MaxInt64 - int64(rng.IntN(3)), true
	case 3:
		return -int64(rng.IntN(1000)) * int64(time.Second), true // before 1970
	default:
		return t0.Add(time.Duration(rng.IntN(50)) * time.Second).UnixNano(), true // many share a time
	}
}

func adv58Bucket(rng *rand.Rand) string {
	switch rng.IntN(6) {
	case 0, 1:
		return ""
	case 2:
		return "b"
	case 3:
		return "b\x00" // shares a prefix with "b", the length tells them apart
	case 4:
		return strings.Repeat("B", 130) // a two-byte uvarint length
	default:
		return "\xff"
	}
}

func adv58Val(due int64, hasDue bool, bucket string) []byte {
	d := ""
	if hasDue {
		d = strconv.FormatInt(due, 10)
	}
	return []byte(d + "|" + bucket + "|payload")
}

// adv58Expect returns the due entries (sorted as the index sorts them) and
// the bucket listings the model gives.
func adv58Expect(m adv58Model) ([]Due, map[string][]string) {
	var due []Due
	buckets := map[string][]string{}
	for k, e := range m {
		if !e.Due.IsZero() {
			due = append(due, Due{At: decTime(encTime(nanos(e.Due))), Key: k})
		}
		if e.Bucket != "" {
			buckets[e.Bucket] = append(buckets[e.Bucket], k)
		}
	}
	sort.Slice(due, func(i, j int) bool {
		a, b := nanos(due[i].At), nanos(due[j].At)
		if a != b {
			return a < b
		}
		return due[i].Key < due[j].Key
	})
	for _, ks := range buckets {
		sort.Strings(ks)
	}
	return due, buckets
}

// adv58Check compares the store's indexes with the model: every due entry
// through DueUpTo (in pages with cursors, and in one call), every bucket
// listing, and consistency.
func adv58Check(t *testing.T, s *Store, m adv58Model, rng *rand.Rand, msg string) {
	t.Helper()
	wantDue, wantBuckets := adv58Expect(m)
	all, err := s.DueUpTo(maxTime, Due{}, 0)
	require.NoError(t, err)
	if len(wantDue) == 0 {
		require.Empty(t, all, msg)
	} else {
		require.Equal(t, wantDue, all, msg)
	}
	// Pages with cursors, from the start (the floor's path) each time.
	for _, limit := range []int{1, 1 + rng.IntN(5), 64} {
		var got []Due
		after := Due{}
		for {
			page, err := s.DueUpTo(maxTime, after, limit)
			require.NoError(t, err)
			got = append(got, page...)
			if len(page) < limit {
				break
			}
			after = page[len(page)-1]
		}
		require.Equal(t, len(wantDue), len(got), "%s: paging by %d", msg, limit)
		if len(wantDue) > 0 {
			require.Equal(t, wantDue, got, "%s: paging by %d", msg, limit)
		}
	}
	// Bounded scans from the start: what an advance to T sees.
	for range 5 {
		upTo := t0.Add(time.Duration(rng.IntN(60)) * time.Second)
		got, err := s.DueUpTo(upTo, Due{}, 0)
		require.NoError(t, err)
		var want []Due
		for _, d := range wantDue {
			if nanos(d.At) <= nanos(upTo) {
				want = append(want, d)
			}
		}
		require.Equal(t, len(want), len(got), "%s: up to %v", msg, upTo)
		if len(want) > 0 {
			require.Equal(t, want, got, "%s: up to %v", msg, upTo)
		}
	}
	for b, want := range wantBuckets {
		got, err := s.BucketKeys(b, "", 0)
		require.NoError(t, err)
		require.Equal(t, want, got, "%s: bucket %q", msg, b)
	}
	checkConsistent(t, s)
	_, err = s.fs().Stat(s.fs().PathJoin(s.dir, indexBuildDir))
	require.True(t, os.IsNotExist(err), "%s: the build's files are left: %v", msg, err)
}

func adv58RunBytes(t *testing.T, n int) {
	old := indexBuildRunBytes
	indexBuildRunBytes = n
	t.Cleanup(func() { indexBuildRunBytes = old })
}

// TestAdv58RebuildEqualsPerRecordIndexing (held): random Sets, Deletes
// and ApplyMoves (which the rebuild undoes: it derives the entries from
// the values), odd keys (NUL and 0xff bytes, prefixes of one another, 200
// bytes), due times at the int64 ends and before 1970, buckets that are
// prefixes of one another; then RebuildIndexes with runs from one entry
// each to all in one. The rebuilt indexes equal the model's per-record
// entries through DueUpTo (pages with cursors, bounded scans: the floor)
// and BucketKeys, before and after a reopen, and after more writes; the
// raw index keys and reverse values equal those an incremental store
// wrote for the same values.
//
//	go test -count 1 -run TestAdv58RebuildEqualsPerRecordIndexing ./store/
func TestAdv58RebuildEqualsPerRecordIndexing(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		rng := rand.New(rand.NewPCG(seed, 58))
		adv58RunBytes(t, []int{1, 17, 300, 4 << 10, 64 << 10, 8 << 20}[seed%6])
		s := newMemStore(t, Options{Indexer: testIndexer})
		m := adv58Model{}
		nKeys := 50 + rng.IntN(1500)
		for range 200 + rng.IntN(3000) {
			k := adv58Key(rng, nKeys)
			switch r := rng.IntN(10); {
			case r == 0:
				require.NoError(t, s.Delete(k))
				delete(m, k)
			case r == 1 && len(m) > 0:
				// A move the rebuild does not keep: the entries come from
				// the values again.
				require.NoError(t, s.ApplyMoves([]Move{{Key: k, To: at(rng.IntN(50))}}, at(1)))
			default:
				due, has := adv58Due(rng)
				b := adv58Bucket(rng)
				v := adv58Val(due, has, b)
				require.NoError(t, s.Set(k, v))
				e, err := testIndexer(nil, k, v)
				require.NoError(t, err)
				m[k] = e
			}
		}
		// An incremental store with the final values, for the raw keys.
		inc := newMemStore(t, Options{Indexer: testIndexer})
		for k, e := range m {
			var d int64
			if !e.Due.IsZero() {
				d = e.Due.UnixNano()
			}
			require.NoError(t, inc.Set(k, adv58Val(d, !e.Due.IsZero(), e.Bucket)))
		}
		// A scan before the rebuild raises the floor.
		_, err := s.DueUpTo(at(20), Due{}, 3)
		require.NoError(t, err)
		require.NoError(t, s.RebuildIndexes(at(5)))
		msg := fmt.Sprintf("seed %d, run bytes %d, %d records", seed, indexBuildRunBytes, len(m))
		adv58Check(t, s, m, rng, msg)
		for _, p := range []byte{prefixDue, prefixReverse, prefixBucket} {
			require.Equal(t, rawScan(t, inc, p), rawScan(t, s, p), "%s: raw %c entries", msg, p)
		}
		s = reopen(t, s)
		adv58Check(t, s, m, rng, msg+" (reopened)")
		// More writes on the rebuilt index: it moves, adds and drops
		// entries below and above what the rebuild found.
		for range 300 {
			k := adv58Key(rng, nKeys)
			if rng.IntN(5) == 0 {
				require.NoError(t, s.Delete(k))
				delete(m, k)
				continue
			}
			due, has := adv58Due(rng)
			v := adv58Val(due, has, adv58Bucket(rng))
			require.NoError(t, s.Set(k, v))
			e, _ := testIndexer(nil, k, v)
			m[k] = e
		}
		adv58Check(t, s, m, rng, msg+" (after writes)")
	}
}

// TestAdv58DeferredRecoveryFloor (held): a store that defers its indexes
// (an empty-disk recovery) is scanned while it recovers (the advance that
// found nothing raises the floor to its upper bound), then MarkRecovered
// ingests entries below that floor. DueUpTo from the start must find them
// (s.floor reset by indexAll), and so must every later scan.
//
//	go test -count 1 -run TestAdv58DeferredRecoveryFloor ./store/
func TestAdv58DeferredRecoveryFloor(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, 580))
		adv58RunBytes(t, []int{1, 64, 2 << 10, 8 << 20}[seed%4])
		s := newMemStore(t, Options{Indexer: testIndexer, DeferIndexOnRecovery: true})
		require.True(t, s.deferIndex)
		m := adv58Model{}
		for range 100 + rng.IntN(1500) {
			k := adv58Key(rng, 400)
			if rng.IntN(6) == 0 {
				require.NoError(t, s.Delete(k))
				delete(m, k)
				continue
			}
			due, has := adv58Due(rng)
			v := adv58Val(due, has, adv58Bucket(rng))
			require.NoError(t, s.Set(k, v))
			e, _ := testIndexer(nil, k, v)
			m[k] = e
			if rng.IntN(50) == 0 {
				// a scan during the recovery: nothing indexed yet
				got, err := s.DueUpTo(at(100), Due{}, 10)
				require.NoError(t, err)
				require.Empty(t, got)
			}
		}
		got, err := s.DueUpTo(maxTime, Due{}, 0)
		require.NoError(t, err)
		require.Empty(t, got)
		require.NoError(t, s.MarkRecovered())
		adv58Check(t, s, m, rng, fmt.Sprintf("seed %d", seed))
	}
}

// adv58FS wraps a MemFS: hook runs before each operation (name: the
// operation and its path).
type adv58FS struct {
	vfs.FS
	// hook is read by Pebble's goroutines while the test sets it: set it
	// with setHook.
	hook atomic.Pointer[func(op, path string) error]
}

// setHook sets the hook (nil: none).
func (f *adv58FS) setHook(h func(op, path string) error) {
	if h == nil {
		f.hook.Store(nil)
		return
	}
	f.hook.Store(&h)
}

func (f *adv58FS) call(op, path string) error {
	if h := f.hook.Load(); h != nil {
		return (*h)(op, path)
	}
	return nil
}

func (f *adv58FS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if err := f.call("create", name); err != nil {
		return nil, err
	}
	return f.FS.Create(name, c)
}

func (f *adv58FS) Link(oldname, newname string) error {
	if err := f.call("link", oldname); err != nil {
		return err
	}
	return f.FS.Link(oldname, newname)
}

func (f *adv58FS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	if err := f.call("open", name); err != nil {
		return nil, err
	}
	return f.FS.Open(name, opts...)
}

func (f *adv58FS) Remove(name string) error {
	if err := f.call("remove", name); err != nil {
		return err
	}
	return f.FS.Remove(name)
}

func (f *adv58FS) RemoveAll(name string) error {
	if err := f.call("removeall", name); err != nil {
		return err
	}
	return f.FS.RemoveAll(name)
}

func (f *adv58FS) Rename(oldname, newname string) error {
	if err := f.call("rename", oldname); err != nil {
		return err
	}
	return f.FS.Rename(oldname, newname)
}

func (f *adv58FS) OpenDir(name string) (vfs.File, error) {
	if err := f.call("opendir", name); err != nil {
		return nil, err
	}
	return f.FS.OpenDir(name)
}

// adv58Fill writes n records of random values to s and returns the model.
func adv58Fill(t *testing.T, s *Store, rng *rand.Rand, n int) adv58Model {
	m := adv58Model{}
	for i := range n {
		k := fmt.Sprintf("job-%05d", i)
		due, has := t0.Add(time.Duration(rng.IntN(100))*time.Second).UnixNano(), rng.IntN(8) > 0
		v := adv58Val(due, has, adv58Bucket(rng))
		require.NoError(t, s.Set(k, v))
		e, _ := testIndexer(nil, k, v)
		m[k] = e
	}
	return m
}

// TestAdv58CrashDuringIngest (held): "a crash at any point during the
// rebuild is redone at the next Open". A deferred recovery's
// MarkRecovered with small runs (many ingests) on a crashable MemFS; a
// crash clone (a random share of unsynced data kept) is taken at the k-th
// file-system operation after the first build file is created: during the
// runs' writes, between ingests, during the removal of the build
// directory, before the final commit. The store opened on the clone holds
// the whole table and indexes equal to the model, and no build files.
//
//	go test -count 1 -run TestAdv58CrashDuringIngest ./store/
func TestAdv58CrashDuringIngest(t *testing.T) {
	adv58RunBytes(t, 600)
	crashes, partial := 0, 0
	defer func() { t.Logf("%d crashes inside the build, %d with a partial table", crashes, partial) }()
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 581))
		mem := vfs.NewCrashableMem()
		guard := newCloneGuard(mem) // the hook clones on Pebble's goroutines too
		fs := &adv58FS{FS: guard}
		opts := Options{FS: fs, Indexer: testIndexer, Logger: quiet, DeferIndexOnRecovery: true}
		s := New("/db", opts)
		require.NoError(t, s.Open())
		m := adv58Fill(t, s, rng, 300)
		// Count the operations first (a dry run on a copy is not possible:
		// pick k at random among a generous bound, and skip seeds whose k
		// falls after the end).
		k := 1 + rng.IntN(150)
		var n atomic.Int64
		var clone *vfs.MemFS
		var hookMu sync.Mutex // the hook runs on the ingest's and the compactions' goroutines
		armed := false
		unsynced := rng.IntN(101)
		fs.setHook(func(op, path string) error {
			hookMu.Lock()
			defer hookMu.Unlock()
			if strings.Contains(path, indexBuildDir) {
				armed = true
			}
			if armed && clone == nil && n.Add(1) == int64(k) {
				clone = guard.crashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: unsynced, RNG: rand.New(rand.NewPCG(seed, 1))})
			}
			return nil
		})
		require.NoError(t, s.MarkRecovered())
		fs.setHook(nil)
		require.NoError(t, s.Close())
		if clone == nil {
			continue
		}
		crashes++
		s2 := New("/db", Options{FS: clone, Indexer: testIndexer, Logger: quiet, DeferIndexOnRecovery: true})
		require.NoError(t, s2.Open(), "seed %d, crash at op %d", seed, k)
		msg := fmt.Sprintf("seed %d, crash at op %d", seed, k)
		if len(tableState(t, s2)) == len(m) {
			adv58Check(t, s2, m, rng, msg)
		} else {
			// The clone lost unsynced table writes (the recovery's batch is
			// not synced): what it holds must still be indexed fully.
			partial++
			mm := adv58Model{}
			for k, v := range tableState(t, s2) {
				e, _ := testIndexer(nil, k, []byte(v))
				mm[k] = e
			}
			if s2.deferIndex {
				// still a fresh recovery: MarkRecovered builds
				require.NoError(t, s2.MarkRecovered())
			}
			adv58Check(t, s2, mm, rng, msg+" (partial table)")
		}
		require.NoError(t, s2.Close())
	}
}

// TestAdv58BuildDirGoneAfterCrash: "no build files (index-build.tmp
// inside the store dir) are left". The rebuild removes its directory
// (RemoveAll) and then commits the end of the rebuild with Sync, but
// never syncs the store's directory after the removal. Pebble synced
// that directory during the ingest (after linking the runs), so the
// build directory's entry is durable while its removal is not: a crash
// (power loss) right after a successful MarkRecovered, with every synced
// byte kept (UnsyncedDataPercent 0), leaves /db/index-build.tmp; the next
// Open finds the rebuild finished (no mark) and never removes it.
// Fixed: indexBuild.close syncs the store's directory after the removal.
//
//	go test -count 1 -run TestAdv58BuildDirGoneAfterCrash ./store/
func TestAdv58BuildDirGoneAfterCrash(t *testing.T) {
	adv58RunBytes(t, 600)
	mem := vfs.NewCrashableMem()
	s := New("/db", Options{FS: mem, Indexer: testIndexer, Logger: quiet, DeferIndexOnRecovery: true})
	require.NoError(t, s.Open())
	m := adv58Fill(t, s, rand.New(rand.NewPCG(1, 2)), 500)
	require.NoError(t, s.MarkRecovered())
	_, err := mem.Stat("/db/" + indexBuildDir)
	require.True(t, os.IsNotExist(err), "before the crash: %v", err)
	clone := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	require.NoError(t, s.Close())

	s2 := New("/db", Options{FS: clone, Indexer: testIndexer, Logger: quiet, DeferIndexOnRecovery: true})
	require.NoError(t, s2.Open())
	defer s2.Close()
	require.Len(t, tableState(t, s2), len(m), "the recovery's table (synced by the rebuild's end)")
	_, err = clone.Stat("/db/" + indexBuildDir)
	if err == nil {
		names, _ := clone.List("/db/" + indexBuildDir)
		t.Logf("left in /db/%s: %v", indexBuildDir, names)
	}
	require.True(t, os.IsNotExist(err), "after a crash following a finished rebuild, and an Open, the build directory is left: %v", err)
}

// TestAdv58FailedIngestLeavesFloorAbove: "the due floor (s.floor) stays
// correct so DueUpTo never misses an entry". indexAll resets the floor
// only after every run is ingested; the old pass lowered it with each
// entry it wrote (Store.updateIndex). A deferred store scanned while it
// recovers has its floor at the scan's upper bound (nothing indexed yet);
// MarkRecovered then ingests run 1 (entries far below that floor) and
// the ingest of run 2 fails (an I/O error opening its file). The store
// stays open (the error is not fatal); the index now holds run 1's
// entries, which a raw scan sees, but DueUpTo from the start begins at
// the stale floor and returns none of them. The same holds for a live
// RebuildIndexes (ensureIndex: a watermark behind, due times recomputed
// lower than the old floor) failing after its first run. Low severity:
// the metaRebuilding mark and the old IndexedUpTo stay, so a reopen or
// the next ensureIndex rebuilds again and resets the floor; the miss lasts
// only while the store keeps serving scans after the failure. Sure it
// reproduces; a fix is resetting the floor (seq++, key=nil) before the
// first Ingest, or on any exit of indexAll. Fixed: indexAll resets it
// before its first ingest.
//
//	go test -count 1 -run TestAdv58FailedIngestLeavesFloorAbove ./store/
func TestAdv58FailedIngestLeavesFloorAbove(t *testing.T) {
	adv58RunBytes(t, 600)
	mem := vfs.NewMem()
	fs := &adv58FS{FS: mem}
	s := New("/db", Options{FS: fs, Indexer: testIndexer, Logger: quiet, DeferIndexOnRecovery: true})
	require.NoError(t, s.Open())
	t.Cleanup(func() { _ = s.Close() })
	adv58Fill(t, s, rand.New(rand.NewPCG(3, 4)), 300)
	// An advance to at(1000) while the store recovers: nothing indexed,
	// the floor goes to the scan's upper bound.
	got, err := s.DueUpTo(at(1000), Due{}, 0)
	require.NoError(t, err)
	require.Empty(t, got)

	var opened sync.Map
	fs.setHook(func(op, path string) error {
		if (op == "open" || op == "link") && strings.Contains(path, indexBuildDir) && strings.HasSuffix(path, ".sst") {
			// the first run (and the reverse file) ingest; the next fails
			opened.Store(path, true)
			n := 0
			opened.Range(func(any, any) bool { n++; return true })
			if n > 3 {
				return errors.New("injected: I/O error")
			}
		}
		return nil
	})
	err = s.MarkRecovered()
	fs.setHook(nil)
	require.Error(t, err, "the injected failure")
	t.Logf("MarkRecovered: %v", err)
	raw := rawScan(t, s, prefixDue)
	if len(raw) == 0 {
		t.Skip("no run was ingested before the failure")
	}
	got, err = s.DueUpTo(maxTime, Due{}, 0)
	require.NoError(t, err)
	require.Len(t, got, len(raw), "DueUpTo from the start misses due entries the index holds (the floor stayed at %x)", s.floor.key)
}

// TestAdv58ConcurrentReadersDuringRebuild (held; run with -race):
// DueUpTo (with cursors), BucketKeys, Get and Sets run while
// RebuildIndexes builds many runs; no error, no race, and afterwards the
// indexes equal the model of the final values.
//
//	go test -race -count 1 -run TestAdv58ConcurrentReadersDuringRebuild ./store/
func TestAdv58ConcurrentReadersDuringRebuild(t *testing.T) {
	adv58RunBytes(t, 300)
	s := newMemStore(t, Options{Indexer: testIndexer})
	rng := rand.New(rand.NewPCG(5, 8))
	m := adv58Fill(t, s, rng, 1500)
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rr := rand.New(rand.NewPCG(uint64(r), 9))
			after := Due{}
			for {
				select {
				case <-stop:
					return
				default:
				}
				switch rr.IntN(3) {
				case 0:
					page, err := s.DueUpTo(maxTime, after, 7)
					if err != nil {
						t.Error(err)
						return
					}
					if len(page) < 7 {
						after = Due{}
					} else {
						after = page[len(page)-1]
					}
				case 1:
					if _, err := s.BucketKeys("b", "", 5); err != nil {
						t.Error(err)
						return
					}
				default:
					if _, err := s.Get(fmt.Sprintf("job-%05d", rr.IntN(1500))); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		wr := rand.New(rand.NewPCG(7, 7))
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			k := fmt.Sprintf("job-%05d", wr.IntN(1600))
			v := adv58Val(at(wr.IntN(100)).UnixNano(), true, adv58Bucket(wr))
			mu.Lock()
			err := s.Set(k, v)
			if err == nil {
				e, _ := testIndexer(nil, k, v)
				m[k] = e
			}
			mu.Unlock()
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 5 {
		require.NoError(t, s.RebuildIndexes(at(1)))
	}
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	adv58Check(t, s, m, rng, "after concurrent rebuilds")
	_ = bytes.Compare
}
