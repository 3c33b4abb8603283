package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Due is one due-index entry.
type Due struct {
	At  time.Time
	Key string
}

// NotAfter reports whether d comes at or before o in the due index's order
// (time, then key; times outside what int64 nanoseconds hold are clamped,
// as the index clamps them).
func (d Due) NotAfter(o Due) bool {
	if a, b := nanos(d.At), nanos(o.At); a != b {
		return a < b
	}
	return d.Key <= o.Key
}

// Move sets the due entry of Key to To; zero To removes it.
//
// From, when set, says what the caller already read: Key's due entry is at
// From (as DueUpTo returned it) and its bucket entry is Bucket ("": none),
// and Key is in the table. ApplyMoves then writes the move without looking
// Key's reverse entry up. The caller must hold the store's single writer
// (goka's partition callback) between that read and ApplyMoves, so nothing
// changed the entry in between. Zero From: ApplyMoves looks it up, and
// skips a key that is not in the table.
type Move struct {
	Key    string
	To     time.Time
	From   time.Time
	Bucket string
}

// Stats are simple counts for metrics.
type Stats struct {
	Records    int64 // table records
	DueEntries int64 // due-index entries
}

// getRev returns the key's reverse entry (zero rev if none).
func (s *Store) getRev(key string) (rev, error) {
	v, err := s.getRaw(reverseKey(key))
	if err != nil {
		return rev{}, fmt.Errorf("store: reading reverse entry of %q: %w", key, err)
	}
	if v == nil {
		return rev{}, nil
	}
	r, err := decodeRev(v)
	if err != nil {
		return rev{}, fmt.Errorf("%w (key %q)", err, key)
	}
	return r, nil
}

// dueFloor is a due key no due entry sorts below (nil: not known), and a
// count of the due keys written (seq), both guarded by Store.wmu. Deleted
// due entries stay in Pebble as tombstones until a compaction drops them;
// a scan from the start of the index (every new advance pass, and each
// continuation of a pass that must start there) stepped over all of them:
// in a 1M-job burst most of the scan's CPU. A scan that started at or
// below the floor raises it to the first entry it found, unless a due key
// was written meanwhile; every due key written lowers it.
type dueFloor struct {
	key []byte
	seq uint64
}

// updateIndex is the package's updateIndex that also keeps s.floor; the
// caller holds s.wmu.
func (s *Store) updateIndex(b batchWriter, buf []byte, key string, old, nu rev, gone bool) ([]byte, error) {
	if nu.hasDue && (gone || !old.hasDue || nu.due != old.due) {
		s.floor.seq++
		if s.floor.key != nil {
			if k := dueKey(nu.due, key); bytes.Compare(k, s.floor.key) < 0 {
				s.floor.key = k
			}
		}
	}
	return updateIndex(b, buf, key, old, nu, gone)
}

// batchWriter is where updateIndex adds its operations: a *pebble.Batch,
// or addMoves's reverseAfter.
type batchWriter interface {
	Set(key, value []byte, _ *pebble.WriteOptions) error
	Delete(key []byte, _ *pebble.WriteOptions) error
}

// reverseAfter adds operations to b, except those of reverse entries, which
// it keeps in rev for the caller to add after b's others. A large batch of
// moves is sorted by Pebble before it is applied (a batch of more than
// half a memtable becomes a memtable of its own: a burst's chunk of 25,000
// moves); written in key order, due entries first, reverse entries last,
// it is sorted already, and the sort only checks it.
type reverseAfter struct{ b, rev *pebble.Batch }

func (w reverseAfter) Set(key, value []byte, o *pebble.WriteOptions) error {
	if key[0] == prefixReverse {
		return w.rev.Set(key, value, o)
	}
	return w.b.Set(key, value, o)
}

func (w reverseAfter) Delete(key []byte, o *pebble.WriteOptions) error {
	if key[0] == prefixReverse {
		return w.rev.Delete(key, o)
	}
	return w.b.Delete(key, o)
}

// updateIndex adds to b the operations that change key's index entries from
// old to nu (including the reverse entry); gone: old's due entry is
// already removed, so it is not deleted and nu's is written even at the
// same time. buf is scratch space (the batch copies keys and values),
// returned for reuse.
func updateIndex(b batchWriter, buf []byte, key string, old, nu rev, gone bool) ([]byte, error) {
	if old == nu && !gone {
		return buf, nil
	}
	var err error
	set := func(k, v []byte) {
		if err == nil {
			err = b.Set(k, v, nil)
		}
	}
	del := func(k []byte) {
		if err == nil {
			err = b.Delete(k, nil)
		}
	}
	if !gone && old.hasDue && (!nu.hasDue || nu.due != old.due) {
		buf = appendDueKey(buf[:0], old.due, key)
		del(buf)
	}
	if nu.hasDue && (gone || !old.hasDue || nu.due != old.due) {
		buf = appendDueKey(buf[:0], nu.due, key)
		set(buf, nil)
	}
	if old.hasBucket && (!nu.hasBucket || nu.bucket != old.bucket) {
		buf = append(appendBucketPrefix(buf[:0], old.bucket), key...)
		del(buf)
	}
	if nu.hasBucket && (!old.hasBucket || nu.bucket != old.bucket) {
		buf = append(appendBucketPrefix(buf[:0], nu.bucket), key...)
		set(buf, nil)
	}
	if old == nu {
		return buf, err // only the due entry, written again
	}
	buf = append(append(buf[:0], prefixReverse), key...)
	if nu.empty() {
		del(buf)
	} else {
		n := len(buf)
		buf = nu.appendEncode(buf)
		set(buf[:n], buf[n:])
	}
	return buf, err
}

// DueUpTo returns up to limit entries with At <= upTo, ordered by (At, Key),
// strictly after the cursor after (zero Due = from the start). limit <= 0
// means no limit. Returned times are UTC. A zero upTo returns nothing.
func (s *Store) DueUpTo(upTo time.Time, after Due, limit int) ([]Due, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	if upTo.IsZero() {
		return nil, nil
	}
	lower := []byte{prefixDue}
	if !after.At.IsZero() || after.Key != "" {
		var at int64
		if after.At.IsZero() {
			at = nanos(minTime)
		} else {
			at = nanos(after.At)
		}
		lower = append(dueKey(at, after.Key), 0) // smallest key > cursor
	}
	var upper []byte
	if n := nanos(upTo); n == nanos(maxTime) {
		upper = []byte{prefixDue + 1}
	} else {
		upper = dueKey(n+1, "")
	}
	s.wmu.Lock()
	floor, seq := s.floor.key, s.floor.seq
	s.wmu.Unlock()
	// fromFloor: the scan covers every entry from the floor (or, with no
	// floor known, from the start), so what it finds first is a new floor.
	fromFloor := floor == nil && len(lower) == 1 || floor != nil && bytes.Compare(lower, floor) <= 0
	if fromFloor && floor != nil {
		lower = floor
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, err
	}
	var out []Due
	if limit > 0 {
		out = make([]Due, 0, min(limit, 1024))
	}
	for ok := it.First(); ok && (limit <= 0 || len(out) < limit); ok = it.Next() {
		k := it.Key()
		if len(k) < 9 {
			return nil, errors.Join(fmt.Errorf("store: corrupt due key %x", k), it.Close())
		}
		if fromFloor && len(out) == 0 {
			s.raiseFloor(bytes.Clone(k), seq)
		}
		out = append(out, Due{At: decTime(binary.BigEndian.Uint64(k[1:9])), Key: string(k[9:])})
	}
	if fromFloor && len(out) == 0 && it.Error() == nil {
		s.raiseFloor(upper, seq) // nothing from the floor up to upper
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("store: scanning due index: %w", err)
	}
	s.flood.addOther(1 + len(out))
	return out, nil
}

// raiseFloor sets the floor to k, found by a scan that began when the
// count of due keys written was seq: unless one was written since (it may
// sort below k), or the floor is already higher.
func (s *Store) raiseFloor(k []byte, seq uint64) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.floor.seq == seq && (s.floor.key == nil || bytes.Compare(k, s.floor.key) > 0) {
		s.floor.key = k
	}
}

// ApplyMoves applies all moves in one atomic batch; each Move replaces the
// key's current due entry (its From, or found via the reverse entry) by To
// (zero = remove). Moves of keys that are not in the table are skipped (an index
// entry must always point to a table record). If a key occurs more than
// once, its last move wins. The batch also stores indexedUpTo.
func (s *Store) ApplyMoves(moves []Move, indexedUpTo time.Time) error {
	return s.applyMoves(moves, nil, indexedUpTo)
}

// ApplyScannedMoves is ApplyMoves for the moves of a span of the due index
// the caller scanned whole: its scan (DueUpTo, one or more calls, with no
// write in between) returned every entry from first through last, in the
// index's order, and moves holds one Move with From set for each of them
// (a Move without From may be among them, as in ApplyMoves). With at least
// minRangeDeletion moves, the entries of the span then go in one range
// deletion instead of a deletion each: one Pebble operation per fire
// fewer, and no tombstone per fire for the flushes and compactions to
// carry (docs/internals.md). A Move whose From lies outside the span is
// applied as by ApplyMoves. An entry of the span without a Move is
// removed: the caller's promise is what keeps it.
func (s *Store) ApplyScannedMoves(moves []Move, first, last Due, indexedUpTo time.Time) error {
	if len(moves) < s.minSpan {
		return s.applyMoves(moves, nil, indexedUpTo)
	}
	return s.applyMoves(moves, &[2]Due{first, last}, indexedUpTo)
}

// minRangeDeletion is the fewest moves ApplyScannedMoves removes with a
// range deletion. Each range deletion written to a memtable makes the
// next iterator or point read fragment every range deletion the memtable
// holds again (Pebble's memtable keeps them fragmented in a cache that a
// new one invalidates), so a range deletion per small chunk (jobs spread
// over time: one fire an advance) cost 5-120x a point deletion per fire,
// growing until the memtable flushed (adversary round 38). A memtable of
// 4 MiB holds at most a few dozen range deletions of 1,024 moves each,
// which are cheap to fragment; a burst's chunks hold up to 25,000.
const minRangeDeletion = 1024

func (s *Store) applyMoves(moves []Move, span *[2]Due, indexedUpTo time.Time) (err error) {
	defer s.recoverFatal(&err)
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	defer s.beginWrite()()
	s.flood.addOther(len(moves))
	// A move's From describes the index the caller scanned; one rebuilt
	// just now (below) may differ, so then every entry is looked up.
	trustFrom := !s.deferIndex
	if s.deferIndex {
		// Moves on an index a deferred recovery has not built yet would
		// mark a partial index current: build it first (see rebuildLocked).
		if err := s.rebuildSelfLocked(nil); err != nil {
			return fmt.Errorf("store: indexing the recovered table before moves: %w", err)
		}
	}
	b := s.db.NewBatch()
	defer b.Close()
	var lo, hi []byte // the span a range deletion removed (nil: none)
	if trustFrom && span != nil && len(moves) > 0 {
		lo = dueKey(nanos(span[0].At), span[0].Key)
		hi = append(dueKey(nanos(span[1].At), span[1].Key), 0) // just past last
		if bytes.Compare(lo, hi) >= 0 {
			lo, hi = nil, nil
		} else if err := b.DeleteRange(lo, hi, nil); err != nil {
			return err
		} else {
			s.rangeDels.Add(1)
		}
	}
	rev := s.db.NewBatch()
	defer rev.Close()
	if err := s.addMoves(reverseAfter{b, rev}, moves, trustFrom, lo, hi); err != nil {
		return err
	}
	if err := b.Set(metaKey(metaIndexedUpTo), encodeTimeMeta(indexedUpTo), nil); err != nil {
		return err
	}
	if err := b.Apply(rev, nil); err != nil {
		return err
	}
	if err := b.Commit(s.wo); err != nil {
		return fmt.Errorf("store: applying moves: %w", err)
	}
	return nil
}

// addMoves adds moves to b; a trusted From in [lo, hi) is a due entry b
// already removes with a range deletion.
func (s *Store) addMoves(b batchWriter, moves []Move, trustFrom bool, lo, hi []byte) error {
	if len(moves) == 0 {
		return nil
	}
	// Visit the moves in key order (stable, so the last move of a key comes
	// last) and look the reverse entries up with one forward iterator.
	order := make([]int32, len(moves))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(x, y int32) int { return strings.Compare(moves[x].Key, moves[y].Key) })
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixReverse}, UpperBound: []byte{prefixReverse + 1}})
	if err != nil {
		return err
	}
	defer it.Close()
	var (
		buf, rk  []byte
		prevKey  string
		prev     rev
		prevSkip bool
		havePrev bool
		gone     bool // the key's due entry went with the span, not yet written again
	)
	for _, i := range order {
		m := moves[i]
		old := prev
		if (!havePrev || m.Key != prevKey) && trustFrom && !m.From.IsZero() {
			// What the caller's scan saw: no read (the fan-out's case).
			old, prevSkip = rev{hasDue: true, due: nanos(m.From), hasBucket: m.Bucket != "", bucket: m.Bucket}, false
			prevKey, havePrev = m.Key, true
			gone, buf = inSpan(old, m.Key, lo, hi, buf)
		} else if !havePrev || m.Key != prevKey {
			old, prevSkip = rev{}, false
			rk = append(append(rk[:0], prefixReverse), m.Key...)
			if it.SeekGE(rk) && bytes.Equal(it.Key(), rk) {
				v, err := it.ValueAndErr()
				if err != nil {
					return err
				}
				if old, err = decodeRev(v); err != nil {
					return fmt.Errorf("%w (key %q)", err, m.Key)
				}
			} else if err := it.Error(); err != nil {
				return err
			} else {
				v, err := s.getRaw(tableKey(m.Key))
				if err != nil {
					return err
				}
				prevSkip = v == nil
			}
			prevKey, havePrev = m.Key, true
			gone, buf = inSpan(old, m.Key, lo, hi, buf)
		}
		if prevSkip {
			continue
		}
		nu := old
		nu.hasDue = !m.To.IsZero()
		nu.due = 0
		if nu.hasDue {
			nu.due = nanos(m.To)
		}
		if buf, err = s.updateIndex(b, buf, m.Key, old, nu, gone); err != nil {
			return err
		}
		prev, gone = nu, false
	}
	return nil
}

// inSpan reports whether the due entry of old, key's index entries before
// its first move in a batch, lies in [lo, hi), the span the batch removes
// with a range deletion (nil lo: none): the move then writes its due entry
// even at the same time.
func inSpan(old rev, key string, lo, hi, buf []byte) (bool, []byte) {
	if lo == nil || !old.hasDue {
		return false, buf
	}
	buf = appendDueKey(buf[:0], old.due, key)
	return bytes.Compare(buf, lo) >= 0 && bytes.Compare(buf, hi) < 0, buf
}

// IndexedUpTo returns the time last given to ApplyMoves or RebuildIndexes
// (zero if never). Local only.
func (s *Store) IndexedUpTo() (time.Time, error) {
	if err := s.acquire(); err != nil {
		return time.Time{}, err
	}
	defer s.mu.RUnlock()
	return s.indexedUpTo()
}

func (s *Store) indexedUpTo() (time.Time, error) {
	v, err := s.getRaw(metaKey(metaIndexedUpTo))
	if err != nil {
		return time.Time{}, err
	}
	return decodeTimeMeta(v)
}

// BucketKeys returns up to limit keys of the bucket index for bucket, in key
// order, strictly after after ("" = from the start). limit <= 0 means no
// limit.
func (s *Store) BucketKeys(bucket, after string, limit int) ([]string, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	prefix := appendBucketPrefix(nil, bucket)
	lower := prefix
	if after != "" {
		lower = append(bucketKey(bucket, after), 0)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	var out []string
	for ok := it.First(); ok && (limit <= 0 || len(out) < limit); ok = it.Next() {
		out = append(out, string(it.Key()[len(prefix):]))
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("store: scanning bucket index: %w", err)
	}
	s.flood.addOther(1 + len(out))
	return out, nil
}

// DueOf returns the key's current due entry (zero if none), in UTC.
func (s *Store) DueOf(key string) (time.Time, error) {
	if err := s.acquire(); err != nil {
		return time.Time{}, err
	}
	defer s.mu.RUnlock()
	s.flood.addOther(1)
	r, err := s.getRev(key)
	if err != nil || !r.hasDue {
		return time.Time{}, err
	}
	return decTime(encTime(r.due)), nil
}

// RebuildIndexes drops all index entries and recomputes them from the table
// with the Indexer, as sorted sstables it ingests (indexAll), and stores
// indexedUpTo. A rebuild interrupted by a crash is redone by the next Open.
// Without an Indexer it only drops the indexes.
func (s *Store) RebuildIndexes(indexedUpTo time.Time) (err error) {
	defer s.recoverFatal(&err)
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	return s.rebuild(indexedUpTo)
}

// rebuild is RebuildIndexes without locking s.mu (the caller holds it).
func (s *Store) rebuild(indexedUpTo time.Time) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.rebuildLocked(indexedUpTo, nil)
}

// rebuildLocked is rebuild with s.wmu held. It ends a deferred recovery's
// deferral: the rebuild indexes the whole table, and every later write
// maintains the indexes itself (MarkRecovered then has nothing to build).
// A non-nil fb gets every key of the table (endRecovery's key filter).
func (s *Store) rebuildLocked(indexedUpTo time.Time, fb *filterBuild) error {
	defer s.beginWrite()()
	if err := s.commitPendingLocked(); err != nil {
		return err
	}
	s.batching = false
	s.deferIndex = false
	b := s.db.NewBatch()
	for _, p := range []byte{prefixDue, prefixReverse, prefixBucket} {
		if err := b.DeleteRange([]byte{p}, []byte{p + 1}, nil); err != nil {
			return errors.Join(err, b.Close())
		}
	}
	if err := b.Set(metaKey(metaRebuilding), []byte{1}, nil); err != nil {
		return errors.Join(err, b.Close())
	}
	if err := b.Commit(s.wo); err != nil {
		return errors.Join(fmt.Errorf("store: dropping indexes: %w", err), b.Close())
	}
	if err := b.Close(); err != nil {
		return err
	}

	if s.opts.Indexer != nil {
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixTable}, UpperBound: []byte{prefixTable + 1}})
		if err != nil {
			return err
		}
		if err := s.indexAll(it, fb); err != nil {
			return errors.Join(err, it.Close())
		}
		if err := it.Close(); err != nil {
			return err
		}
	}

	b = s.db.NewBatch()
	defer b.Close()
	if err := b.Set(metaKey(metaIndexedUpTo), encodeTimeMeta(indexedUpTo), nil); err != nil {
		return err
	}
	if err := b.Set(metaKey(metaVersion), []byte(indexVersion), nil); err != nil {
		return err
	}
	if err := b.Delete(metaKey(metaRebuilding), nil); err != nil {
		return err
	}
	// Always sync the end of a rebuild: it is rare and the flag must not
	// survive a crash while the entries it guards are lost.
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("store: finishing index rebuild: %w", err)
	}
	return nil
}

// indexAll writes the index entries of every record it iterates (the
// indexes are empty) as sorted sstables and ingests them: at the end of an
// empty-disk recovery with deferred indexing, inserting them into the
// memtable one batch at a time, then flushing and compacting them, was
// most of the index pass's cost (docs/performance.md, "Fires before the
// job view; the index pass as sorted sstables"). A non-nil fb gets each
// key too: the key filter of a recovered store is filled by this pass
// instead of a second one over the table.
func (s *Store) indexAll(it *pebble.Iterator, fb *filterBuild) (err error) {
	po := s.pebbleOptions(nil)
	po.EnsureDefaults()
	wo := po.MakeWriterOptions(0, s.db.TableFormat()) // not WritingToLowestLevel: Pebble picks the level
	po.Cache.Unref()
	b, err := newIndexBuild(s.fs(), s.dir, wo)
	if err != nil {
		return fmt.Errorf("store: index build: %w", err)
	}
	defer func() {
		if cerr := b.close(); err == nil && cerr != nil {
			err = fmt.Errorf("store: index build: %w", cerr)
		}
	}()
	// No floor is known for the new entries: the next scan finds it. Set
	// before the first ingest, so that an ingest failing after another
	// leaves no floor above the entries already in (adversary round 58).
	s.floor.seq++
	s.floor.key = nil
	r := tableReader{s}
	var buf []byte
	for ok := it.First(); ok; ok = it.Next() {
		if fb != nil {
			fb.add(it.Key()[1:])
		}
		key := string(it.Key()[1:])
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		e, err := s.opts.Indexer(r, key, v)
		if err != nil {
			return fmt.Errorf("store: indexing %q: %w", key, err)
		}
		if buf, err = updateIndex(b, buf, key, rev{}, entryRev(e), false); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	if err := b.ingest(s.db); err != nil {
		return fmt.Errorf("store: index build: %w", err)
	}
	return nil
}

// Stats counts table records and due entries (iterates both).
func (s *Store) Stats() (Stats, error) {
	if err := s.acquire(); err != nil {
		return Stats{}, err
	}
	defer s.mu.RUnlock()
	var st Stats
	var err error
	if st.Records, err = s.count(prefixTable); err != nil {
		return st, err
	}
	st.DueEntries, err = s.count(prefixDue)
	return st, err
}

func (s *Store) count(p byte) (int64, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{p}, UpperBound: []byte{p + 1}})
	if err != nil {
		return 0, err
	}
	var n int64
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	return n, it.Close()
}
