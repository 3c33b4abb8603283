package instance

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/clients"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/processors/clock"
	"github.com/chronos-scheduler/chronos/processors/history"
	"github.com/chronos-scheduler/chronos/processors/scheduler"
	"github.com/chronos-scheduler/chronos/topology"
)

// Config configures one instance. Every setting is documented once in
// docs/configuration.md under its flag (RegisterFlags binds them). A zero
// field means its default, except Kafka.Brokers and DataDir (required);
// Default returns the defaults written out, as the flags show them.
type Config struct {
	// Kafka is the client configuration of every connection.
	Kafka clients.Config
	// Layout names the topics and groups and sizes the sharded topics.
	Layout topology.Layout
	// DataDir holds the partition stores, the clock table and the job view
	// (required).
	DataDir string
	// Limits on commands (default codecs.DefaultLimits()).
	Limits codecs.Limits
	// Fanout bounds the work of one fan-out callback.
	Fanout Fanout
	// FetchBufferBytes bounds the records each consumer of the instance
	// holds ahead of its callbacks, per partition, counted at the largest
	// record Limits allow (default DefaultFetchBufferBytes; see
	// FetchBufferRecords).
	FetchBufferBytes int
	// Store configures the Pebble partition stores.
	Store Store
	// Clock configures the clock group and this instance's ticker.
	Clock Clock
	// HTTP configures the HTTP API, its job view and the probes (Addr
	// empty: none of them).
	HTTP HTTP
	// History configures the history group and its read API.
	History History
	// LagExecutorGroups are consumer groups on the dispatch topic whose lag
	// /metrics also exports (default none).
	LagExecutorGroups []string
	// PprofAddr serves Go's /debug/pprof on this address (empty: off).
	PprofAddr string
	// LogLevel of the logger New builds when Logger is nil (default info).
	LogLevel slog.Level
	// Producer produces the fan-out's dispatch events (nil: the instance's
	// own franz-go client). Tests wrap one to observe the batches.
	Producer scheduler.Producer
	// Now is the wall clock for fired_at, ticks and readiness (default
	// time.Now).
	Now func() time.Time
	// Registerer receives the metrics. Nil: none, unless the HTTP server is
	// on, which then makes a registry (with Go and process metrics) and
	// serves it on /metrics. A Registerer given with the HTTP server on
	// must be a prometheus.Gatherer too.
	Registerer prometheus.Registerer
	// Logger receives the logs (nil: text on stderr at LogLevel).
	Logger *slog.Logger
}

// Fanout bounds the work of one fan-out callback (see scheduler.Config).
type Fanout struct {
	// ChunkSize is the most due jobs fired per produce-and-ack round
	// (default scheduler.DefaultChunkSize).
	ChunkSize int
	// ChunkBytes is the most bytes of dispatch events a chunk builds
	// before producing them (default scheduler.DefaultChunkBytes).
	ChunkBytes int
	// Budget is how long one callback keeps firing chunks before it
	// continues through the loopback (default scheduler.DefaultChunkBudget).
	Budget time.Duration
	// BackfillRate is the most fires per second (of shard time) one
	// backfill dispatches (default scheduler.DefaultBackfillRate).
	BackfillRate int
}

// History configures the history group (chronos-history): each job's last
// fires with their outcomes and its last commands, served by GET
// /v1/jobs/{id}/fires and /history.
type History struct {
	// Off runs no history group on this instance and serves no history
	// (default false: on).
	Off bool
	// Only runs the history group alone on this instance: no scheduler,
	// clock or router group and no clock ticker, so that the history's CPU
	// is not taken from the fire path (default false). Its HTTP API, job
	// view and history view work as on any instance. Other instances then
	// run with Off.
	Only bool
	// Fires is how many fires are kept per job (default
	// history.DefaultFires, 50); Changes how many commands (default
	// history.DefaultChanges, 20).
	Fires   int
	Changes int
	// CacheBytes is the Pebble block cache of this instance's history group
	// stores together, split evenly over the partitions, at least 1 MiB
	// each (default DefaultHistoryCacheBytes, 192 MiB: 16 MiB a partition at
	// 12 partitions). Every fire and command reads its job's record: a
	// cache that holds the stores' index and filter blocks (and, for small
	// records, most data blocks) makes that read a memory lookup instead of
	// a file read and a decompression (docs/performance.md, issue 13). It
	// is an upper bound: a cache fills only with blocks read.
	CacheBytes int64
}

// DefaultRecoveryL0CompactionThreshold is the default of
// Store.RecoveryL0CompactionThreshold (docs/configuration.md gives the
// measurements behind it).
const DefaultRecoveryL0CompactionThreshold = 32

// DefaultHistoryCacheBytes is the default of History.CacheBytes.
const DefaultHistoryCacheBytes = 192 << 20

// Store configures the Pebble stores of the partitions.
type Store struct {
	// Sync fsyncs every store write (default false).
	Sync bool
	// CacheBytes is the block cache of all partition stores together,
	// split evenly, at least 1 MiB each (default 256 MiB).
	CacheBytes int64
	// MemTableBytes is the base memtable size of a partition store
	// (default scheduler.DefaultMemTableSize); partition p's is staggered
	// up to twice that (see scheduler.StaggeredMemTableSize).
	MemTableBytes uint64
	// RecoveryL0CompactionThreshold is the Pebble L0 compaction threshold
	// the scheduler's and the job view's partition stores compact under
	// while they recover from an empty directory (default
	// DefaultRecoveryL0CompactionThreshold; 0: Pebble's own, 4,
	// throughout; see store.Options).
	RecoveryL0CompactionThreshold int
	// FS is the file system of the stores (default: the operating
	// system's; tests inject faults through it).
	FS vfs.FS
}

// Clock configures the clock group and this instance's ticker.
type Clock struct {
	// Resolution of the clock: fires are dispatched at this granularity
	// (default clock.DefaultResolution).
	Resolution time.Duration
	// MaxAhead bounds how far a tick may be ahead of the broker's
	// timestamp (default clock.DefaultMaxAhead; negative: unbounded, for
	// simulated clocks).
	MaxAhead time.Duration
	// NoTicker disables this instance's ticker (tests drive time).
	NoTicker bool
}

// HTTP configures the HTTP API (writes and reads), its job view, /metrics,
// the health checks and the separate probe listener.
type HTTP struct {
	// Addr is the address of the API, /metrics and the health checks
	// (empty: no HTTP server and no job view).
	Addr string
	// Server bounds the server's timeouts and connections (zero fields:
	// the api.HTTPOptions defaults).
	Server api.HTTPOptions
	// Token is the deprecated single admin token (prefer TokensFile).
	Token string
	// TokensFile holds named, hashed tokens with roles and prefixes.
	TokensFile string
	// InsecureNoAuth allows serving the API without credentials when
	// RequireAuth is set.
	InsecureNoAuth bool
	// RequireAuth refuses to start without credentials unless
	// InsecureNoAuth (set by `chronos run`; dev only warns).
	RequireAuth bool
	// AllowedOrigins are the browser origins besides the API's own that may
	// call /v1.
	AllowedOrigins []string
	// AllowedHosts are the Host values the API answers (default: on
	// loopback localhost, 127.0.0.1 and [::1] with the port; elsewhere any).
	AllowedHosts []string
	// ProbeAddr also serves /healthz, /readyz and /metrics there (empty: off).
	ProbeAddr string
}

// Default returns the configuration with every default written out, on
// brokers: the defaults the flags show.
func Default(brokers ...string) Config {
	return Config{
		Kafka:            clients.Default(brokers...),
		Layout:           topology.Layout{Partitions: topology.DefaultPartitions, Replication: -1},
		DataDir:          "./.chronos",
		Limits:           codecs.DefaultLimits(),
		FetchBufferBytes: DefaultFetchBufferBytes,
		Fanout:           Fanout{ChunkSize: scheduler.DefaultChunkSize, ChunkBytes: scheduler.DefaultChunkBytes, Budget: scheduler.DefaultChunkBudget, BackfillRate: scheduler.DefaultBackfillRate},
		Store:            Store{CacheBytes: defaultCacheBytes, MemTableBytes: scheduler.DefaultMemTableSize, RecoveryL0CompactionThreshold: DefaultRecoveryL0CompactionThreshold},
		Clock:            Clock{Resolution: clock.DefaultResolution, MaxAhead: clock.DefaultMaxAhead},
		History:          History{Fires: history.DefaultFires, Changes: history.DefaultChanges, CacheBytes: DefaultHistoryCacheBytes},
		HTTP: HTTP{Server: api.HTTPOptions{ReadTimeout: api.DefaultReadTimeout, WriteTimeout: api.DefaultWriteTimeout,
			IdleTimeout: api.DefaultIdleTimeout, MaxConns: api.DefaultMaxConns}},
		LogLevel: slog.LevelInfo,
	}
}

const defaultCacheBytes = 256 << 20

// DefaultFetchBufferBytes is the default FetchBufferBytes: with Kafka's
// default max.message.bytes on the inbound topics, 3 records per partition.
const DefaultFetchBufferBytes = 4 << 20

// FetchBufferRecords is how many records a consumer may hold ahead of its
// callbacks per partition so that they stay under bytes even if each is as
// large as largest, the largest record a consumer can be handed (the
// inbound topics' max.message.bytes, or a command with the largest payload
// if that is larger): bytes / largest, at least 1 and at most 256 (goka's
// default, the most measured).
func FetchBufferRecords(bytes, largest int) int {
	return min(max(bytes/largest, 1), 256)
}

// The history group's stores and the history view's, per partition: up
// to two memtables of HistoryStoreMemTableBytes each (the view's:
// HistoryViewStoreMemTableBytes), and for the view's a block cache of
// HistoryStoreCacheBytes. Small on purpose: a history
// record is a few KiB, and nothing on the fire path waits for these stores
// (issue 13: with the view's defaults, 8 MiB and 4 MiB, twice P stores held
// tens of MiB more). The group's stores read a record for every fold:
// their cache is History.CacheBytes, and their tables carry Bloom filters
// of HistoryStoreBloomBits bits per key, so that a read skips the files
// that do not hold its job (every file, for a job's first command).
// Both persist their local changelog offset every HistoryStoreOffsetEvery
// offsets (store.Options.OffsetEvery; the group's stores by default,
// history.StoreOffsetEvery) instead of once per record: their writes are
// whole records and the group's folds are idempotent, so a crash only
// re-reads up to that many changelog records a partition.
const (
	HistoryStoreCacheBytes    = 1 << 20
	HistoryStoreMemTableBytes = 2 << 20
	// HistoryViewStoreMemTableBytes is the history view's: 1 MiB, its
	// cache's size (2 MiB until 2026-12-06: 48 MiB for 12 partitions'
	// two memtables each, against 24 MiB now). Both grow with
	// --history-fires and --history-changes (Config.historyMemTableBytes).
	HistoryViewStoreMemTableBytes = 1 << 20
	HistoryStoreBloomBits         = 10
	HistoryStoreOffsetEvery       = history.StoreOffsetEvery
)

// ErrNoCredentials is why an instance with RequireAuth refuses to start.
var ErrNoCredentials = errors.New("instance: the HTTP API has no credentials: give --tokens-file (make tokens with `chronos tokens new`) " +
	"or CHRONOS_API_TOKEN, or pass --insecure-no-auth to let anyone who reaches --http-addr create, change and fire jobs")

// Validate reports every problem with c; New calls it.
func (c Config) Validate() error {
	errs := []error{c.Kafka.Validate(), c.Layout.Validate()}
	if c.DataDir == "" {
		errs = append(errs, errors.New("instance: no data dir"))
	}
	if c.Limits == (codecs.Limits{}) {
		c.Limits = codecs.DefaultLimits()
	}
	if c.Limits.MaxPayload+4<<10 > c.Kafka.BatchBytes {
		errs = append(errs, fmt.Errorf("instance: max payload %d bytes does not fit a dispatch event into batch bytes %d; raise --batch-bytes (and the broker's message.max.bytes)",
			c.Limits.MaxPayload, c.Kafka.BatchBytes))
	}
	if b := c.FetchBufferBytes; b != 0 && (b < 1<<20 || b > 1<<30) {
		errs = append(errs, fmt.Errorf("instance: fetch buffer bytes %d, want 1 MiB..1 GiB", c.FetchBufferBytes))
	}
	if t := c.Store.RecoveryL0CompactionThreshold; t < 0 || t > 64 {
		errs = append(errs, fmt.Errorf("instance: --store-recovery-l0-compaction-threshold %d, want 0 (off: Pebble's 4 throughout) to 64", t))
	}
	if c.HTTP.Addr != "" && c.Registerer != nil {
		if _, ok := c.Registerer.(prometheus.Gatherer); !ok {
			errs = append(errs, errors.New("instance: with the HTTP server on, Registerer must be a prometheus.Gatherer (it serves /metrics)"))
		}
	}
	if c.History.Off && c.History.Only {
		errs = append(errs, errors.New("instance: --history-only with --no-history: choose one"))
	}
	if c.History.CacheBytes < 0 {
		errs = append(errs, fmt.Errorf("instance: history cache %d bytes, want 0 (default) or more", c.History.CacheBytes))
	}
	if h := c.History; !h.Off && (h.Fires < 0 || h.Fires > history.MaxFires || h.Changes < 0 || h.Changes > history.MaxChanges) {
		errs = append(errs, fmt.Errorf("instance: history keeps %d fires and %d changes per job, want 1..%d and 1..%d",
			h.Fires, h.Changes, history.MaxFires, history.MaxChanges))
	}
	if h := c.History; !h.Off {
		if b := historyRecordBytes(h.Fires, h.Changes); b > c.Kafka.BatchBytes {
			errs = append(errs, fmt.Errorf("instance: a job's history record (%d fires, %d changes) can reach %d bytes, more than batch bytes %d: its changelog write would fail; keep fewer (--history-fires, --history-changes) or raise --batch-bytes (and the broker's message.max.bytes)",
				orDefault(h.Fires, history.DefaultFires), orDefault(h.Changes, history.DefaultChanges), b, c.Kafka.BatchBytes))
		}
	}
	errs = append(errs, c.HTTP.validate())
	return errors.Join(errs...)
}

// historyRecordBytes bounds a job's history record as a Kafka record of
// the history table's changelog: its fires and changes at their largest
// (codecs.HistoryFireBytes, HistoryChangeBytes), its key (a job id) and
// the record's framing and headers (0 fires or changes: the defaults).
func historyRecordBytes(fires, changes int) int {
	fires, changes = orDefault(fires, history.DefaultFires), orDefault(changes, history.DefaultChanges)
	return fires*codecs.HistoryFireBytes + changes*codecs.HistoryChangeBytes + codecs.MaxIDLen + 1<<10
}

func orDefault(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}

// validate checks the access settings: RequireAuth refuses to start without
// credentials unless InsecureNoAuth, and the tokens file must load.
func (h HTTP) validate() error {
	hasCreds := h.TokensFile != "" || h.Token != ""
	switch {
	case hasCreds && h.InsecureNoAuth:
		return errors.New("instance: --insecure-no-auth with credentials (--tokens-file or --api-token): choose one")
	case !hasCreds && h.RequireAuth && !h.InsecureNoAuth:
		return ErrNoCredentials
	}
	_, err := h.tokens()
	return err
}

// tokens loads TokensFile (nil without one).
func (h HTTP) tokens() (*api.Tokens, error) {
	if h.TokensFile == "" {
		return nil, nil
	}
	return api.LoadTokens(h.TokensFile)
}

// warn logs what is allowed but unsafe: the deprecated token, and an API
// without credentials beyond loopback.
func (h HTTP) warn(log *slog.Logger) {
	if h.Addr == "" {
		return
	}
	if h.Token != "" {
		log.Warn("--api-token (CHRONOS_API_TOKEN) is deprecated: one unnamed admin token; use --tokens-file for named tokens with roles")
	}
	if h.TokensFile == "" && h.Token == "" && api.LoopbackHosts(h.Addr) == nil {
		log.Warn("WARNING: the HTTP API listens beyond loopback WITHOUT CREDENTIALS: anyone who reaches it can create, change and fire jobs; "+
			"give --tokens-file or bind --http-addr to 127.0.0.1", "http_addr", h.Addr)
	}
}

// NewLogger returns the logger of c: Logger, or text on stderr at LogLevel.
func (c Config) NewLogger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: c.LogLevel}))
}

// cacheBytes is one partition store's share of the block cache.
func (c Config) cacheBytes() int64 {
	total := c.Store.CacheBytes
	if total == 0 {
		total = defaultCacheBytes
	}
	return max(total/int64(c.Layout.Partitions), 1<<20)
}

// historyMemTableBytes is the memtable size of a history store (the
// group's or the view's) whose default is base: base, or four of the
// largest records a job's history can have with this History.Fires and
// History.Changes if that is more. Pebble writes a batch of more than half
// a memtable as a memtable of its own, flushed at once: with 1 MiB
// memtables and --history-fires 1000 (records of up to ~1 MB) every write
// of a long history would be a flush. At the defaults (records of at most
// ~56 KB with the key) it is base.
func (c Config) historyMemTableBytes(base uint64) uint64 {
	return max(base, 4*uint64(historyRecordBytes(c.History.Fires, c.History.Changes)))
}

// historyCacheBytes is the block cache of each history group store.
func (c Config) historyCacheBytes() int64 {
	total := c.History.CacheBytes
	if total == 0 {
		total = DefaultHistoryCacheBytes
	}
	return max(total/int64(c.Layout.Partitions), 1<<20)
}

func (c Config) resolution() time.Duration {
	if c.Clock.Resolution == 0 {
		return clock.DefaultResolution
	}
	return c.Clock.Resolution
}

func (c Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}
