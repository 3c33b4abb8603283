// Package instance is one Chronos instance: its configuration (Config, with
// the defaults, the validation and the one mapping from flags), and New,
// Run and WaitReady, which build and run the scheduler group, the clock
// group, the router group, the history group (unless History.Off), the clock ticker (History.Only: the history
// group alone) and, with an HTTP address, the
// job view, the HTTP API, /metrics and the probes. Each group is restarted
// with backoff when it fails (goka processors stop on broker errors by
// design). `chronos dev`, `chronos run`, `chronos bench` and the tests'
// testenv all build their instances here.
package instance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lovoo/goka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/clients"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/processors/clock"
	"github.com/chronos-scheduler/chronos/processors/history"
	"github.com/chronos-scheduler/chronos/processors/inputs"
	"github.com/chronos-scheduler/chronos/processors/router"
	"github.com/chronos-scheduler/chronos/processors/scheduler"
	"github.com/chronos-scheduler/chronos/store"
	"github.com/chronos-scheduler/chronos/views"
)

// Instance is one instance. Create with New, then Run (once); Ready and
// WaitReady are safe for concurrent use.
type Instance struct {
	cfg   Config
	sched *scheduler.Scheduler
	// acks counts the scheduler's table writes in flight (its Durable).
	acks  *clients.WriteAcks
	clock *clock.Clock
	route *router.Router
	hist  *history.History // nil with History.Off
	// histAcks counts the history group's writes (its stores' Settled).
	histAcks *clients.WriteAcks
	cals     *views.Calendars
	// annc reads the clock table: the system's announced time, for the
	// lateness and announced-age gauges (nil on history-only instances).
	annc *clock.Announcements
	kgo  *kgo.Client
	// rejects writes the input policy's rejects (New: a client of its own).
	rejects *kgo.Client
	ticker  *clock.Ticker // nil with NoTicker
	http    *httpParts    // nil without an HTTP address
	fatal   *fatalSignal
	// failedWrites counts the failed writes of every partition store
	// (store.Options.FailedWrites, clients.StrictTableWrites).
	failedWrites *atomic.Uint64
	log          *slog.Logger
	// stopped is closed when Run returns, with runErr set.
	stopped chan struct{}
	runErr  error
	// scheduling is closed once this instance schedules: its scheduling
	// parts are ready (Ready), or HistoryWait passed without it. The
	// history group and the history view start then (runGroups,
	// httpParts.run).
	scheduling chan struct{}
	// recovered is closed once this instance's scheduling groups have
	// recovered their partitions and its clock ticks (scheduled), or
	// JobViewWait passed without it; the job view starts then
	// (httpParts.run). A history-only instance closes it at once.
	recovered chan struct{}
	mu        struct {
		sync.Mutex
		procs map[goka.Group]*goka.Processor
	}
}

// New validates cfg, creates missing topics (and waits until the brokers
// serve them) and builds the groups and, with an HTTP address, the job view
// and the API.
func New(ctx context.Context, cfg Config) (*Instance, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Logger = cfg.NewLogger()
	if cfg.Limits == (codecs.Limits{}) {
		cfg.Limits = codecs.DefaultLimits()
	}
	if cfg.FetchBufferBytes == 0 {
		cfg.FetchBufferBytes = DefaultFetchBufferBytes
	}
	if cfg.HTTP.Addr != "" && cfg.Registerer == nil {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		cfg.Registerer = reg
	}
	cfg.HTTP.warn(cfg.Logger)
	// No linger on this client: the fan-out hands over a whole chunk at once
	// and waits for its acks, so waiting for more records only adds delay.
	// The rejects' client below waits for each reject's ack the same way.
	producing := []kgo.Opt{kgo.RecordDeliveryTimeout(2 * time.Minute), kgo.ProducerLinger(0)}
	cl, err := cfg.Kafka.NewKgo(producing...)
	if err != nil {
		return nil, err
	}
	if err := cfg.Layout.EnsureVisible(ctx, kadm.NewClient(cl), cfg.Kafka.Brokers, cfg.Kafka.Sarama()); err != nil {
		cl.Close()
		return nil, err
	}
	if cfg.Kafka.FetchBuffer, err = ConsumerFetchBuffer(ctx, cfg, kadm.NewClient(cl)); err != nil {
		cl.Close()
		return nil, err
	}
	cfg.Kafka.FetchBytes = cfg.FetchBufferBytes
	// Rejects have a client of their own: a produce request to the rejects
	// topic that a broker is slow to answer holds every record behind it
	// in the same client's requests to that broker, and on the embedded
	// broker one held reject stopped every dispatch (adversary round 55).
	rejects, err := cfg.Kafka.NewKgo(producing...)
	if err != nil {
		cl.Close()
		return nil, err
	}
	s, err := build(cfg, cl, rejects)
	if err != nil {
		cl.Close()
		rejects.Close()
		return nil, err
	}
	return s, nil
}

// ConsumerFetchBuffer is how many records each of cfg's goka consumers
// buffers in sarama's channel per partition: FetchBufferRecords of cfg's
// FetchBufferBytes, counted at the largest record a consumer can be handed,
// which is the brokers' limit on the topics others write
// (topology.Layout.InboundRecordLimit), far above a valid command, less
// HeldBesidesFetchBuffer, and at least 1.
func ConsumerFetchBuffer(ctx context.Context, cfg Config, adm *kadm.Client) (int, error) {
	inbound, err := cfg.Layout.InboundRecordLimit(ctx, adm)
	if err != nil {
		return 0, err
	}
	limits := cfg.Limits
	if limits == (codecs.Limits{}) {
		limits = codecs.DefaultLimits()
	}
	bytes := cfg.FetchBufferBytes
	if bytes == 0 {
		bytes = DefaultFetchBufferBytes
	}
	return max(FetchBufferRecords(bytes, max(inbound, limits.MaxPayload+1<<10))-HeldBesidesFetchBuffer, 1), nil
}

// HeldBesidesFetchBuffer is how many records a goka processor holds per
// input partition besides sarama's channel: one in sarama's feeder (being
// handed over), one in goka's ConsumeClaim, clients.GokaPartitionChannel in
// goka's partition channel and one in the callback.
const HeldBesidesFetchBuffer = 3 + clients.GokaPartitionChannel

// build makes the groups, the ticker and the HTTP parts on client cl, the
// input policy's rejects on client rejects.
func build(cfg Config, cl, rejects *kgo.Client) (*Instance, error) {
	fatal := &fatalSignal{ch: make(chan struct{})}
	// Every store counts its failed writes here, so that a callback whose
	// table write failed while its partition was stopping stops too
	// (clients.StrictTableWrites, added to every group in supervise).
	failedWrites := new(atomic.Uint64)
	var metrics *scheduler.Metrics
	// One input policy for every group: rejects are produced through a
	// franz-go client with bounded retries, so a reject that cannot be
	// written is counted and skipped instead of failing the partition.
	in := &inputs.Policy{Rejects: cfg.Layout.Rejects(), Producer: rejects, Logger: cfg.Logger.With("component", "inputs")}
	if cfg.Registerer != nil {
		metrics = scheduler.NewMetrics(cfg.Registerer)
		in.Metrics = inputs.NewMetrics(cfg.Registerer)
	}
	producer := cfg.Producer
	if producer == nil {
		producer = scheduler.KgoProducer{Client: cl}
	}
	// Named calendars: every instance reads the whole topic, in memory.
	cals, err := views.NewCalendars(cfg.Kafka, cfg.Layout)
	if err != nil {
		return nil, err
	}
	// The scheduler waits for a pass's start to reach its table's changelog
	// before the pass's first fire (docs/reliability.md): its producer
	// counts the writes in flight.
	acks := &clients.WriteAcks{}
	table := string(cfg.Layout.SchedulerTable())
	sched, err := scheduler.New(scheduler.Config{Layout: cfg.Layout, DataDir: cfg.DataDir, Calendars: cals,
		Durable: func(ctx goka.Context, key string) error { return acks.Wait(ctx.Context(), table, key) },
		// A store kept on this data dir is trusted only after a close that
		// saw every write of the processor finish (docs/reliability.md, "A
		// store ahead of its changelog").
		Writes: acks.All(),
		// A fresh store indexes its table in one pass when its recovery
		// ends (docs/architecture.md, "Deferred indexing on recovery").
		Store: store.Options{Sync: cfg.Store.Sync, CacheSize: cfg.cacheBytes(), MemTableSize: cfg.Store.MemTableBytes, OnFatal: fatal.report, FailedWrites: failedWrites, FS: cfg.Store.FS,
			RecoveryL0CompactionThreshold: cfg.Store.RecoveryL0CompactionThreshold,
			DeferIndexOnRecovery:          true, KeyFilter: true},
		Limits: cfg.Limits, ChunkSize: cfg.Fanout.ChunkSize, ChunkBytes: cfg.Fanout.ChunkBytes, ChunkBudget: cfg.Fanout.Budget, BackfillRate: cfg.Fanout.BackfillRate, Producer: producer, Now: cfg.Now,
		Logger: cfg.Logger.With("group", "scheduler"), Metrics: metrics, Inputs: in})
	if err != nil {
		return nil, err
	}
	clk, err := clock.New(clock.Config{Layout: cfg.Layout, Resolution: cfg.Clock.Resolution, MaxAhead: cfg.Clock.MaxAhead, Logger: cfg.Logger.With("group", "clock"), Inputs: in})
	if err != nil {
		return nil, err
	}
	route, err := router.New(router.Config{Layout: cfg.Layout, Limits: cfg.Limits, Logger: cfg.Logger.With("group", "router"), Inputs: in})
	if err != nil {
		return nil, err
	}
	s := &Instance{cfg: cfg, sched: sched, acks: acks, cals: cals, clock: clk, route: route, kgo: cl, rejects: rejects, log: cfg.Logger, fatal: fatal, failedWrites: failedWrites, stopped: make(chan struct{}), scheduling: make(chan struct{}), recovered: make(chan struct{})}
	sched.SetAnnouncedSource(s.latenessAnnounced)
	if !cfg.History.Only {
		if s.annc, err = clock.NewAnnouncements(cfg.Kafka.Brokers, cfg.Layout, cfg.Kafka.GokaViewOptions()...); err != nil {
			return nil, err
		}
		sched.SetClockTable(s.annc.Latest)
	}
	if !cfg.History.Off {
		s.histAcks = &clients.WriteAcks{}
		s.hist, err = history.New(history.Config{Layout: cfg.Layout, DataDir: cfg.DataDir, Fires: cfg.History.Fires, Changes: cfg.History.Changes, Writes: s.histAcks.All(),
			Store: store.Options{Sync: cfg.Store.Sync, CacheSize: cfg.historyCacheBytes(), MemTableSize: cfg.historyMemTableBytes(HistoryStoreMemTableBytes),
				BloomBitsPerKey: HistoryStoreBloomBits, KeyFilter: true, RunReads: true, OnFatal: fatal.report, FailedWrites: failedWrites, FS: cfg.Store.FS}, Limits: cfg.Limits,
			Logger: cfg.Logger.With("group", "history"), Inputs: in})
		if err != nil {
			return nil, err
		}
	}
	s.mu.procs = make(map[goka.Group]*goka.Processor)
	if !cfg.Clock.NoTicker && !cfg.History.Only {
		host, _ := os.Hostname()
		s.ticker = &clock.Ticker{Client: cl, Topic: string(cfg.Layout.Clock()), Resolution: cfg.resolution(), Instance: host, Now: cfg.Now}
	}
	if cfg.HTTP.Addr != "" {
		if s.http, err = newHTTP(s); err != nil {
			return nil, err
		}
	}
	if cfg.Registerer != nil {
		s.registerGauges(cfg.Registerer)
	}
	return s, nil
}

// HistoryWait is the longest the history group and the history view wait
// at start for the scheduling parts to be ready before they start anyway.
// They recover after them because a new instance owes its fires first: on
// two cores, recovering all four tables at once made an empty-disk
// instance ready in 20.6-25.0 s at 1M jobs, against 12.4-13.4 s without
// the history's two (docs/architecture.md, "Recovery: scheduling first").
const HistoryWait = 5 * time.Minute

// JobViewWait is the longest the job view waits at start for the
// scheduling groups to recover before it starts anyway. The job view
// replays the whole scheduler table (every partition, not only those this
// instance owns): recovered beside the scheduler's stores it took half the
// CPU before the instance fired again (docs/architecture.md, "Recovery:
// scheduling first").
const JobViewWait = 5 * time.Minute

// Scheduler returns the scheduler group (its stores serve the read API).
func (s *Instance) Scheduler() *scheduler.Scheduler { return s.sched }

// CalendarsWait is the longest the scheduler waits at start for the
// calendars view to read chronos-calendars (a topic of a few records: it
// normally takes well under a second).
const CalendarsWait = time.Minute

// awaitReady waits until ready reports a part caught up (the calendars
// view, the clock table view, the scheduling parts), the view has stopped
// (stopped closed: its Run returned; nil: never),
// most has passed (a view that keeps reconnecting to a topic it cannot
// read, e.g. without the ACL), or ctx is done; it reports whether the
// view was ready. A view that cannot read must not hold scheduling back:
// every job would stop firing for want of a list of days off (adversary
// 14c), so the scheduler then starts with named calendars excluding what
// the view has read so far, and the caller logs it.
func awaitReady(ctx context.Context, ready func() error, stopped <-chan struct{}, most time.Duration) bool {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(most)
	defer deadline.Stop()
	for ready() != nil {
		select {
		case <-ctx.Done():
			return false
		case <-stopped:
			return false
		case <-deadline.C:
			return false
		case <-tick.C:
		}
	}
	return true
}

// Calendars returns the view of the named calendars the scheduler reads.
func (s *Instance) Calendars() *views.Calendars { return s.cals }

// Client returns the instance's franz-go client (for producing commands).
func (s *Instance) Client() *kgo.Client { return s.kgo }

// Run runs every group (and the HTTP parts) until ctx is cancelled,
// restarting a failed group with backoff. It returns nil on cancellation,
// and the error when a partition store fails fatally (e.g. a full disk) or
// the HTTP server cannot serve: the process should then exit and be
// restarted, recovering its partitions from the changelogs. Call it once.
func (s *Instance) Run(ctx context.Context) (err error) {
	defer func() {
		s.runErr = err
		close(s.stopped)
	}()
	defer s.kgo.Close()
	defer s.rejects.Close()
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
	stopPprof, err := servePprof(s.cfg.PprofAddr, s.log)
	if err != nil {
		return err
	}
	defer stopPprof()
	var wg sync.WaitGroup
	var httpErr error
	if h := s.http; h != nil {
		if err := h.listen(s); err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if httpErr = h.run(ctx, s.log); httpErr != nil {
				cancel()
			}
		}()
	}
	s.runGroups(ctx)
	cancel()
	wg.Wait()
	return errors.Join(s.fatal.err(), httpErr)
}

// runGroups runs the groups and the ticker until ctx is done.
func (s *Instance) runGroups(ctx context.Context) {
	var wg sync.WaitGroup
	// runCounted runs a group whose producer's records acks counts (nil:
	// none counted).
	runCounted := func(name goka.Group, graph *goka.GroupGraph, acks *clients.WriteAcks, opts ...goka.ProcessorOption) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.supervise(ctx, name, graph, acks, opts)
		}()
	}
	run := func(name goka.Group, graph *goka.GroupGraph, opts ...goka.ProcessorOption) {
		runCounted(name, graph, nil, opts...)
	}
	if s.cfg.History.Only {
		close(s.recovered) // nothing to schedule: the views start at once
		close(s.scheduling)
		runCounted(s.hist.Group(), s.hist.Graph(), s.histAcks, s.hist.Options()...)
		wg.Wait()
		return
	}
	// JobViewWait and HistoryWait count from here, before the waits for
	// the calendars and the clock table below. The job view starts once
	// the scheduling groups have recovered, the history once the job view
	// has too (Ready).
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		awaitStage(ctx, s.scheduled, s.recovered, start, JobViewWait, s.log, "the scheduling groups have not recovered", "the job view")
		// Logged when they have, also after JobViewWait started the view
		// without them: the slow starts are the ones to measure.
		wg.Add(1)
		go func() {
			defer wg.Done()
			logRecovered(ctx, s.scheduled, start, s.log)
		}()
		awaitStage(ctx, s.Ready, s.scheduling, start, HistoryWait, s.log, "the scheduling parts are not ready", "the history group and view")
	}()
	anncStopped := make(chan struct{})
	if a := s.annc; a != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(anncStopped)
			if err := a.Run(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("clock table view stopped; the lateness and announced-age gauges read only this instance's advances until restart", "err", err)
			}
		}()
	}
	calsStopped := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(calsStopped)
		if err := s.cals.Run(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("calendars view stopped; named calendars exclude nothing until restart", "err", err)
		}
	}()
	// The scheduler fires only once the calendars are read: a holiday is
	// not dispatched because the view was still recovering after a start.
	if !awaitReady(ctx, s.cals.Ready, calsStopped, CalendarsWait) && ctx.Err() == nil {
		s.log.Error("the calendars view has not read chronos-calendars; scheduling anyway: named calendars exclude only what it has read until it catches up", "waited_max", CalendarsWait.String(), "err", s.cals.Ready())
	}
	// The lateness measures a partition from the announced time when it
	// finished recovering: read the clock table first (one record per
	// announcement, compacted: well under a second), so a partition that
	// recovers at once is not measured from before the rebalance. At most
	// CalendarsWait; the gauges only, nothing fires differently.
	if s.annc != nil && !awaitReady(ctx, s.annc.Ready, anncStopped, CalendarsWait) && ctx.Err() == nil {
		s.log.Warn("the clock table view has not read chronos-clock-table; starting the scheduler anyway (lateness reads may be high for the first minute)", "waited_max", CalendarsWait.String(), "err", s.annc.Ready())
	}
	runCounted(s.sched.Group(), s.sched.Graph(), s.acks, s.sched.Options()...)
	// The clock table lives in the data dir too (goka's default is a
	// shared directory under /tmp, which outlives the data dir).
	// The clock wraps it to forget its last announcement when the partition
	// moves away (chronos_clock_lag_seconds only from the owner).
	run(s.cfg.Layout.ClockGroup(), s.clock.Graph(), goka.WithStorageBuilder(s.clock.StorageBuilder(store.Builder(s.cfg.DataDir, s.clockStoreOptions()))),
		goka.WithNilHandling(goka.NilProcess))
	run(s.cfg.Layout.RouterGroup(), s.route.Graph(), goka.WithNilHandling(goka.NilProcess))
	if t := s.ticker; t != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = t.Run(ctx)
		}()
	}
	if s.hist != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-s.scheduling:
			case <-ctx.Done():
				return
			}
			s.supervise(ctx, s.hist.Group(), s.hist.Graph(), s.histAcks, s.hist.Options())
		}()
	}
	wg.Wait()
}

// logRecovered logs "the scheduling groups have recovered their
// partitions", with the time since start, once scheduled reports nil
// (however long that takes), or nothing if ctx ends first.
func logRecovered(ctx context.Context, scheduled func() error, start time.Time, log *slog.Logger) {
	if awaitReady(ctx, scheduled, nil, math.MaxInt64) {
		log.Info("the scheduling groups have recovered their partitions", "after", time.Since(start).Round(time.Millisecond).String())
	}
}

// awaitStage closes open once ready reports nil (and reports true), or
// once most has passed since start, with a warning that waitFor still
// holds, how long it waited and what starts anyway, or never if ctx ends
// first.
func awaitStage(ctx context.Context, ready func() error, open chan<- struct{}, start time.Time, most time.Duration, log *slog.Logger, waitFor, starts string) bool {
	ok := awaitReady(ctx, ready, nil, max(most-time.Since(start), 0))
	if !ok {
		if ctx.Err() != nil {
			return false
		}
		log.Warn(waitFor+"; starting "+starts+" anyway", "waited", time.Since(start).Round(time.Second).String(), "err", ready())
	}
	close(open)
	return ok
}

// WaitReady waits until the instance is ready (Ready returns nil). It
// returns ctx's error when ctx ends first (with why the instance is not
// ready), and Run's error when Run returns first: a fatal store error
// surfaces as itself, not as a timeout.
func (s *Instance) WaitReady(ctx context.Context) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		err := s.Ready()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("instance: not ready: %w (%w)", err, ctx.Err())
		case <-s.stopped:
			return fmt.Errorf("instance: stopped before it was ready: %w", errors.Join(s.runErr, errors.New("Run returned")))
		case <-tick.C:
		}
	}
}

// Stopped is closed when Run has returned; Err then is its error.
func (s *Instance) Stopped() <-chan struct{} { return s.stopped }

// Err returns Run's error once Stopped is closed (nil before).
func (s *Instance) Err() error {
	select {
	case <-s.stopped:
		return s.runErr
	default:
		return nil
	}
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
	return store.Options{Sync: s.cfg.Store.Sync, OnFatal: s.fatal.report, FailedWrites: s.failedWrites, FS: s.cfg.Store.FS,
		Logger: func(format string, args ...any) { log.Debug(fmt.Sprintf(format, args...)) }}
}

// supervise runs one processor until ctx is done, restarting it on error
// (with a new producer: after a failed record its InOrder producer fails
// every later one). Its inputs are committed in the order of its
// producer's records (clients.CommitOrder); acks, if not nil, counts them
// (the scheduler's Durable and Settled, the history's Settled).
func (s *Instance) supervise(ctx context.Context, name goka.Group, graph *goka.GroupGraph, acks *clients.WriteAcks, opts []goka.ProcessorOption) {
	backoff := time.Second
	order := &clients.CommitOrder{}
	producer := order.Builder(s.cfg.Kafka.ProducerBuilder())
	if acks != nil {
		producer = acks.Builder(producer)
	}
	for ctx.Err() == nil {
		all := append(s.cfg.Kafka.GokaProcessorOptions(), goka.WithLogger(gokaLogger{s.log.With("group", string(name))}),
			goka.WithProducerBuilder(producer), clients.GuardCallbacks(s.failedWrites, order))
		if id := s.cfg.Kafka.ClientID; id != "" {
			// goka's default client id is "goka"; the group member ids the
			// broker makes start with it.
			all = append(all, goka.WithClientID(id))
		}
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
	res := s.cfg.resolution()
	if age, limit := s.cfg.now().Sub(last), max(10*res, 10*time.Second); age > limit {
		return fmt.Errorf("the clock last ticked %s ago", age.Round(time.Millisecond))
	}
	return nil
}

func (s *Instance) setProc(g goka.Group, p *goka.Processor) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.procs[g] = p
}

// Ready reports whether this instance schedules: its scheduling groups
// (scheduler, clock, router) run and have recovered their partitions, its
// clock ticks, if it has a ticker (its last tick was acknowledged within
// ten resolutions, at least 10 s) and, with the HTTP parts, the job view
// has recovered. The history group is not waited for: it starts once
// this holds (HistoryWait) and recovers after it. A history-only instance
// is ready when its history group has recovered.
func (s *Instance) Ready() error {
	if err := s.scheduled(); err != nil {
		return err
	}
	if s.http != nil {
		return s.http.jobs.Ready()
	}
	return nil
}

// scheduled reports whether this instance fires: its clock ticks and its
// scheduling groups have recovered (Ready without the job view).
func (s *Instance) scheduled() error {
	if err := s.ticking(); err != nil {
		return err
	}
	return s.groupsReady()
}

// HistoryReady reports whether the history runs: its group has started
// and recovered its partitions and, with the HTTP parts, the history view
// has recovered (nil with History.Off). Ready does not wait for it on an
// instance that schedules; chronos_history_ready reads it.
func (s *Instance) HistoryReady() error {
	if s.hist == nil {
		return nil
	}
	s.mu.Lock()
	p := s.mu.procs[s.hist.Group()]
	s.mu.Unlock()
	switch {
	case p == nil:
		select {
		case <-s.scheduling:
			return fmt.Errorf("group %s is not running", s.hist.Group())
		default:
			return fmt.Errorf("group %s waits for the scheduling parts to be ready", s.hist.Group())
		}
	case !p.Recovered():
		return fmt.Errorf("group %s is recovering", s.hist.Group())
	}
	if s.http != nil && s.http.hist != nil {
		return s.http.hist.Ready()
	}
	return nil
}

func (s *Instance) groupsReady() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	groups := []goka.Group{s.sched.Group(), s.cfg.Layout.ClockGroup(), s.cfg.Layout.RouterGroup()}
	if s.cfg.History.Only {
		groups = []goka.Group{s.hist.Group()}
	}
	for _, g := range groups {
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
