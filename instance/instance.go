// Package instance is one Chronos instance: its configuration, and New, Run
// and Ready, which build and run the scheduler group, the clock group, the
// router group and the clock ticker, each restarted with backoff when it
// fails (goka processors stop on broker errors by design).
package instance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lovoo/goka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/clients"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/processors/clock"
	"github.com/chronos-scheduler/chronos/processors/inputs"
	"github.com/chronos-scheduler/chronos/processors/router"
	"github.com/chronos-scheduler/chronos/processors/scheduler"
	"github.com/chronos-scheduler/chronos/store"
	"github.com/chronos-scheduler/chronos/topology"
)

// Config configures one instance.
type Config struct {
	Kafka  clients.Config
	Layout topology.Layout
	// DataDir holds the partition stores (required).
	DataDir string
	// Limits on commands (default codecs.DefaultLimits()).
	Limits codecs.Limits
	// ChunkSize and ChunkBudget: see scheduler.Config (defaults 25000, 500ms).
	ChunkSize   int
	ChunkBudget time.Duration
	// ChunkBytes: see scheduler.Config (default 8 MiB).
	ChunkBytes int
	// Producer produces the fan-out's dispatch events (nil: the instance's
	// own franz-go client). Tests wrap one to observe the batches.
	Producer scheduler.Producer
	// Resolution of the clock (default 1s).
	Resolution time.Duration
	// ClockMaxAhead bounds how far a tick may be ahead of the broker's
	// timestamp (default 1s; negative: unbounded, for simulated clocks).
	ClockMaxAhead time.Duration
	// NoTicker disables this instance's clock ticker (tests drive time).
	NoTicker bool
	// SyncStore fsyncs every store write (default false).
	SyncStore bool
	// StoreCacheBytes is the Pebble block cache of all partition stores
	// together, split evenly (default 256 MiB).
	StoreCacheBytes int64
	// StoreMemTableBytes is the base memtable size of a partition store
	// (default 4 MiB); partition p's is staggered up to twice that (see
	// scheduler.StaggeredMemTableSize).
	StoreMemTableBytes uint64
	// StoreFS is the file system of the partition stores (default: the
	// operating system's; tests inject faults through it).
	StoreFS vfs.FS
	// Now is the wall clock for fired_at and ticks (default time.Now).
	Now func() time.Time
	// Registerer receives the metrics (nil: none).
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

// Instance is one running instance. Create with New, then Run.
type Instance struct {
	cfg    Config
	sched  *scheduler.Scheduler
	clock  *clock.Clock
	route  *router.Router
	kgo    *kgo.Client
	ticker *clock.Ticker // nil with NoTicker
	fatal  *fatalSignal
	log    *slog.Logger
	mu     struct {
		sync.Mutex
		procs map[goka.Group]*goka.Processor
	}
}

// New validates cfg, creates missing topics and builds the groups.
func New(ctx context.Context, cfg Config) (*Instance, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.DataDir == "" {
		return nil, errors.New("instance: no data dir")
	}
	if err := errors.Join(cfg.Kafka.Validate(), cfg.Layout.Validate()); err != nil {
		return nil, err
	}
	if cfg.Limits == (codecs.Limits{}) {
		cfg.Limits = codecs.DefaultLimits()
	}
	if cfg.Limits.MaxPayload+4<<10 > cfg.Kafka.BatchBytes {
		return nil, fmt.Errorf("instance: max payload %d bytes does not fit a dispatch event into batch bytes %d; raise --batch-bytes (and the broker's message.max.bytes)",
			cfg.Limits.MaxPayload, cfg.Kafka.BatchBytes)
	}
	// No linger on this client: the fan-out hands over a whole chunk at once
	// and waits for its acks, so waiting for more records only adds delay.
	cl, err := cfg.Kafka.NewKgo(kgo.RecordDeliveryTimeout(2*time.Minute), kgo.ProducerLinger(0))
	if err != nil {
		return nil, err
	}
	if err := ensureTopics(ctx, cl, cfg.Kafka, cfg.Layout); err != nil {
		cl.Close()
		return nil, err
	}
	fatal := &fatalSignal{ch: make(chan struct{})}
	var metrics *scheduler.Metrics
	// One input policy for every group: rejects are produced through the
	// franz-go client with bounded retries, so a reject that cannot be
	// written is counted and skipped instead of failing the partition.
	in := &inputs.Policy{Rejects: cfg.Layout.Rejects(), Producer: cl, Logger: cfg.Logger.With("component", "inputs")}
	if cfg.Registerer != nil {
		metrics = scheduler.NewMetrics(cfg.Registerer)
		in.Metrics = inputs.NewMetrics(cfg.Registerer)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	producer := cfg.Producer
	if producer == nil {
		producer = scheduler.KgoProducer{Client: cl}
	}
	sched, err := scheduler.New(scheduler.Config{Layout: cfg.Layout, DataDir: cfg.DataDir, Store: store.Options{Sync: cfg.SyncStore, CacheSize: cacheBytes(cfg), MemTableSize: cfg.StoreMemTableBytes, OnFatal: fatal.report, FS: cfg.StoreFS},
		Limits: cfg.Limits, ChunkSize: cfg.ChunkSize, ChunkBytes: cfg.ChunkBytes, ChunkBudget: cfg.ChunkBudget, Producer: producer, Now: cfg.Now,
		Logger: cfg.Logger.With("group", "scheduler"), Metrics: metrics, Inputs: in})
	if err != nil {
		cl.Close()
		return nil, err
	}
	clk, err := clock.New(clock.Config{Layout: cfg.Layout, Resolution: cfg.Resolution, MaxAhead: cfg.ClockMaxAhead, Logger: cfg.Logger.With("group", "clock"), Inputs: in})
	if err != nil {
		cl.Close()
		return nil, err
	}
	route, err := router.New(router.Config{Layout: cfg.Layout, Limits: cfg.Limits, Logger: cfg.Logger.With("group", "router"), Inputs: in})
	if err != nil {
		cl.Close()
		return nil, err
	}
	s := &Instance{cfg: cfg, sched: sched, clock: clk, route: route, kgo: cl, log: cfg.Logger, fatal: fatal}
	if !cfg.NoTicker {
		host, _ := os.Hostname()
		s.ticker = &clock.Ticker{Client: cl, Topic: string(cfg.Layout.Clock()), Resolution: s.resolution(), Instance: host, Now: cfg.Now}
	}
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(sched.JobsCollector(),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "chronos_clock_lag_seconds",
				Help: "Wall time minus the last time this instance's clock group announced (absent while another instance owns the clock)."},
				func() float64 {
					last := clk.LastAnnounced()
					if last.IsZero() {
						return math.NaN()
					}
					return now().Sub(last).Seconds()
				}),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "chronos_partitions_owned",
				Help: "Scheduler partitions whose store this instance has open (assigned and recovering or recovered)."},
				func() float64 { return float64(sched.OpenStores()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "chronos_ready",
				Help: "1 when every group of this instance runs and has recovered its partitions."},
				func() float64 {
					if s.Ready() != nil {
						return 0
					}
					return 1
				}),
		)
	}
	s.mu.procs = make(map[goka.Group]*goka.Processor)
	return s, nil
}

// ensureTopics creates the layout's topics and waits until the brokers
// report every one of them in metadata: Kafka acknowledges a creation before
// its brokers serve the topic, and goka fails on a topic it cannot see.
func ensureTopics(ctx context.Context, cl *kgo.Client, kafka clients.Config, l topology.Layout) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var err error
	for {
		if err = l.Ensure(ctx, kadm.NewClient(cl)); err == nil {
			if err = waitVisible(kafka, l); err == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("instance: creating topics: %w", err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Scheduler returns the scheduler group (its stores serve the read API).
func (s *Instance) Scheduler() *scheduler.Scheduler { return s.sched }

// Client returns the instance's franz-go client (for producing commands).
func (s *Instance) Client() *kgo.Client { return s.kgo }

// Run runs every group until ctx is cancelled, restarting a failed group
// with backoff. It returns nil on cancellation, and the error when a
// partition store fails fatally (e.g. a full disk): the process should then
// exit and be restarted, recovering its partitions from the changelogs.
func (s *Instance) Run(ctx context.Context) error {
	defer s.kgo.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.fatal.ch:
			s.log.Error("stopping: a partition store failed; restart the process to recover from the changelog", "err", s.fatal.err())
			cancel()
		case <-ctx.Done():
		}
	}()
	var wg sync.WaitGroup
	run := func(name goka.Group, graph *goka.GroupGraph, opts ...goka.ProcessorOption) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.supervise(ctx, name, graph, opts)
		}()
	}
	run(s.sched.Group(), s.sched.Graph(), s.sched.Options()...)
	// The clock table lives in the data dir too (goka's default is a
	// shared directory under /tmp, which outlives the data dir).
	run(s.cfg.Layout.ClockGroup(), s.clock.Graph(), goka.WithStorageBuilder(store.Builder(s.cfg.DataDir, s.clockStoreOptions())),
		goka.WithNilHandling(goka.NilProcess))
	run(s.cfg.Layout.RouterGroup(), s.route.Graph(), goka.WithNilHandling(goka.NilProcess))
	if t := s.ticker; t != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = t.Run(ctx)
		}()
	}
	wg.Wait()
	return s.fatal.err()
}

// fatalSignal carries the first fatal storage error of an instance. Safe for
// concurrent use.
type fatalSignal struct {
	once  sync.Once
	ch    chan struct{}
	mu    sync.Mutex
	first error
}

func (f *fatalSignal) report(err error) {
	f.once.Do(func() {
		f.mu.Lock()
		f.first = err
		f.mu.Unlock()
		close(f.ch)
	})
}

func (f *fatalSignal) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.first
}

func (s *Instance) clockStoreOptions() store.Options {
	log := s.log.With("group", "clock")
	return store.Options{Sync: s.cfg.SyncStore, OnFatal: s.fatal.report, FS: s.cfg.StoreFS,
		Logger: func(format string, args ...any) { log.Debug(fmt.Sprintf(format, args...)) }}
}

func (s *Instance) resolution() time.Duration {
	if s.cfg.Resolution == 0 {
		return clock.DefaultResolution
	}
	return s.cfg.Resolution
}

// supervise runs one processor until ctx is done, restarting it on error.
func (s *Instance) supervise(ctx context.Context, name goka.Group, graph *goka.GroupGraph, opts []goka.ProcessorOption) {
	backoff := time.Second
	for ctx.Err() == nil {
		all := append(s.cfg.Kafka.GokaProcessorOptions(), goka.WithLogger(gokaLogger{s.log.With("group", string(name))}))
		p, err := goka.NewProcessor(s.cfg.Kafka.Brokers, graph, append(all, opts...)...)
		if err == nil {
			s.setProc(name, p)
			start := time.Now()
			err = p.Run(ctx)
			s.setProc(name, nil)
			if time.Since(start) > time.Minute {
				backoff = time.Second
			}
		}
		if ctx.Err() != nil {
			return
		}
		s.log.Error("processor stopped; restarting", "group", name, "err", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

func (s *Instance) ticking() error {
	if s.ticker == nil {
		return nil
	}
	last := s.ticker.LastAcked()
	if last.IsZero() {
		return errors.New("the clock has not ticked yet")
	}
	now := time.Now
	if s.cfg.Now != nil {
		now = s.cfg.Now
	}
	if age, limit := now().Sub(last), max(10*s.resolution(), 10*time.Second); age > limit {
		return fmt.Errorf("the clock last ticked %s ago", age.Round(time.Millisecond))
	}
	return nil
}

func (s *Instance) setProc(g goka.Group, p *goka.Processor) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.procs[g] = p
}

// Ready reports whether every group runs and has recovered its partitions,
// and this instance's clock ticks (its last tick was acknowledged within ten
// resolutions, at least 10 s).
func (s *Instance) Ready() error {
	if err := s.ticking(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range []goka.Group{s.sched.Group(), s.cfg.Layout.ClockGroup(), s.cfg.Layout.RouterGroup()} {
		p := s.mu.procs[g]
		if p == nil {
			return fmt.Errorf("group %s is not running", g)
		}
		if !p.Recovered() {
			return fmt.Errorf("group %s is recovering", g)
		}
	}
	return nil
}

// gokaLogger sends goka's logs to slog at debug level.
type gokaLogger struct{ l *slog.Logger }

func (g gokaLogger) Print(v ...any)                 { g.l.Debug(fmt.Sprint(v...)) }
func (g gokaLogger) Println(v ...any)               { g.l.Debug(fmt.Sprint(v...)) }
func (g gokaLogger) Printf(format string, v ...any) { g.l.Debug(fmt.Sprintf(format, v...)) }
func (g gokaLogger) Debugf(format string, v ...any) { g.l.Debug(fmt.Sprintf(format, v...)) }
func (g gokaLogger) PrefixedLogger(prefix string) goka.Logger {
	return gokaLogger{g.l.With("component", prefix)}
}

// cacheBytes is one partition store's share of the block cache.
func cacheBytes(cfg Config) int64 {
	total := cfg.StoreCacheBytes
	if total == 0 {
		total = 256 << 20
	}
	return max(total/int64(cfg.Layout.Partitions), 1<<20)
}

// waitVisible checks once, with a fresh sarama metadata request (what goka
// itself uses), that every topic of l has its partitions.
func waitVisible(kafka clients.Config, l topology.Layout) error {
	sc, err := sarama.NewClient(kafka.Brokers, kafka.Sarama())
	if err != nil {
		return err
	}
	defer sc.Close()
	var names []string
	for _, t := range l.Topics() {
		names = append(names, t.Name)
	}
	if err := sc.RefreshMetadata(names...); err != nil {
		return err
	}
	for _, t := range l.Topics() {
		ps, err := sc.Partitions(t.Name)
		if err != nil {
			return fmt.Errorf("instance: topic %s is not visible yet: %w", t.Name, err)
		}
		if int32(len(ps)) != t.Partitions {
			return fmt.Errorf("instance: topic %s shows %d of %d partitions", t.Name, len(ps), t.Partitions)
		}
	}
	return nil
}
