// Package scheduler is the fan-out group: it applies job commands to the job
// table, and on each shard trigger fires every due job of its partition,
// producing dispatch events.
//
// Each partition keeps its jobs in a local Pebble store (store/) with a due
// index derived from the table and the shard watermark. An advance to T scans
// the due index up to T in bounded chunks; each chunk's dispatch events are
// produced and acknowledged before the chunk's index entries move forward,
// and the watermark T is written only after the last chunk. A crash at any
// point therefore repeats fires (same fire_id) but never loses one.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/lovoo/goka/storage"

	"github.com/chronos-scheduler/chronos/clients"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/processors/inputs"
	"github.com/chronos-scheduler/chronos/schedule"
	"github.com/chronos-scheduler/chronos/store"
	"github.com/chronos-scheduler/chronos/topology"
)

// Defaults of Config.
const (
	DefaultChunkSize   = 25000
	DefaultChunkBudget = 500 * time.Millisecond
	DefaultMaxCatchUp  = 100
	DefaultChunkBytes  = 8 << 20
)

// Msg is one record to produce.
type Msg struct {
	Key     string
	Value   []byte
	Headers map[string][]byte // nil for dispatch events
}

// Producer produces records (dispatch events, and a bulk operation's
// commands to chronos-jobs) and returns once every one is acknowledged by
// the broker (or with the first error).
type Producer interface {
	ProduceSync(ctx context.Context, topic string, msgs []Msg) error
}

// Config configures the scheduler group.
type Config struct {
	Layout topology.Layout
	// DataDir is where each partition's Pebble store lives
	// (<DataDir>/<table topic>/<partition>).
	DataDir string
	// Store options for every partition store (Indexer is set by the scheduler).
	Store store.Options
	// Limits on commands (default codecs.DefaultLimits()).
	Limits codecs.Limits
	// Calendars answers for the named calendars jobs exclude
	// (exclude.calendars), at each fire; nil: they exclude nothing.
	Calendars schedule.CalendarSource
	// ChunkSize is the most due jobs fired per callback (default 25000);
	// the rest continues through a loopback message.
	ChunkSize int
	// ChunkBudget is how long one callback keeps firing chunks before it
	// continues through the loopback (default 500ms). Each loopback is a
	// round trip through Kafka; each callback blocks the shard's other
	// inputs (commands, triggers) while it runs.
	ChunkBudget time.Duration
	// ChunkBytes bounds the dispatch events one chunk builds in memory
	// before producing them (default 8 MiB): a chunk ends early, after at
	// least one fire, once its events reach it, and a job's catch-up is cut
	// into chunks (it stays due at its first undispatched fire). Bucket
	// fires use the same bound. Memory for fan-out is about ChunkBytes per
	// partition firing at once, plus ~4 MiB of job records.
	ChunkBytes int
	// MaxCatchUp bounds the late fires a fire_all job dispatches per advance (default 100).
	MaxCatchUp int
	// BackfillRate is the most fires per second of shard time one backfill
	// dispatches (default DefaultBackfillRate; 1..MaxBackfillRate).
	BackfillRate int
	// Producer produces dispatch events and bulk commands (required).
	Producer Producer
	// Now is the wall clock for fired_at (default time.Now). Fire decisions
	// use the time carried by the trigger, never Now.
	Now func() time.Time
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Metrics (nil: none).
	Metrics *Metrics
	// Inputs is the policy for records that cannot be applied (default:
	// rejects emitted through goka, see inputs.Policy).
	Inputs *inputs.Policy
	// Durable returns once the table writes made before it, the callback
	// ctx's of key among them, have reached the table's changelog (the
	// broker acknowledged them), or the error that stopped one. Each
	// callback of a pass writes that it may fire (PassOpen), and each
	// bucket chunk that it is open, and waits so before its first fire; a
	// bucket chunk waits for its end too (docs/reliability.md). The
	// instance wires it to the producer goka writes the changelog with
	// (clients.WriteAcks, which waits for every earlier write of the
	// topic); nil does not wait, and a crash between a callback's fires
	// and its changelog write can then lose the record that they went out.
	Durable func(ctx goka.Context, key string) error
	// Writes, when set, counts the records the processor's goka producer
	// writes, to its table's changelog, its loop and its outputs (the
	// instance wires clients.WriteAcks.All): a partition store closes as
	// settled only when none of them failed while it was open, every one
	// sent before its close has finished, and no callback failed
	// (store.Options.Settled); any other end (a kill, a crash, a failed
	// write or callback) makes the next Open on this data dir discard the
	// store and restore the partition from its changelog. nil: a kept
	// store is trusted, and a restart on the same data dir after a crash
	// can keep writes the changelog never got, or index moves whose
	// loopbacks never went out (docs/reliability.md, "A store ahead of its
	// changelog").
	Writes ProcessorWrites
}

// ProcessorWrites is what a partition store asks about the processor's
// writes when it closes (Config.Writes).
type ProcessorWrites = clients.Writes

// settleWait bounds how long a partition store's close waits for the
// changelog writes in flight (Config.Changelog); past it the store is
// discarded at its next Open.
const settleWait = 10 * time.Second

func (c *Config) setDefaults() {
	if c.Limits == (codecs.Limits{}) {
		c.Limits = codecs.DefaultLimits()
	}
	if c.ChunkSize == 0 {
		c.ChunkSize = DefaultChunkSize
	}
	if c.ChunkBudget == 0 {
		c.ChunkBudget = DefaultChunkBudget
	}
	if c.ChunkBytes == 0 {
		c.ChunkBytes = DefaultChunkBytes
	}
	if c.MaxCatchUp == 0 {
		c.MaxCatchUp = DefaultMaxCatchUp
	}
	if c.BackfillRate == 0 {
		c.BackfillRate = DefaultBackfillRate
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Inputs == nil {
		c.Inputs = &inputs.Policy{Rejects: c.Layout.Rejects(), Logger: c.Logger}
	}
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if err := c.Layout.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.DataDir == "" && c.Store.FS == nil {
		errs = append(errs, errors.New("scheduler: no data dir"))
	}
	if c.ChunkSize < 1 || c.ChunkSize > 1_000_000 {
		errs = append(errs, fmt.Errorf("scheduler: chunk size %d, want 1..1000000", c.ChunkSize))
	}
	if c.ChunkBytes < 1<<10 || c.ChunkBytes > 1<<30 {
		errs = append(errs, fmt.Errorf("scheduler: chunk bytes %d, want 1KiB..1GiB", c.ChunkBytes))
	}
	if c.MaxCatchUp < 1 {
		errs = append(errs, fmt.Errorf("scheduler: max catch-up %d, want >= 1", c.MaxCatchUp))
	}
	if c.BackfillRate < 1 || c.BackfillRate > MaxBackfillRate {
		errs = append(errs, fmt.Errorf("scheduler: backfill rate %d, want 1..%d", c.BackfillRate, MaxBackfillRate))
	}
	if c.Limits.MaxPayload < 1 || c.Limits.MaxPayload > 16<<20 {
		errs = append(errs, fmt.Errorf("scheduler: max payload %d, want 1..16MiB", c.Limits.MaxPayload))
	}
	if c.Producer == nil {
		errs = append(errs, errors.New("scheduler: no producer"))
	}
	if m := c.Store.MemTableSize; m != 0 && (m < 1<<20 || m > 1<<30) {
		errs = append(errs, fmt.Errorf("scheduler: store memtable size %d, want 1MiB..1GiB", m))
	}
	return errors.Join(errs...)
}

// Scheduler is the scheduler group. Its callbacks run on goka's partition
// goroutines; the store registry is safe for concurrent use.
type Scheduler struct {
	cfg       Config
	shardKeys []string
	schedules *schedule.Cache
	stores    store.Registry
	// failedCallbacks counts the callbacks that did not return (counted).
	failedCallbacks atomic.Uint64
	// started holds, per partition (int32), when its store last finished
	// recovering and how long the restore took (PartitionTimes without a
	// watermark): Partitions' RecoveredAt and Restore.
	started sync.Map
	// announcedSrc, when set (SetAnnouncedSource), is the instance's
	// announced time; else Announced.
	announcedSrc atomic.Pointer[func() time.Time]
	// tableSrc, when set (SetClockTable), reads the clock table's latest
	// announced time: a recovered partition has caught up only once its
	// watermark reaches it (noteCaughtUp).
	tableSrc  atomic.Pointer[func() time.Time]
	pending   pendingBuckets
	fence     *fence
	passes    passes
	announced announced
}

// New returns a scheduler for cfg.
func New(cfg Config) (*Scheduler, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	keys, err := topology.ShardKeys(cfg.Layout.Partitions)
	if err != nil {
		return nil, err
	}
	s := &Scheduler{cfg: cfg, shardKeys: keys, schedules: schedule.NewCache(100_000), fence: &fence{w: freezes()}}
	return s, nil
}

// Group returns the group name.
func (s *Scheduler) Group() goka.Group { return s.cfg.Layout.SchedulerGroup() }

// Graph returns the group graph: commands and shard triggers in, loopback for
// continuations, the job table persisted, rejects out. Dispatch events do
// not go through goka: every fire is produced by the Producer (dispatch).
func (s *Scheduler) Graph() *goka.GroupGraph {
	n := s.cfg.Layout.Names
	return goka.DefineGroup(n.SchedulerGroup(),
		clients.Input(n.Jobs(), s.counted(s.onCommand)),
		clients.Input(n.ShardTriggers(), s.counted(s.onTrigger)),
		clients.Loop(s.counted(s.onLoop)),
		// Backfill steps: sent by completed advances, consumed here.
		clients.Input(n.SchedulerBackfill(), s.counted(s.onBackfill)),
		goka.Output(n.SchedulerBackfill(), new(codec.Bytes)),
		goka.Persist(new(codec.Bytes)),
		goka.Output(n.Rejects(), new(codec.Bytes)),
		// Bulk operations write one command per job they change.
		goka.Output(n.Jobs(), new(codec.Bytes)),
	)
}

// counted wraps a callback so that one that does not return (ctx.Fail, a
// panic: goka then stops the processor, and the input is consumed again)
// is counted: a store open meanwhile may have moved index entries or
// written records for work whose loopbacks never went out, so it does not
// close settled (Config.Writes).
func (s *Scheduler) counted(cb goka.ProcessCallback) goka.ProcessCallback {
	return func(ctx goka.Context, msg any) {
		done := false
		defer func() {
			if !done {
				s.failedCallbacks.Add(1)
			}
		}()
		cb(ctx, msg)
		done = true
	}
}

// Options returns the processor options the scheduler needs (its storage).
func (s *Scheduler) Options() []goka.ProcessorOption {
	// Tombstones reach the callbacks (goka drops them by default), so the
	// input policy can reject them.
	return []goka.ProcessorOption{goka.WithStorageBuilder(s.StorageBuilder()), goka.WithNilHandling(goka.NilProcess)}
}

// StorageBuilder returns the goka storage builder: one Pebble store per
// partition with the scheduler's indexer, registered for the fan-out.
func (s *Scheduler) StorageBuilder() storage.Builder {
	return s.stores.Builder(s.cfg.DataDir, func(partition int32) store.Options {
		opts := s.cfg.Store
		if opts.Logger == nil {
			log := s.cfg.Logger.With("partition", partition)
			opts.Logger = func(format string, args ...any) { log.Debug(fmt.Sprintf(format, args...)) }
		}
		if partition >= 0 && partition < int32(len(s.shardKeys)) {
			shardKey := s.shardKeys[partition]
			opts.Indexer = s.indexer(shardKey)
			// The indexer derives every entry from the shard's watermark in
			// the table: a rebuild of the whole table is current up to it,
			// so the first advance after a deferred recovery does not
			// rebuild it again (rebuildIfBehind).
			opts.IndexTime = func(r store.Reader) (time.Time, error) { return s.watermark(r, shardKey) }
			// Every command reads the shard record (and the indexer its
			// watermark); an advance writes it: kept in memory between.
			opts.CachedKey = shardKey
			// DeferIndexOnRecovery comes with opts from Config.Store; the
			// instance sets it (docs/architecture.md, "Deferred indexing
			// on recovery"), the simulation in half its seeds.
		}
		if w := s.cfg.Writes; w != nil {
			settled, failedCallbacks := clients.SettledSince(w, settleWait, "the processor"), s.failedCallbacks.Load()
			opts.Settled = func() error {
				if err := settled(); err != nil {
					return err
				}
				if n := s.failedCallbacks.Load() - failedCallbacks; n > 0 {
					return fmt.Errorf("%d callbacks failed while the store was open", n)
				}
				return nil
			}
			opts.OnDiscarded = func(dir string) {
				s.cfg.Logger.Warn("the partition store was not closed settled (a crash, a kill, a failed write or callback): discarded (moved aside); restoring the partition from its changelog",
					"partition", partition, "dir", dir)
			}
		}
		opts.MemTableSize = StaggeredMemTableSize(s.cfg.Store.MemTableSize, partition)
		built := time.Now() // the partition was assigned to this instance
		opts.OnRecovered = func() {
			now := time.Now()
			s.pending.recovered(partition, now)
			s.started.Store(partition, PartitionTimes{RecoveredAt: now, Restore: now.Sub(built), announcedAtRecovery: s.known()})
		}
		return opts
	})
}

// StaggeredMemTableSize is the memtable size of partition p's store: base
// (0: DefaultMemTableSize) plus p mod 12 twelfths of base. Under an even load every partition
// store fills its memtable at the same rate; with equal sizes all of them
// would flush and compact in the same second (measured: twelve ~1 s
// compactions at once every ~14 s at 1M jobs a minute, delaying that
// second's fires by up to a second). Different sizes spread them out.
func StaggeredMemTableSize(base uint64, p int32) uint64 {
	if base == 0 {
		base = DefaultMemTableSize
	}
	return base + uint64(max(p, 0)%12)*base/12
}

// DefaultMemTableSize is the default base memtable size of a partition
// store (pebble's own default).
const DefaultMemTableSize = 4 << 20

// OpenStores returns how many partition stores are open on this instance.
func (s *Scheduler) OpenStores() int { return s.stores.Len() }

// Store returns the open store of a partition, or nil.
func (s *Scheduler) Store(p int32) *store.Store { return s.stores.Get(p) }

// Written returns the bytes the partition stores open on this instance
// wrote since they opened (store.Store.Written), summed. Safe for
// concurrent use; a store closing meanwhile is left out.
func (s *Scheduler) Written() store.Writes {
	var sum store.Writes
	for p := range s.cfg.Layout.Partitions {
		st := s.stores.Get(p)
		if st == nil {
			continue
		}
		if w, err := st.Written(); err == nil {
			sum = store.Writes{WAL: sum.WAL + w.WAL, Flush: sum.Flush + w.Flush, Compaction: sum.Compaction + w.Compaction}
		}
	}
	return sum
}

// indexer derives a job's index entries: its bucket, and its due time by
// the one rule for it, codecs.JobRecord.Due (for an active job, its first
// fire after the time it has been handled through: the record's Through
// when it owes fires behind the watermark, else the later of the shard
// watermark and the job's NotBefore). The entries are a function of the
// record and the shard's watermark alone, so a rebuild gives them back.
//
// Each store gets its own indexer, which caches the shard watermark: every
// write of the shard record goes through Set and so through the indexer,
// which refreshes the cache before the value is stored.
func (s *Scheduler) indexer(shardKey string) store.Indexer {
	var (
		w      time.Time
		cached bool
	)
	return func(r store.Reader, key string, value []byte) (store.Entry, error) {
		if codecs.IsShardRecord(value) {
			if key == shardKey {
				w, cached = s.decodeShard(key, value).Watermark, true
				// Every later record is indexed from w: a replay of an
				// older shard record lowers what the store says it indexed
				// up to, so the next advance rebuilds (adversary 21).
				return store.Entry{HasIndexTime: true, IndexTime: w}, nil
			}
			return store.Entry{}, nil
		}
		// The record is not kept: one from the pool spares an index pass
		// (every record of a recovered partition) an allocation each.
		rec := codecs.GetJobRecord()
		defer codecs.PutJobRecord(rec)
		if err := codecs.DecodeJobRecordInto(value, rec); err != nil {
			s.cfg.Logger.Error("undecodable job record; it will not fire", "job", key, "err", err)
			return store.Entry{}, nil
		}
		// A tombstone is due once its retention has passed (the advance
		// that reaches it purges it); a paused job only for a fire it owed
		// before the pause; an active one from where it has been handled
		// through (codecs.JobRecord.Due).
		e := store.Entry{Bucket: indexedBucket(rec)}
		var sched schedule.Schedule
		var err error
		switch rec.Status {
		case codecs.StatusActive, codecs.StatusPaused:
			if sched, err = jobSchedule(s.schedules, key, rec); err != nil {
				sched = nil
				if rec.Status == codecs.StatusActive {
					s.cfg.Logger.Error("job record with an invalid schedule; it will not fire", "job", key, "err", err)
				}
			}
		}
		// Active and paused records both read the watermark (a paused one
		// past its OwedAt is handled up to it; adversary 15c).
		if (rec.Status == codecs.StatusActive || rec.Status == codecs.StatusPaused) && !cached {
			if w, err = s.watermark(r, shardKey); err != nil {
				return store.Entry{}, err
			}
			cached = true
		}
		e.Due = rec.Due(w, sched)
		return e, nil
	}
}

// indexedBucket is the bucket-index entry of a job record: its bucket, or
// none once deleted. The indexer writes it; the fan-out's moves restate it
// (store.Move.Bucket) instead of reading it back.
func indexedBucket(rec *codecs.JobRecord) string {
	if rec.Status == codecs.StatusDeleted {
		return ""
	}
	return rec.Job.Bucket
}

func (s *Scheduler) watermark(r store.Reader, shardKey string) (time.Time, error) {
	b, err := r.Get(shardKey)
	if err != nil {
		return time.Time{}, err
	}
	return s.decodeShard(shardKey, b).Watermark, nil
}

// decodeShard decodes a shard record. The table topics are not inputs, but
// a record nobody can read there (written by hand, by a tool, by a bug)
// must not stop the partition at every restore: it is logged and read as
// the zero record, so the shard re-derives its jobs from their own records
// (handled through, or since their put) and the next advance writes a good
// one. Fires since then within their grace go out again, with the same
// fire_ids; later ones follow the misfire policy.
//
// It leaves the bulk state undecoded (codecs.DecodeShardHead): commands,
// advances and the indexer never read it, and writing the record back
// keeps it. The bulk operations decode it (decodeShardBulk).
func (s *Scheduler) decodeShard(key string, b []byte) codecs.ShardRecord {
	return s.decodeShardWith(codecs.DecodeShardHead, key, b)
}

// decodeShardBulk decodes a shard record with its bulk state, as
// decodeShard does otherwise.
func (s *Scheduler) decodeShardBulk(key string, b []byte) codecs.ShardRecord {
	return s.decodeShardWith(codecs.DecodeShardRecord, key, b)
}

func (s *Scheduler) decodeShardWith(decode func([]byte) (codecs.ShardRecord, error), key string, b []byte) codecs.ShardRecord {
	rec, err := decode(b)
	if err != nil {
		s.cfg.Logger.Error("unreadable shard record in the table; reading it as none (fires since the last good one may repeat)", "key", key, "err", err)
		return codecs.ShardRecord{}
	}
	return rec
}
