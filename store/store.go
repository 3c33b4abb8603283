package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lovoo/goka/storage"
)

// Entry is what the Indexer derives from one table record.
type Entry struct {
	Due    time.Time // zero: no due-index entry
	Bucket string    // "": no bucket-index entry
	// HasIndexTime: the record holds the time the Indexer derives the
	// entries of later records from (Options.IndexTime; the scheduler's
	// shard record, its watermark), IndexTime. Setting it lowers the
	// stored IndexedUpTo to it when that is later: records indexed from
	// then on derive from an earlier time than IndexedUpTo would claim (a
	// replay from an offset behind the table re-applies older records,
	// adversary round 21), so a caller comparing IndexedUpTo with the
	// table rebuilds.
	HasIndexTime bool
	IndexTime    time.Time
}

// Reader is read access to the table part of the store (used by indexers to
// look up other records, e.g. a shard watermark).
type Reader interface {
	Get(key string) ([]byte, error)
}

// Indexer derives index entries for a table record. It is called inside Set
// (and during RebuildIndexes) with the new value. It must be deterministic
// given the store contents.
type Indexer func(r Reader, key string, value []byte) (Entry, error)

// Options configure a Store.
type Options struct {
	// Indexer derives index entries in Set and RebuildIndexes. nil: Set keeps
	// no indexes (Delete and ApplyMoves still maintain existing entries).
	// Open rebuilds the indexes only after an index-format change or an
	// interrupted rebuild; after changing the Indexer call RebuildIndexes.
	Indexer Indexer
	// Sync fsyncs every write. Default false: writes use pebble.NoSync.
	// Every write is still one atomic WAL record, so after any crash the DB
	// holds a prefix of the writes (table, indexes and offset consistent).
	// Note: with NoSync pebble hands the WAL to the OS only in full 32 KiB
	// blocks (or on a sync), so even a process crash can lose the most
	// recent writes; call Store.Sync at points that must survive.
	Sync bool
	// FS is the pebble file system; nil = vfs.Default.
	FS vfs.FS
	// CacheSize is the pebble block cache size in bytes; 0 = 8 MiB.
	CacheSize int64
	// BloomBitsPerKey gives every sstable a Bloom filter of this many bits
	// per key (pebble's bloom.FilterPolicy; 10 gives about 1% false
	// positives). 0, the default: no filters. A filter lets a point read
	// skip every file that does not hold its key without reading that
	// file's index and data blocks, which is most of the cost of a Get on
	// a store much larger than its cache (and of every Get of a missing
	// key); it costs BloomBitsPerKey/8 bytes per key on disk and in the
	// cache, and a little CPU per flush and compaction. Applies to tables
	// written from then on.
	BloomBitsPerKey int
	// MemTableSize is the size of pebble's memtable in bytes; 0 = pebble's
	// default (4 MiB). A full memtable is flushed and compacted: stores with
	// equal write rates and equal sizes do that in lockstep, so the
	// scheduler staggers the sizes of its partition stores.
	MemTableSize uint64
	// RecoveryL0CompactionThreshold is the Pebble level-0 compaction
	// threshold a store compacts under while it recovers from an empty
	// directory, and while it takes a flood of new keys with little else
	// to do (a registration: compactgate.go's floodMeter). Its compaction
	// gate lets a compaction run once level 0 has half as many sublevels
	// (roughly, flushed memtables not yet compacted) or 500 files, until
	// MarkRecovered releases the recovery's hold and the flood ends, on the
	// same DB; 0: no gate, Pebble's default, 4, throughout. Writes stall at
	// four times it (at least Pebble's 12), for the life of the DB. Both
	// write keys in no order, so every compaction out of level 0 rewrites
	// most of the next level: a higher threshold compacts less often and
	// less in all (BenchmarkRecoveryReplay). It is not kept otherwise:
	// reads and scans would merge up to that many more files (the burst and
	// the registration of chronos bench were slower with 16 throughout).
	// The flood's hold starts only once the store's tables hold
	// floodMinTableBytes (compactgate.go).
	RecoveryL0CompactionThreshold int
	// floodMinTableBytes overrides floodMinTableBytes for tests: negative,
	// a flood holds at any size.
	floodMinTableBytes int64
	// Logger receives pebble's log output and store messages; optional.
	Logger func(format string, args ...any)
	// DeferIndexOnRecovery makes a store that is fresh at Open write the
	// table only until MarkRecovered, which then builds the indexes in one
	// pass over the table: much faster than maintaining them record by
	// record while goka replays a whole changelog. Reads of the indexes
	// before MarkRecovered see nothing. goka can return from a recovery
	// whose context was cancelled while MarkRecovered still runs, so the
	// deferral also ends at the first RebuildIndexes or ApplyMoves (each
	// builds the whole index first); every write after that is indexed.
	// Default false.
	DeferIndexOnRecovery bool
	// IndexTime reads from the table the time the Indexer's entries of the
	// whole table reflect (the scheduler: its shard's watermark). A rebuild
	// the store starts itself (at the end of a deferred recovery, at Open
	// after an interrupted rebuild, before moves on a deferred index)
	// records it as IndexedUpTo, so a caller comparing that with the table
	// does not rebuild the same index again. nil, or an error: the rebuild
	// keeps the IndexedUpTo stored before (zero if none), which can only
	// cost a caller one more rebuild.
	IndexTime func(r Reader) (time.Time, error)
	// OnFatal is called once when a write hits a fatal storage error (pebble
	// stops on a failed WAL write, e.g. a full disk). Every later call
	// returns ErrFatal; the process should stop and restart, recovering the
	// partitions from their changelogs. Optional.
	OnFatal func(error)
	// FailedWrites, when set, counts the Set and Delete calls that returned
	// an error, so that a caller above one that swallows the error can
	// tell (clients.StrictTableWrites: goka's SetValue on a cancelled
	// context). Shared by every store of an instance. Optional.
	FailedWrites *atomic.Uint64
	// OnRecovered is called when MarkRecovered has succeeded, just before
	// Recovered reports true (the scheduler notes the announced time its
	// partition starts from). Optional.
	OnRecovered func()
	// OffsetEvery persists the local offset after MarkRecovered only when
	// it has moved OffsetEvery offsets past the persisted one (and always
	// at Close); in between it is kept in memory. 0 or 1, the default:
	// every SetOffset is persisted, one more write per changelog record.
	// Larger values save that write, at the cost of a crash (not a clean
	// stop) re-reading up to OffsetEvery-1 more changelog records at the
	// next recovery and putting their values back over the store's own:
	// only for tables whose writes are idempotent when their inputs are
	// consumed again (the history group's folds), not the scheduler's.
	// The persisted offset never passes the data (one WAL, written in
	// order), so nothing is skipped.
	OffsetEvery int64
	// Settled, when set, is called by Close: nil means every write made
	// through the store has reached its changelog (the broker acknowledged
	// it). goka writes a table's local store at once and its changelog
	// asynchronously, so a process that dies, or a changelog write that
	// fails, can leave a store holding writes its changelog never got: a
	// store ahead of its changelog, which a restart on the same data dir
	// would trust while any other owner would restore the changelog's
	// older values (docs/reliability.md, "A store ahead of its
	// changelog"). With Settled set, a store marks itself unsettled when
	// its recovery ends (MarkRecovered, before its first write of its
	// own), and only a Close whose Settled returns nil clears the mark;
	// Open discards a store that carries it (a kill, a crash, a failed
	// write, or a Close that could not tell): it moves it to
	// DIR+DiscardedSuffix (replacing an older copy) and opens an empty
	// store, and the partition is restored from its changelog from the
	// start, like on an empty disk. nil: no
	// mark, a kept store is trusted (the clock table, whose writes are
	// idempotent when its inputs are consumed again; the history group
	// sets it since adversary round 48: its folds are idempotent too,
	// which is why a fold consumed again writes nothing and a kept store
	// ahead of its changelog keeps it from the changelog for good).
	Settled func() error
	// OnDiscarded is called when Open discarded an unsettled store (see
	// Settled), with why. Optional (the store also logs it to Logger).
	OnDiscarded func(dir string)
	// CachedKey is one table key whose value the store keeps in memory
	// once read, so that Get and the Indexer's reads of it do not go to
	// Pebble until it is written again (the scheduler's shard record,
	// which every command reads). "": none.
	CachedKey string
	// KeyFilter keeps an in-memory Bloom filter of the table's keys once
	// the store has recovered, so that a Get of a key the table does not
	// hold, and the Set of that key after it, do not look through
	// Pebble's levels (keyfilter.go): ~10 bits a key, 1.25x (after
	// MarkRecovered) to 2x (after a rebuild) the table's keys, built from
	// the table's keys at MarkRecovered and again, at twice the table's
	// size, when it fills with new keys or has seen as many deletions as
	// it has room for.
	KeyFilter bool
	// RunReads answers Get through one kept iterator while the keys read
	// ascend (runreader.go): a reader that goes through keys in order
	// (the history group, reading a job's record for each dispatch event
	// of a fan-out chunk sent in key order) seeks forward instead of
	// making a point read per key. It pins at most one iterator's view of
	// the store (retired after 4,096 reads or 1,024 writes); reads in
	// another order use point reads as without it.
	RunReads bool
}

var (
	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("store: closed")
	// ErrNotOpen is returned by data methods called before Open.
	ErrNotOpen = errors.New("store: not open")
)

const (
	defaultCacheSize             = 8 << 20
	recoveryCommitOffsetInterval = 30 * time.Second
	// recoveryBatchBytes is the size at which a recovering store commits
	// the writes it batched: one commit (WAL write, memtable insert, the
	// commit pipeline's locks) per ~1,000 changelog records instead of
	// one per record.
	recoveryBatchBytes = 256 << 10
)

// Store implements storage.Storage. Safe for concurrent readers and one
// writer (goka's contract); the index-maintaining writes (Set, Delete,
// ApplyMoves, RebuildIndexes) are additionally serialized internally, so they
// may be called from different goroutines.
type Store struct {
	dir  string
	opts Options
	wo   *pebble.WriteOptions

	mu     sync.RWMutex // RLock: any use of db; Lock: Open/Close
	db     *pebble.DB
	opened bool
	closed bool

	wmu sync.Mutex // serializes read-modify-write index maintenance
	buf []byte     // scratch for index keys; guarded by wmu
	// minSpan is the fewest moves ApplyScannedMoves removes with a range
	// deletion (minRangeDeletion; the package's tests lower it), and
	// rangeDels counts the range deletions it wrote.
	minSpan   int
	rangeDels atomic.Uint64

	offset    atomic.Int64 // local offset + 1; 0: none set (see localOffset)
	persisted atomic.Int64 // persisted offset + 1 after MarkRecovered; 0: none (see OffsetEvery)
	recovered atomic.Bool
	// offsetGap: after MarkRecovered, a changelog write came back with an
	// offset that does not follow the local offset, so another writer (an
	// owner that had not yet noticed it lost the partition, or the one that
	// took it over) wrote records this store does not hold. The local offset
	// then stays where it was, and the next recovery re-reads from there.
	offsetGap atomic.Bool
	// deferIndex: the store was fresh at Open, so while goka recovers it
	// from the changelog Set and Delete write the table only, and
	// MarkRecovered builds the indexes in one pass. Guarded by wmu.
	deferIndex bool
	// recoverySets counts the Sets of a store that was fresh at Open
	// until it is marked recovered (-1: not fresh, or not counted): no
	// table holds more keys than were written to it, so MarkRecovered
	// sizes the key filter by it. Guarded by wmu.
	recoverySets int64
	// gate is the DB's compaction scheduler when the store was opened
	// with a RecoveryL0CompactionThreshold, else nil: it holds while the
	// store, empty at Open, recovers (MarkRecovered releases it: untune),
	// and while flood counts a flood of new keys. Guarded by mu.
	gate  *compactionGate
	flood *floodMeter // the gate's meter, else nil
	// batching: Set and Delete add to pending instead of writing one by
	// one, committed every recoveryBatchBytes (see Options: while goka
	// replays a changelog into a store that needs no reads to write it).
	// pendingAny tells readers, without wmu, that pending holds writes they
	// must see: every other method commits them first (acquire). Guarded by
	// wmu, except pendingAny.
	batching   bool
	pending    *pebble.Batch
	pendingAny atomic.Bool
	// floor lets scans of the due index skip what they already passed
	// (see dueFloor in index.go). Guarded by wmu.
	floor dueFloor
	stop  chan struct{}
	bg    sync.WaitGroup

	itMu  sync.Mutex
	iters map[*iterator]struct{}

	broken atomic.Bool // a write hit a fatal pebble error; the DB is unusable

	// wseq, cached and lastMiss keep what a callback read just before it
	// writes (readcache.go).
	wseq     atomic.Uint64
	cached   atomic.Pointer[cachedValue]
	lastMiss atomic.Pointer[miss]

	// filter is the table's key filter (Options.KeyFilter; nil until
	// MarkRecovered builds it), filterHits the reads it answered.
	filter     atomic.Pointer[keyFilter]
	filterHits atomic.Uint64
	filterMin  int
	// onFilterAlloc, when set (the package's tests), is called with the
	// new filter where a filter build has allocated it.
	onFilterAlloc func(*keyFilter)
	// onFilterCount, when set (the package's tests), is called where a
	// filter build counts the table's keys in a pass of its own.
	onFilterCount func()

	runs *runReader // Options.RunReads; nil without
}

var _ storage.Storage = (*Store)(nil)

// ErrFatal wraps a fatal storage error: the DB cannot be used any more.
var ErrFatal = errors.New("store: fatal storage error")

// recoverFatal turns pebble's panic on a fatal write error (its way of
// stopping on a failed WAL write) into ErrFatal, marks the store broken and
// reports it once. Deferred by every write method, after the unlock.
func (s *Store) recoverFatal(err *error) {
	r := recover()
	if r == nil {
		return
	}
	*err = fmt.Errorf("%w: %s: %v", ErrFatal, s.dir, r)
	if s.broken.CompareAndSwap(false, true) {
		s.logf("store %s: %v; the process must restart to recover from the changelog", s.dir, *err)
		if s.opts.OnFatal != nil {
			s.opts.OnFatal(*err)
		}
	}
}

// countFailed counts a failed Set or Delete in Options.FailedWrites.
func (s *Store) countFailed(err *error) {
	if *err != nil && s.opts.FailedWrites != nil {
		s.opts.FailedWrites.Add(1)
	}
}

// New returns a Store for dir. It does not open the DB; goka calls Open.
func New(dir string, opts Options) *Store {
	wo := pebble.NoSync
	if opts.Sync {
		wo = pebble.Sync
	}
	var runs *runReader
	if opts.RunReads {
		runs = &runReader{}
	}
	return &Store{
		runs:      runs,
		dir:       dir,
		opts:      opts,
		wo:        wo,
		minSpan:   minRangeDeletion,
		filterMin: filterMinKeys,
		stop:      make(chan struct{}),
		// Counted only from a fresh DB (checkFormat).
		recoverySets: -1,
		iters:        make(map[*iterator]struct{}),
	}
}

// Builder returns a goka storage.Builder that keeps one Store per (topic,
// partition) under filepath.Join(root, topic, partition).
func Builder(root string, opts Options) storage.Builder {
	return func(topic string, partition int32) (storage.Storage, error) {
		return New(filepath.Join(root, topic, strconv.Itoa(int(partition))), opts), nil
	}
}

func (s *Store) logf(format string, args ...any) {
	if s.opts.Logger != nil {
		s.opts.Logger(format, args...)
	}
}

type pebbleLogger struct{ f func(string, ...any) }

func (l pebbleLogger) Infof(format string, args ...any)  { l.f(format, args...) }
func (l pebbleLogger) Errorf(format string, args ...any) { l.f(format, args...) }
func (l pebbleLogger) Fatalf(format string, args ...any) {
	l.f(format, args...)
	panic(fmt.Sprintf(format, args...))
}

// Open opens (creating if needed) the pebble DB in the store's directory.
// If the stored index format differs from the current one, or a previous
// RebuildIndexes did not finish, and an Indexer is configured, the indexes
// are rebuilt before Open returns.
func (s *Store) Open() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.opened {
		return errors.New("store: already open")
	}
	fs := s.fs()
	if err := s.discardUnsettled(fs); err != nil {
		return err
	}
	// An empty directory is a fresh store: its recovery restores the whole
	// changelog, under the recovery's compaction threshold.
	// A directory that cannot be listed is not taken for empty.
	names, err := fs.List(s.dir)
	fresh := err == nil && len(names) == 0 || errors.Is(err, os.ErrNotExist)
	if err := fs.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("store: creating %s: %w", s.dir, err)
	}
	var gate *compactionGate
	var flood *floodMeter
	if s.opts.RecoveryL0CompactionThreshold > 0 {
		flood = &floodMeter{}
		gate = newCompactionGate(s.opts.RecoveryL0CompactionThreshold, fresh, flood)
		gate.minTableBytes = floodMinTableBytes
		if m := s.opts.floodMinTableBytes; m != 0 {
			gate.minTableBytes = max(0, m)
		}
	}
	db, err := s.openDB(gate)
	if err != nil {
		return fmt.Errorf("store: opening pebble at %s: %w", s.dir, err)
	}
	// An index build a crash interrupted left its files: its rebuild is
	// redone (the rebuilding mark) or its mark was never durable
	// (adversary round 59: a live rebuild's mark is not synced, and a
	// compaction's sync of the directory made the build's directory
	// durable). Removed under Pebble's lock, which the DB now holds.
	if err := fs.RemoveAll(fs.PathJoin(s.dir, indexBuildDir)); err != nil {
		return errors.Join(fmt.Errorf("store: removing an interrupted index build: %w", err), db.Close())
	}
	s.db = db
	s.opened = true
	s.gate, s.flood = gate, flood
	s.resetCache()
	s.retireRuns()

	if err := s.checkFormat(); err != nil {
		s.opened = false
		s.db = nil
		return errors.Join(err, db.Close())
	}
	// A recovery writes without reading while the store keeps no indexes
	// (none, or deferred): it can batch. With Sync every write must be
	// durable when Set returns, so it does not.
	s.batching = !s.opts.Sync && (s.opts.Indexer == nil || s.deferIndex)

	openStores.Store(s, struct{}{})
	s.bg.Add(1)
	go s.commitOffsetsDuringRecovery()
	return nil
}

// DiscardedSuffix names the copy of a discarded store (Options.Settled):
// DIR+DiscardedSuffix, beside it.
const DiscardedSuffix = ".discarded"

// unsettledFile marks a store directory whose store may hold writes its
// changelog lacks (Options.Settled): a file beside Pebble's, so Open reads
// it before Pebble opens the directory.
const unsettledFile = "CHRONOS-UNSETTLED"

// discardUnsettled moves aside a store whose last Close did not record
// that its writes reached the changelog (Options.Settled), so that Open
// finds an empty directory. Called from Open with s.mu held.
func (s *Store) discardUnsettled(fs vfs.FS) error {
	if _, err := fs.Stat(fs.PathJoin(s.dir, unsettledFile)); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("store: reading %s's close mark: %w", s.dir, err)
	}
	// Pebble's lock first: a store another process still has open (its
	// old owner, not yet closed) is not ours to discard, and Open fails as
	// Pebble's own would (adversary round 34: the rename went under the
	// live store, whose settled close then removed the new store's mark).
	lock, err := pebble.LockDirectory(s.dir, fs)
	if err != nil {
		return fmt.Errorf("store: %s is unsettled and locked (in use by another process?): %w", s.dir, err)
	}
	// Moved aside, not deleted: the last discarded copy stays as
	// DIR.discarded (replacing an older one) for an operator who needs
	// what only it held (a table topic deleted: docs/operations.md). One
	// rename, so a crash leaves either the marked store or none.
	aside := s.dir + DiscardedSuffix
	err = fs.RemoveAll(aside)
	if err != nil {
		err = fmt.Errorf("store: removing the older discarded copy %s: %w", aside, err)
	} else if err = fs.Rename(s.dir, aside); err != nil {
		err = fmt.Errorf("store: moving %s aside to discard it: %w", s.dir, err)
	}
	if err = errors.Join(err, lock.Close()); err != nil {
		return err
	}
	s.logf("store %s: its last close did not record that its writes reached the changelog (a crash, or a failed write): moved to %s, the partition is restored from its changelog", s.dir, aside)
	if s.opts.OnDiscarded != nil {
		s.opts.OnDiscarded(s.dir)
	}
	return nil
}

// markUnsettled records, durably, that the store may from now on hold
// writes its changelog does not (see Options.Settled).
func (s *Store) markUnsettled() error {
	fs := s.fs()
	f, err := fs.Create(fs.PathJoin(s.dir, unsettledFile), vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("store: marking %s unsettled: %w", s.dir, err)
	}
	if err := errors.Join(f.Sync(), f.Close()); err != nil {
		return fmt.Errorf("store: marking %s unsettled: %w", s.dir, err)
	}
	return syncDir(fs, s.dir)
}

// settle removes the mark of markUnsettled, durably.
func (s *Store) settle() error {
	fs := s.fs()
	if err := fs.Remove(fs.PathJoin(s.dir, unsettledFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return syncDir(fs, s.dir)
}

func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

func (s *Store) fs() vfs.FS {
	if s.opts.FS == nil {
		return vfs.Default
	}
	return s.opts.FS
}

// openDB opens the DB; with a gate, as its compaction scheduler (a
// recovery's).
func (s *Store) openDB(gate *compactionGate) (*pebble.DB, error) {
	po := s.pebbleOptions(gate)
	defer po.Cache.Unref() // the DB holds its own reference
	db, err := pebble.Open(s.dir, po)
	if err != nil && gate != nil {
		gate.abandon()
	}
	return db, err
}

// pebbleOptions are the options the DB is opened with, with a new block
// cache the caller must Unref.
func (s *Store) pebbleOptions(gate *compactionGate) *pebble.Options {
	size := s.opts.CacheSize
	if size <= 0 {
		size = defaultCacheSize
	}
	po := &pebble.Options{
		FS:                 s.fs(),
		Cache:              pebble.NewCache(size),
		FormatMajorVersion: pebble.FormatNewest,
		MemTableSize:       s.opts.MemTableSize,
	}
	if gate != nil {
		// Pebble's threshold throughout; the gate holds compactions back
		// during the recovery. Writes stall deeper than the gate opens.
		po.Experimental.CompactionScheduler = gate
		po.L0StopWritesThreshold = max(12, 4*gate.threshold)
	}
	if s.opts.BloomBitsPerKey > 0 {
		// L1 to L6 take L0's filter policy (pebble's EnsureDefaults).
		po.Levels[0].FilterPolicy = bloom.FilterPolicy(s.opts.BloomBitsPerKey)
	}
	if s.opts.Logger != nil {
		po.Logger = pebbleLogger{s.opts.Logger}
	}
	return po
}

// untune releases the compaction gate of a store that recovered from an
// empty directory: from then on Pebble compacts as it would by default,
// on the same DB (no reopen: closing it waited for running compactions
// and replayed the WAL, a pause of the partition).
func (s *Store) untune() {
	s.mu.RLock()
	gate := s.gate
	s.mu.RUnlock()
	if gate != nil && gate.release() {
		s.logf("store %s: recovered; compacting at Pebble's threshold", s.dir)
	}
}

// tuned reports whether the store's compaction gate still holds (the
// store was empty at Open and has not been marked recovered).
func (s *Store) tuned() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.gate != nil && s.gate.held()
}

// checkFormat writes the index version on a fresh DB and rebuilds the
// indexes when needed. Called with s.mu held.
func (s *Store) checkFormat() error {
	ver, err := s.getRaw(metaKey(metaVersion))
	if err != nil {
		return err
	}
	rebuilding, err := s.getRaw(metaKey(metaRebuilding))
	if err != nil {
		return err
	}
	if ver == nil && rebuilding == nil {
		// Fresh DB (the version is the first thing ever written, so with a
		// prefix-consistent WAL a DB without it holds no data either). With
		// DeferIndexOnRecovery, its recovery defers the indexes to
		// MarkRecovered; the rebuilding flag makes a crash before that
		// rebuild them at the next Open.
		b := s.db.NewBatch()
		defer b.Close()
		if err := b.Set(metaKey(metaVersion), []byte(indexVersion), nil); err != nil {
			return err
		}
		s.recoverySets = 0
		if s.opts.Indexer != nil && s.opts.DeferIndexOnRecovery {
			if err := b.Set(metaKey(metaRebuilding), []byte{1}, nil); err != nil {
				return err
			}
			s.deferIndex = true
		}
		return b.Commit(pebble.Sync)
	}
	if string(ver) == indexVersion && rebuilding == nil {
		return nil
	}
	if s.opts.Indexer == nil {
		s.logf("store %s: index version %q (current %q), interrupted rebuild %v, but no Indexer: indexes not rebuilt",
			s.dir, ver, indexVersion, rebuilding != nil)
		return nil
	}
	s.logf("store %s: rebuilding indexes (version %q, interrupted rebuild: %v)", s.dir, ver, rebuilding != nil)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.rebuildSelfLocked(nil)
}

// rebuildSelfLocked is a rebuild the store starts itself, with s.wmu held:
// it commits the recovery's batch, so Options.IndexTime reads the table the
// rebuild indexes, and records the time that gives (see Options.IndexTime).
// A non-nil fb gets every key of the table (see rebuildLocked).
func (s *Store) rebuildSelfLocked(fb *filterBuild) error {
	if err := s.commitPendingLocked(); err != nil {
		return err
	}
	return s.rebuildLocked(s.selfIndexTime(), fb)
}

// selfIndexTime is the IndexedUpTo a rebuild the store starts itself
// records: Options.IndexTime's, or else the one stored before (zero if
// none or unreadable).
func (s *Store) selfIndexTime() time.Time {
	if s.opts.IndexTime != nil {
		t, err := s.opts.IndexTime(tableReader{s})
		if err == nil {
			return t
		}
		s.logf("store %s: reading the index time from the table: %v (keeping the stored one)", s.dir, err)
	}
	t, err := s.indexedUpTo()
	if err != nil {
		return time.Time{}
	}
	return t
}

func (s *Store) commitOffsetsDuringRecovery() {
	defer s.bg.Done()
	t := time.NewTicker(recoveryCommitOffsetInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if s.recovered.Load() {
				return
			}
			if off, ok := s.localOffset(); ok {
				if err := s.putOffset(off); err != nil && !errors.Is(err, ErrClosed) {
					s.logf("store %s: committing offset: %v", s.dir, err)
				}
			}
		}
	}
}

// Close persists the local offset (if non-zero), releases outstanding
// iterators and closes the DB. Close is idempotent.
func (s *Store) Close() (err error) {
	defer s.recoverFatal(&err)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	openStores.Delete(s)
	close(s.stop)
	if !s.opened {
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	s.bg.Wait()

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken.Load() {
		// pebble stopped on a fatal error; flushing or closing it would
		// crash the process. Leave it to the process restart.
		s.db = nil
		return ErrFatal
	}
	err = func() error {
		s.wmu.Lock()
		defer s.wmu.Unlock()
		s.batching = false
		return s.commitPendingLocked()
	}()
	if off, ok := s.localOffset(); ok && err == nil {
		err = s.db.Set(metaKey(metaOffset), encodeOffset(off), s.wo)
	}
	// The mark goes only when every write of the store reached the
	// changelog. It goes while the DB is open, so under Pebble's lock: a
	// new owner's Open waits for the lock before it reads or discards
	// (adversary round 34). A DB that then fails to close has lost at most
	// its last writes: behind its changelog, which a recovery repairs,
	// never ahead.
	if s.opts.Settled != nil && s.recovered.Load() && err == nil {
		if serr := s.opts.Settled(); serr != nil {
			s.logf("store %s: closing with writes the changelog may not hold (%v): the next Open discards it", s.dir, serr)
		} else {
			err = s.settle()
		}
	}
	s.itMu.Lock()
	iters := make([]*iterator, 0, len(s.iters))
	for it := range s.iters {
		iters = append(iters, it)
	}
	s.iters = nil
	s.itMu.Unlock()
	for _, it := range iters {
		it.forceRelease()
	}
	s.retireRuns()
	// No Flush: Close syncs the WAL, which holds every write, and the next
	// Open replays it. A Flush would create a new WAL file first, and on a
	// full disk pebble fails that with a fatal error no recover catches
	// ("sync: unlock of unlocked mutex"), which killed the process.
	err = errors.Join(err, s.db.Close())
	s.db = nil
	s.filter.Store(nil) // a closed store kept by a caller keeps no filter (adversary round 46b)
	return err
}

// acquire read-locks the store for one operation, having committed the
// writes a recovery batched, so that the operation sees them. The caller
// must call s.mu.RUnlock() if it returns nil.
func (s *Store) acquire() error {
	if err := s.acquireNoCommit(); err != nil {
		return err
	}
	if s.pendingAny.Load() {
		if err := s.commitPending(); err != nil {
			s.mu.RUnlock()
			return err
		}
	}
	return nil
}

// acquireNoCommit is acquire without committing the batch a recovery is
// writing: for Set and Delete, which add to it, and for what does not read
// the data (offsets kept in memory, metrics). A commit can rotate Pebble's
// WAL, which on a full disk ends the process (see Options.OnFatal), so
// only what must see the batch commits it.
func (s *Store) acquireNoCommit() error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	if !s.opened {
		s.mu.RUnlock()
		return ErrNotOpen
	}
	if s.broken.Load() {
		s.mu.RUnlock()
		return ErrFatal
	}
	return nil
}

// commitPending commits the writes a recovery batched, so that what
// follows (a read, an index build, an offset) sees them. The caller holds
// s.mu (read or write), not s.wmu.
func (s *Store) commitPending() (err error) {
	defer s.recoverFatal(&err)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.commitPendingLocked()
}

// commitPendingLocked is commitPending with s.wmu held.
// pendingAny stays set until the commit has returned: a reader that sees
// it clear finds the batch's writes in the DB, and one that sees it set
// waits on wmu for the commit under way (adversary round 20: clearing it
// first let readers and the offset commit pass a batch not yet visible).
// A failed commit drops the batch; the caller gets the error, and the
// offset, never committed past an uncommitted batch, makes the next
// recovery restore those records again.
func (s *Store) commitPendingLocked() error {
	b := s.pending
	if b == nil {
		return nil
	}
	defer s.beginWrite()()
	defer func() {
		s.pending = nil
		s.pendingAny.Store(false)
	}()
	if err := b.Commit(s.wo); err != nil {
		return errors.Join(fmt.Errorf("store: committing the recovered writes: %w", err), b.Close())
	}
	return b.Close()
}

// addPending adds one write of a recovery to the batch (s.wmu held) and
// commits the batch once it is large enough.
func (s *Store) addPending(add func(b *pebble.Batch) error) error {
	if s.pending == nil {
		s.pending = s.db.NewBatch()
	}
	if err := add(s.pending); err != nil {
		return err
	}
	s.pendingAny.Store(true)
	if s.pending.Len() >= recoveryBatchBytes {
		return s.commitPendingLocked()
	}
	return nil
}

// getRaw returns a copy of the value of an internal key, nil if missing.
func (s *Store) getRaw(k []byte) ([]byte, error) {
	v, closer, err := s.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(v))
	copy(out, v)
	return out, closer.Close()
}

// tableReader is the Reader given to Indexers; it takes no locks (the
// caller already holds them).
type tableReader struct{ s *Store }

func (r tableReader) Get(key string) ([]byte, error) { return r.s.readTable(key) }

// Has reports whether key exists in the table.
func (s *Store) Has(key string) (bool, error) {
	if err := s.acquire(); err != nil {
		return false, err
	}
	defer s.mu.RUnlock()
	if s.filterAbsent(key) {
		return false, nil
	}
	s.flood.addOther(1)
	_, closer, err := s.db.Get(tableKey(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: has %q: %w", key, err)
	}
	return true, closer.Close()
}

// Get returns the value of key, or (nil, nil) if it does not exist.
func (s *Store) Get(key string) ([]byte, error) {
	if s.opts.CachedKey != "" && key == s.opts.CachedKey {
		return s.getCached()
	}
	v, seq, err := s.get(key)
	if err == nil && v == nil && s.opts.Indexer != nil {
		s.lastMiss.Store(&miss{key: key, seq: seq})
	}
	return v, err
}

// get is Get from Pebble, with the write count (wseq) it began at: read
// before acquire, whose commit of a recovery's batch raises it, so that a
// Set batched after that commit, which the read does not see, moves it
// too (adversary round 39).
func (s *Store) get(key string) ([]byte, uint64, error) {
	seq := s.wseq.Load()
	if err := s.acquire(); err != nil {
		return nil, 0, err
	}
	defer s.mu.RUnlock()
	if s.filterAbsent(key) {
		return nil, seq, nil
	}
	s.flood.addOther(1)
	if s.runs != nil {
		if v, ok, _ := s.runs.get(s, key); ok {
			return v, seq, nil
		}
	}
	v, err := s.getRaw(tableKey(key))
	if err != nil {
		return nil, 0, fmt.Errorf("store: get %q: %w", key, err)
	}
	return v, seq, nil
}

// Set stores value under key. With an Indexer, one atomic batch writes the
// value, removes the key's old index entries and writes the new ones.
func (s *Store) Set(key string, value []byte) (err error) {
	defer s.countFailed(&err) // after recoverFatal: it sees a fatal error too
	defer s.recoverFatal(&err)
	if err := s.acquireNoCommit(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	absent := s.knownAbsent(key) || s.filterAbsent(key)
	s.flood.addSet(absent)
	defer s.beginWrite()()
	s.notePut(key)
	s.writesKey(key)
	s.filterAddLocked(key)
	if s.recoverySets >= 0 && !s.recovered.Load() {
		s.recoverySets++
	}
	if s.batching {
		if err := s.addPending(func(b *pebble.Batch) error { return b.Set(tableKey(key), value, nil) }); err != nil {
			return fmt.Errorf("store: set %q: %w", key, err)
		}
		return nil
	}
	if s.opts.Indexer == nil || s.deferIndex {
		if err := s.db.Set(tableKey(key), value, s.wo); err != nil {
			return fmt.Errorf("store: set %q: %w", key, err)
		}
		return nil
	}
	e, err := s.opts.Indexer(tableReader{s}, key, value)
	if err != nil {
		return fmt.Errorf("store: indexing %q: %w", key, err)
	}
	var old rev // none if the caller's last Get found no record
	if !absent {
		if old, err = s.getRev(key); err != nil {
			return err
		}
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.Set(tableKey(key), value, nil); err != nil {
		return err
	}
	if s.buf, err = s.updateIndex(b, s.buf, key, old, entryRev(e), false); err != nil {
		return err
	}
	if e.HasIndexTime {
		if err := s.lowerIndexedUpTo(b, e.IndexTime); err != nil {
			return err
		}
	}
	if err := b.Commit(s.wo); err != nil {
		return fmt.Errorf("store: set %q: %w", key, err)
	}
	return nil
}

// lowerIndexedUpTo adds to b the lowering of the stored IndexedUpTo to t
// if it is later (Entry.HasIndexTime).
func (s *Store) lowerIndexedUpTo(b *pebble.Batch, t time.Time) error {
	upTo, err := s.indexedUpTo()
	if err != nil {
		return err
	}
	if !upTo.After(t) {
		return nil
	}
	return b.Set(metaKey(metaIndexedUpTo), encodeTimeMeta(t), nil)
}

// Delete removes key and its index entries atomically. Deleting a missing
// key is not an error.
func (s *Store) Delete(key string) (err error) {
	defer s.countFailed(&err)
	defer s.recoverFatal(&err)
	if err := s.acquireNoCommit(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	defer s.beginWrite()()
	s.flood.addOther(1)
	s.notePut(key)
	s.writesKey(key)
	s.filterDeleteLocked()
	if s.deferIndex {
		// The indexes are built after the recovery, from the table.
		if s.batching {
			err = s.addPending(func(b *pebble.Batch) error { return b.Delete(tableKey(key), nil) })
		} else {
			err = s.db.Delete(tableKey(key), s.wo)
		}
		if err != nil {
			return fmt.Errorf("store: delete %q: %w", key, err)
		}
		return nil
	}
	// Without an Indexer the key may still have index entries (ApplyMoves
	// writes them). A batching store's reverse entries are never in its
	// batch (only table writes and these removals are), so reading them
	// from the DB is right; a second removal of the same entries is
	// harmless.
	old, err := s.getRev(key)
	if err != nil {
		return err
	}
	del := func(b *pebble.Batch) error {
		if err := b.Delete(tableKey(key), nil); err != nil {
			return err
		}
		s.buf, err = updateIndex(b, s.buf, key, old, rev{}, false)
		return err
	}
	if s.batching {
		if err := s.addPending(del); err != nil {
			return fmt.Errorf("store: delete %q: %w", key, err)
		}
		return nil
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := del(b); err != nil {
		return err
	}
	if err := b.Commit(s.wo); err != nil {
		return fmt.Errorf("store: delete %q: %w", key, err)
	}
	return nil
}

// Sync makes all previous writes durable: it flushes pebble's WAL buffer to
// the OS and fsyncs it. Useful with Options.Sync == false at commit points.
func (s *Store) Sync() error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	return s.db.LogData(nil, pebble.Sync)
}

// localOffset returns the local offset, if one is set.
func (s *Store) localOffset() (int64, bool) {
	v := s.offset.Load()
	return v - 1, v != 0
}

func (s *Store) setLocalOffset(off int64) { s.offset.Store(off + 1) }

func encodeOffset(off int64) []byte { return []byte(strconv.FormatInt(off, 10)) }

func (s *Store) putOffset(off int64) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	if err := s.db.Set(metaKey(metaOffset), encodeOffset(off), s.wo); err != nil {
		return err
	}
	s.persisted.Store(off + 1)
	return nil
}

// persistDue reports whether SetOffset(off) after MarkRecovered must
// persist off now (see Options.OffsetEvery).
func (s *Store) persistDue(off int64) bool {
	p := s.persisted.Load()
	return s.opts.OffsetEvery <= 1 || p == 0 || off-(p-1) >= s.opts.OffsetEvery
}

// endRecovery commits the recovery's batch, ends batching and the
// deferral, and builds the deferred indexes. With Options.KeyFilter, a
// store fresh at Open fills its key filter in the same pass over the table
// (sized by the recovery's writes, as buildFilter does), and filtered
// reports that it did: the filter's own pass read every key again (2.0 of
// the view's 6.4 CPU s at the end of a 10M recovery, docs/performance.md).
// Every lock is released by a defer: a fatal pebble error panics, and
// recoverFatal turns that into an error only after they are released (a
// read lock kept by a panic made Close wait forever: adversary round 20).
func (s *Store) endRecovery() (filtered bool, err error) {
	if err := s.acquire(); err != nil {
		return false, err
	}
	defer s.mu.RUnlock()
	deferred, err := func() (bool, error) {
		s.wmu.Lock()
		defer s.wmu.Unlock()
		// Later writes are written one by one (and indexed); the batch of
		// the recovery goes first, and the rebuild below covers it.
		if err := s.commitPendingLocked(); err != nil {
			return false, err
		}
		s.batching = false
		d := s.deferIndex
		s.deferIndex = false
		return d, nil
	}()
	if err != nil || !deferred {
		return false, err
	}
	start := time.Now()
	if err := func() error {
		s.wmu.Lock()
		defer s.wmu.Unlock()
		var fb *filterBuild
		// Only a pass that reads the table (an Indexer: deferIndex implies
		// one) may fill it: an empty filter would answer "absent" wrongly.
		if s.opts.KeyFilter && s.recoverySets >= 0 && s.opts.Indexer != nil {
			fb = s.newFilterBuild(false, s.recoverySets, true)
		}
		if err := s.rebuildSelfLocked(fb); err != nil {
			return err
		}
		if fb != nil {
			// An accelerator only: without it reads go to Pebble.
			if err := s.finishFilterLocked(fb); err != nil {
				s.logf("store %s: building the key filter: %v (reads of absent keys go to Pebble)", s.dir, err)
			}
			filtered = true
		}
		return nil
	}(); err != nil {
		return false, fmt.Errorf("store: indexing the recovered table: %w", err)
	}
	s.logf("store %s: indexed the recovered table in %s", s.dir, time.Since(start))
	return filtered, nil
}

// GetOffset returns the local offset: the in-memory offset if one is set
// (before MarkRecovered, or after it with Options.OffsetEvery, when the
// persisted one may trail it), otherwise the persisted one, or def if
// none.
func (s *Store) GetOffset(def int64) (int64, error) {
	if err := s.acquireNoCommit(); err != nil {
		return 0, err
	}
	defer s.mu.RUnlock()
	if !s.recovered.Load() || s.opts.OffsetEvery > 1 {
		if off, ok := s.localOffset(); ok {
			return off, nil
		}
	}
	v, err := s.getRaw(metaKey(metaOffset))
	if err != nil {
		return 0, err
	}
	if v == nil {
		return def, nil
	}
	off, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("store: decoding offset: %w", err)
	}
	return off, nil
}

// SetOffset sets the local offset. It is persisted immediately after
// MarkRecovered (every Options.OffsetEvery offsets if set), before that only
// periodically, and always on Close.
func (s *Store) SetOffset(offset int64) (err error) {
	defer s.recoverFatal(&err)
	if err := s.acquireNoCommit(); err != nil {
		return err
	}
	s.mu.RUnlock()
	if !s.recovered.Load() {
		s.setLocalOffset(offset)
		return nil
	}
	// After recovery the offsets come from this process's own changelog
	// writes (goka sets the offset of each acknowledged write). The store
	// holds every record up to the local offset only while those writes
	// follow one another: a gap means another writer's records lie in
	// between, and moving past them would make the next recovery skip them
	// (a zombie owner resumed after a pause, its late write acknowledged
	// past the new owner's records: those records were lost to it for good).
	cur, ok := s.localOffset()
	if !ok {
		cur = -1
	}
	if s.offsetGap.Load() || offset <= cur {
		return nil
	}
	// goka does not report a write at offset 0: the first owner of an empty
	// changelog sees its second write (offset 1) first, and takes offset 0
	// as its own. (A foreign record at offset 0 would need another writer
	// to write the first record of the changelog after this store's
	// recovery, with nothing before it.) Without this, that owner never
	// recorded an offset, re-read the whole changelog at its next start and
	// put back older values over its own last writes whose changelog
	// records never went out (a clean stop in the middle of a callback):
	// an advance repeated after a clean restart.
	if offset != cur+1 && !(cur == -1 && offset == 1) {
		s.offsetGap.Store(true)
		s.logf("store %s: changelog write at offset %d does not follow the local offset %d: another writer wrote in between; the local offset stays at %d, so the next recovery re-reads from there", s.dir, offset, cur, cur)
		return nil
	}
	s.setLocalOffset(offset)
	if !s.persistDue(offset) {
		return nil
	}
	return s.putOffset(offset)
}

// Recovered reports whether the store has been marked recovered
// (MarkRecovered returned: goka's restore from the changelog caught up).
// Until then its contents are the changelog as restored so far. Safe for
// concurrent use.
func (s *Store) Recovered() bool { return s.recovered.Load() }

// MarkRecovered builds the indexes of a store that was fresh at Open (its
// recovery wrote the table only), persists the local offset (if non-zero)
// and switches to persisting every SetOffset.
func (s *Store) MarkRecovered() (err error) {
	defer s.recoverFatal(&err)
	if s.recovered.Load() {
		return nil // once (adversary round 20b: OnRecovered ran again)
	}
	filtered, err := s.endRecovery()
	if err != nil {
		return err
	}
	s.untune()
	if s.opts.KeyFilter && !filtered {
		// An accelerator only: without it reads go to Pebble.
		if err := s.buildFilter(); err != nil {
			s.logf("store %s: building the key filter: %v (reads of absent keys go to Pebble)", s.dir, err)
		}
	}
	if s.opts.Settled != nil {
		if err := s.markUnsettled(); err != nil {
			return err
		}
	}
	if off, ok := s.localOffset(); ok {
		if err := s.putOffset(off); err != nil {
			return err
		}
	} else {
		// Recovery read nothing: the persisted offset is where the store
		// stands (-1: it holds no record), and the first write must follow
		// it (see SetOffset).
		off, err := s.GetOffset(-1)
		if err != nil {
			return err
		}
		if off >= 0 {
			s.setLocalOffset(off)
		}
	}
	if s.opts.OnRecovered != nil {
		s.opts.OnRecovered()
	}
	s.recovered.Store(true)
	return nil
}
