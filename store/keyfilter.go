package store

import (
	"hash/maphash"
	"math/bits"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// A point read of a key that is not in the table looks through every
// level of Pebble (memtables, each file of level 0 that spans the key, one
// file a level below): at registration every put reads a new job's record
// twice this way, once in the scheduler's table and once in the history
// group's, 9 and 5 µs of the ~30 µs each group spends on a put (a CPU
// profile of a 1M registration, 2026-12-05). A store with
// Options.KeyFilter keeps a Bloom filter of its table's keys in memory and
// answers such a read, and the reverse-entry read of the Set that writes
// the new key, without Pebble.
//
// The filter never forgets a key (a deleted key stays in it: its reads go
// to Pebble as before), so it can only be wrong one way, "maybe there",
// which Pebble then answers. Every key enters it before Pebble has it:
// Set adds its key, with wmu held, before writing, and the filter is
// built, with wmu held, from the table after the recovery (MarkRecovered)
// and again, at twice the table's size, when it fills with new keys or
// has seen as many deletions as it has room for; until it is built, and
// during a rebuild, Get goes to Pebble.

const (
	// filterBitsPerKey and filterProbes give about 1% false positives at
	// the filter's capacity (a blocked filter: every probe of a key in one
	// 512-bit block, one cache line).
	filterBitsPerKey = 10
	filterProbes     = 7
	// filterMinKeys is the smallest capacity a filter is built with
	// (Store.filterMin; the package's tests lower it).
	filterMinKeys = 1 << 15
)

var filterSeed = maphash.MakeSeed()

// keyFilter is a Bloom filter of table keys. mayContain is safe for
// concurrent use with add; add and the counts are guarded by Store.wmu.
type keyFilter struct {
	words  []atomic.Uint64 // blocks of 8
	blocks uint64
	keys   int // keys added that set a bit (about the distinct keys)
	limit  int // capacity: past it the filter is rebuilt larger
	// deletes counts the table's deletions since the build: past limit
	// the filter is rebuilt from the table, which may have shrunk.
	deletes int
}

func newKeyFilter(capacity, least int) *keyFilter {
	capacity = max(capacity, least, 1)
	blocks := (uint64(capacity)*filterBitsPerKey + 511) / 512
	return &keyFilter{words: make([]atomic.Uint64, blocks*8), blocks: blocks, limit: capacity}
}

func filterHash(key string) uint64 { return maphash.String(filterSeed, key) }

// probe calls fn with the word index and bit of each probe of hash h,
// until fn returns false (probe then returns false).
func (f *keyFilter) probe(h uint64, fn func(w int, bit uint64) bool) bool {
	block, _ := bits.Mul64(h, f.blocks)
	h2 := h*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	for range filterProbes {
		i := h2 & 511
		if !fn(int(block*8+i>>6), 1<<(i&63)) {
			return false
		}
		h2 >>= 9
	}
	return true
}

// add adds key hash h; it reports whether a bit was set that was not.
func (f *keyFilter) add(h uint64) bool {
	added := false
	f.probe(h, func(w int, bit uint64) bool {
		if f.words[w].Load()&bit == 0 {
			f.words[w].Or(bit)
			added = true
		}
		return true
	})
	if added {
		f.keys++
	}
	return added
}

// mayContain reports whether key hash h may have been added.
func (f *keyFilter) mayContain(h uint64) bool {
	return f.probe(h, func(w int, bit uint64) bool { return f.words[w].Load()&bit != 0 })
}

// filterAbsent reports whether the table certainly lacks key (false: it
// may hold it, or the store has no filter yet).
func (s *Store) filterAbsent(key string) bool {
	f := s.filter.Load()
	if f == nil || f.mayContain(filterHash(key)) {
		return false
	}
	s.filterHits.Add(1)
	return true
}

// filterAddLocked adds key to the filter before a Set writes it, building
// a new one from the table when it is full: twice the size of the table,
// not of the keys it saw (deleted keys stay in a filter until a rebuild:
// sized by those, one-shot jobs' churn doubled it at every rebuild,
// adversary round 46). The caller holds s.mu (read) and s.wmu. A filter
// that cannot be rebuilt is dropped (reads go to Pebble); the write goes
// on.
func (s *Store) filterAddLocked(key string) {
	f := s.filter.Load()
	if f == nil {
		return
	}
	if f.add(filterHash(key)); f.keys <= f.limit {
		return
	}
	// The key that filled it is not written yet: the table has one less.
	if s.rebuildFilterLocked(int64(max(f.keys-1-f.deletes, 0))) {
		s.filter.Load().add(filterHash(key))
	}
}

// filterDeleteLocked counts a deletion of a table key; once the filter has
// seen as many as it has room for, it is rebuilt from the table, so that a
// table that shrank (a burst of one-shot jobs fired and purged) does not
// keep the filter of its largest size (adversary round 46b). The caller
// holds s.mu (read) and s.wmu.
func (s *Store) filterDeleteLocked() {
	f := s.filter.Load()
	if f == nil {
		return
	}
	if f.deletes++; f.deletes > f.limit {
		s.rebuildFilterLocked(-1)
	}
}

// rebuildFilterLocked replaces the filter by one built from the table at
// twice its size, and reports whether it did. keys is an estimate of the
// table's keys (buildFilterSizedLocked; -1: count them). A filter that
// filled with new keys passes the keys it saw less the deletions it saw:
// the table holds no key its filter did not see, so the rebuild reads the
// table once, not twice (a 10M registration's CPU profile on 2026-12-07
// had 10% of the process in rebuilds, the counting pass 4%). The keys it
// saw alone overstated a table of one-shot jobs fired and purged, and
// every such growth read the table three times, or made a filter twice
// the largest the store had for a table of a hundred keys (adversary
// round 65). After deletions past its room the table may have shrunk by
// any amount, so it is counted. The old filter goes first,
// so that the two are never held at once (the peak was 30 bits a key,
// adversary round 46b): reads go to Pebble meanwhile, and no Set runs (the
// caller holds s.wmu). A filter that cannot be rebuilt stays dropped.
func (s *Store) rebuildFilterLocked(keys int64) bool {
	s.filter.Store(nil)
	if err := s.buildFilterSizedLocked(true, keys); err != nil {
		s.logf("store %s: rebuilding the key filter: %v (reads of absent keys go to Pebble)", s.dir, err)
		return false
	}
	return true
}

// buildFilterLocked builds the filter from the table's keys, with room
// for a quarter more than the table holds (grow: twice as many), in two
// passes over the keys (counting, then adding: collecting the hashes
// first took 27 times the filter's memory at its peak, adversary round
// 46). The caller holds s.mu (read) and s.wmu: no Set runs meanwhile, and
// the old filter, complete until the new one replaces it, keeps answering
// readers.
func (s *Store) buildFilterLocked(grow bool) error {
	return s.buildFilterSizedLocked(grow, -1)
}

// buildFilterSizedLocked is buildFilterLocked sized for keys keys
// instead of by a counting pass (-1: count them). It counts the keys as
// it adds them, and builds again by count if keys was too few for them
// or more than four times too many (a changelog that wrote its keys
// several times over), so the filter is never smaller than the table
// needs and at most four times larger.
func (s *Store) buildFilterSizedLocked(grow bool, keys int64) error {
	if err := s.commitPendingLocked(); err != nil {
		return err
	}
	n := keys
	if n < 0 {
		if s.onFilterCount != nil {
			s.onFilterCount()
		}
		var err error
		if n, err = s.count(prefixTable); err != nil {
			return err
		}
	}
	return s.fillFilterLocked(grow, n, keys >= 0)
}

// fillFilterLocked builds a filter sized for keys keys in one pass over
// the table (guessed: keys is an estimate, which finishFilterLocked
// checks against the keys the pass met).
func (s *Store) fillFilterLocked(grow bool, keys int64, guessed bool) error {
	b := s.newFilterBuild(grow, keys, guessed)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixTable}, UpperBound: []byte{prefixTable + 1}})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		b.add(it.Key()[1:])
	}
	if err := it.Close(); err != nil {
		return err
	}
	return s.finishFilterLocked(b)
}

// filterBuild is a key filter being filled by a pass over the table: its
// own (buildFilterSizedLocked), or the index pass at the end of a
// recovery (endRecovery), which reads every key anyway.
type filterBuild struct {
	f       *keyFilter
	grow    bool
	keys    int64 // the keys it was sized for
	guessed bool  // sized by an estimate: finishFilterLocked checks it
	counted int64 // keys added
}

// newFilterBuild allocates a filter with room for a quarter more than
// keys (grow: twice as many).
func (s *Store) newFilterBuild(grow bool, keys int64, guessed bool) *filterBuild {
	capacity := keys + keys/4
	if grow {
		capacity = 2 * keys
	}
	f := newKeyFilter(int(capacity), s.filterMin)
	if s.onFilterAlloc != nil {
		s.onFilterAlloc(f)
	}
	return &filterBuild{f: f, grow: grow, keys: keys, guessed: guessed}
}

func (b *filterBuild) add(key []byte) {
	b.f.add(maphash.Bytes(filterSeed, key))
	b.counted++
}

// finishFilterLocked puts a filled filter in place, or, if it was sized
// by an estimate too small for the keys it met or too large for them
// (more than four times; a growth's, at all), builds one sized by the
// keys the pass met: no Set ran meanwhile, so that is the table's count,
// and no counting pass is needed. The caller holds s.mu (read) and s.wmu,
// held since the pass began.
func (s *Store) finishFilterLocked(b *filterBuild) error {
	short := b.counted > b.keys
	large := b.f.limit > 4*max(int(b.counted+b.counted/4), s.filterMin)
	if b.grow {
		// A growing filter's estimate is the keys its predecessor saw less
		// the deletions it saw. That misses the few new keys whose bits
		// were all set already (~1% at capacity): up to an eighth more
		// still leaves it room (twice the estimate). A deleted key put
		// again, or a deletion of a key the table did not hold, makes it
		// smaller than the table; it is never larger but for a Set whose
		// write failed. Short by more than that eighth, or larger at all,
		// the filter is built again by the count, so a growth leaves room
		// for 1.8 to 2 times the table.
		short = b.counted > b.keys+b.keys/8
		large = b.f.limit > max(2*int(b.counted), s.filterMin)
	}
	if b.guessed && (short || large) {
		grow, n := b.grow, b.counted
		b.f = nil // gone before the next is made: never two at once
		if err := s.commitPendingLocked(); err != nil {
			return err
		}
		return s.fillFilterLocked(grow, n, false)
	}
	s.filter.Store(b.f)
	return nil
}

// buildFilter builds the filter once the store has recovered
// (Options.KeyFilter). A store that was empty at Open and recovered from
// the changelog holds no key its recovery did not write, so the filter is
// sized by the recovery's writes, in one pass over the table instead of
// two (a build at the end of a recovery read the table's keys twice:
// 1.07-1.70 s for a store of 833,000 jobs, the counting pass 0.47 s).
func (s *Store) buildFilter() error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.buildFilterSizedLocked(false, s.recoverySets)
}
