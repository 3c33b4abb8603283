package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/chronos-scheduler/chronos/testenv/audit"
	"github.com/chronos-scheduler/chronos/topology"
)

// Timeouts of the harness.
const (
	readyTimeout = 2 * time.Minute  // an instance's /readyz after a fault
	drainTimeout = 3 * time.Minute  // every fire of the window read after the faults
	poisonWatch  = 20 * time.Second // no processor may stop this long after poison
)

// Result are the figures of one run.
type Result struct {
	Seed     uint64
	Duration time.Duration // the fault phase
	Prefix   string        // topic prefix
	From, To time.Time     // the audited window of scheduled_at
	// Recurring and OneShots count the acknowledged puts.
	Recurring, OneShots int
	Report              audit.Report
	// Early counts fires read before their scheduled_at; MaxEarly is the
	// largest such lead; EarlyBeyond counts those read more than
	// Config.EarlyBound before it (a failure).
	Early       int
	MaxEarly    time.Duration
	EarlyBound  time.Duration
	EarlyBeyond int
	// Faults counts the injected faults by kind; Log lists them in order.
	Faults map[Kind]int
	Log    []string
	// Poison counts the poison records produced by kind; PoisonFires the
	// scheduled fires of poison job ids (a wrong-partition put or a 990 kB
	// put that fires was stored although it must be rejected).
	Poison      map[string]int
	PoisonFires map[string]int
	Rejects     int // records read from chronos-rejects
	Undecodable int // chronos-dispatch records that are not dispatch events
	// MissingByPartition counts the missing fires by the partition of
	// their job.
	MissingByPartition map[int32]int
	// NotReady lists the times an instance did not answer /readyz 200
	// within 2 min of a fault.
	NotReady []string
}

// Err reports what must not happen: missing, unexpected or wrong fires,
// early fires, undecodable events, fires of poison records, instances that
// did not become ready.
func (r Result) Err() error {
	var errs []error
	if err := r.Report.Err(); err != nil {
		errs = append(errs, err)
	}
	if r.EarlyBeyond > 0 {
		errs = append(errs, fmt.Errorf("%d fires dispatched more than %s before their scheduled_at (up to %s early)", r.EarlyBeyond, r.EarlyBound, r.MaxEarly))
	}
	if r.Undecodable > 0 {
		errs = append(errs, fmt.Errorf("%d undecodable dispatch events", r.Undecodable))
	}
	for id, n := range r.PoisonFires {
		errs = append(errs, fmt.Errorf("poison job %s fired %d times", id, n))
	}
	for _, s := range r.NotReady {
		errs = append(errs, errors.New(s))
	}
	return errors.Join(errs...)
}

// Summary is the one-paragraph figures of the run.
func (r Result) Summary() string {
	var kinds []string
	for _, k := range AllKinds {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, r.Faults[k]))
	}
	var poison []string
	for k, n := range r.Poison {
		poison = append(poison, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(poison)
	return fmt.Sprintf("SOAK seed=%d duration=%s window=(%s, %s] recurring=%d one-shots=%d\n"+
		"SOAK expected=%d delivered=%d missing=%d duplicates=%d (%d ids) early=%d (max %s; %d beyond the %s bound) unexpected=%d mismatches=%d lateness p50=%s p99=%s max=%s\n"+
		"SOAK faults: %s\nSOAK poison records: %s; rejects read=%d; poison fires=%v; not ready=%d; missing by partition %v",
		r.Seed, r.Duration, r.From.Format(time.RFC3339), r.To.Format(time.RFC3339), r.Recurring, r.OneShots,
		r.Report.Expected, r.Report.Delivered, len(r.Report.Missing), r.Report.Duplicates, r.Report.DuplicateIDs,
		r.Early, r.MaxEarly, r.EarlyBeyond, r.EarlyBound, len(r.Report.Unexpected), len(r.Report.Mismatches),
		r.Report.Lateness.P50, r.Report.Lateness.P99, r.Report.Lateness.Max,
		strings.Join(kinds, " "), strings.Join(poison, " "), r.Rejects, r.PoisonFires, len(r.NotReady), r.MissingByPartition)
}

// harness is one run's state, owned by the goroutine of Run.
type harness struct {
	cfg     Config
	broker  *broker
	names   topology.Names
	args    []string
	running []*instance
	stopped []*instance // scaled down or failed: kept for their logs
	next    int         // name of the next new instance
	load    *loader
	obs     *observer
	res     *Result
	rng     *rand.Rand // poison bytes
}

// Run runs one soak: start, load, faults, undo, drain, audit. The error is
// about the harness itself (a broker that does not start, a binary that
// does not run); what the soak found is in Result (see Result.Err).
func Run(ctx context.Context, c Config) (*Result, error) {
	cfg, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	res := &Result{Seed: cfg.Seed, Duration: cfg.Duration, Faults: map[Kind]int{}, Poison: map[string]int{}}
	cfg.Logf("soak: seed %d (rerun with -soak.seed %d), fault phase %s, kinds %v", cfg.Seed, cfg.Seed, cfg.Duration, cfg.Kinds)
	if err := os.MkdirAll(cfg.KafkaDir, 0o755); err != nil {
		return nil, err
	}
	h := &harness{cfg: cfg, res: res, broker: &broker{script: cfg.KafkaScript, dir: cfg.KafkaDir},
		rng: rand.New(rand.NewPCG(cfg.Seed, 2))}
	if err := h.broker.start(); err != nil {
		return nil, err
	}
	defer func() {
		if err := h.broker.stop(); err != nil {
			cfg.Logf("%v", err)
		}
	}()
	res.Prefix = fmt.Sprintf("soak%d-%x.", cfg.Seed%100000, time.Now().UnixNano()&0xffffff)
	h.names = topology.Names{Prefix: res.Prefix}
	h.args = []string{"--brokers", h.broker.addr, "--topic-prefix", res.Prefix, "--partitions", fmt.Sprint(cfg.Partitions),
		"--replication", "1", "--log-level", "info"}
	cfg.Logf("soak: broker %s (%s), topic prefix %s, work dir %s", h.broker.addr, cfg.KafkaDir, res.Prefix, cfg.WorkDir)
	defer h.stopAll()
	if err := h.startInstances(ctx); err != nil {
		return nil, err
	}
	if h.obs, err = newObserver(h.broker.addr, h.names); err != nil {
		return nil, err
	}
	defer h.obs.close()
	if h.load, err = newLoader(h.broker.addr, h.names, cfg.Partitions); err != nil {
		return nil, err
	}
	defer h.load.close()
	if res.From, err = h.load.putRecurring(ctx, cfg.Jobs); err != nil {
		return nil, err
	}
	res.From = res.From.UTC()
	cfg.Logf("soak: %d recurring jobs put at %s", cfg.Jobs.Every1s+cfg.Jobs.Every5s+cfg.Jobs.Every10s, res.From.Format(time.RFC3339Nano))
	loadCtx, stopLoad := context.WithCancel(ctx)
	loadDone := make(chan struct{})
	go func() { defer close(loadDone); h.load.oneShots(loadCtx, cfg.Jobs.OneShotsPerSecond, cfg.Seed) }()
	defer func() { stopLoad(); <-loadDone }()

	h.faults(ctx)
	if err := h.undo(ctx); err != nil {
		return nil, err
	}
	res.To = time.Now().UTC().Truncate(time.Second).Add(-time.Second)
	stopLoad()
	<-loadDone
	h.audit(ctx)
	return res, ctx.Err()
}

// startInstances starts the first instance (it creates the topics), then
// the others, and waits for every one to be ready.
func (h *harness) startInstances(ctx context.Context) error {
	for i := 0; i < h.cfg.Instances; i++ {
		in, err := h.spawn()
		if err != nil {
			return err
		}
		if i == 0 {
			if err := in.waitReady(ctx, readyTimeout); err != nil {
				return err
			}
		}
	}
	for _, in := range h.running {
		if err := in.waitReady(ctx, readyTimeout); err != nil {
			return err
		}
	}
	h.cfg.Logf("soak: %d instances ready", len(h.running))
	return nil
}

// spawn starts a new instance on a fresh data dir.
func (h *harness) spawn() (*instance, error) {
	in, err := newInstance(h.cfg.WorkDir, fmt.Sprintf("i%d", h.next), h.cfg.Bin, h.args)
	if err != nil {
		return nil, err
	}
	h.next++
	if err := in.start(); err != nil {
		return nil, err
	}
	h.running = append(h.running, in)
	return in, nil
}

func (h *harness) stopAll() {
	for _, in := range h.running {
		if !in.stop(30 * time.Second) {
			h.cfg.Logf("soak: %s did not stop within 30 s of SIGTERM; killed", in.name)
		}
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// faults injects the drawn faults until the fault phase is over.
func (h *harness) faults(ctx context.Context) {
	sched := NewSchedule(h.cfg.Seed, h.cfg.Kinds)
	end := time.Now().Add(h.cfg.Duration)
	for ctx.Err() == nil {
		st := sched.Next()
		if time.Now().Add(st.Gap).After(end) {
			sleep(ctx, time.Until(end))
			return
		}
		sleep(ctx, st.Gap)
		if ctx.Err() != nil {
			return
		}
		start := time.Now()
		desc := h.inject(ctx, st)
		h.res.Faults[st.Kind]++
		line := fmt.Sprintf("%s +%s %s %s (took %s)", start.UTC().Format("15:04:05.000"), st.Gap.Round(time.Millisecond), st.Kind, desc,
			time.Since(start).Round(time.Millisecond))
		h.res.Log = append(h.res.Log, line)
		h.cfg.Logf("soak: fault %d: %s", len(h.res.Log), line)
	}
}

// pick returns the running instance a step targets.
func (h *harness) pick(st Step) (int, *instance) {
	i := st.Pick % len(h.running)
	return i, h.running[i]
}

// inject carries out one step and describes it.
func (h *harness) inject(ctx context.Context, st Step) string {
	kind := st.Kind
	if kind == ScaleUp && len(h.running) > h.cfg.Instances {
		kind = ScaleDown
	} else if kind == ScaleDown && len(h.running) < h.cfg.Instances {
		kind = ScaleUp
	}
	switch kind {
	case Kill9:
		_, in := h.pick(st)
		in.kill()
		sleep(ctx, st.Hold)
		if err := in.start(); err != nil {
			h.notReady(fmt.Sprintf("restarting %s after kill -9: %v", in.name, err))
		}
		h.ready(ctx, in, "kill -9")
		return fmt.Sprintf("%s killed, restarted %s later", in.name, st.Hold.Round(time.Millisecond))
	case Stop:
		_, in := h.pick(st)
		_ = in.signal(syscall.SIGSTOP)
		sleep(ctx, st.Hold)
		_ = in.signal(syscall.SIGCONT)
		h.ready(ctx, in, "SIGSTOP/SIGCONT")
		return fmt.Sprintf("%s stopped for %s", in.name, st.Hold.Round(time.Millisecond))
	case ScaleUp:
		in, err := h.spawn()
		if err != nil {
			h.notReady(fmt.Sprintf("scaling up: %v", err))
			return "failed"
		}
		h.ready(ctx, in, "scale-up")
		return fmt.Sprintf("%s started (%d running)%s", in.name, len(h.running), retyped(st.Kind, kind))
	case ScaleDown:
		i, in := h.pick(st)
		clean := in.stop(30 * time.Second)
		h.running = append(h.running[:i], h.running[i+1:]...)
		h.stopped = append(h.stopped, in)
		// The others take over its partitions: each must recover them.
		h.readyAll(ctx, "scale-down")
		return fmt.Sprintf("%s stopped (clean %v, %d running)%s", in.name, clean, len(h.running), retyped(st.Kind, kind))
	case BrokerRestart:
		retried, err := h.broker.restart()
		if err != nil {
			h.notReady(err.Error())
		}
		h.readyAll(ctx, "broker restart")
		if len(retried) > 0 && err == nil {
			return fmt.Sprintf("broker stopped and started (on try %d; kafka.sh restart failed first: %v)", len(retried)+1, retried[0])
		}
		return "broker stopped and started"
	case ClockJump:
		_, in := h.pick(st)
		if err := in.setOffset(st.Offset); err != nil {
			h.notReady(err.Error())
		}
		sleep(ctx, st.Hold)
		_ = in.setOffset(0)
		return fmt.Sprintf("%s clock %+v for %s", in.name, st.Offset, st.Hold.Round(time.Millisecond))
	case Poison:
		// The watch below is about the poison: it begins once every
		// instance is ready, so a rebalance the step before started (a
		// member back from SIGSTOP rejoining, a scale-down's partitions
		// still restoring) is not read as the poison's doing.
		h.readyAll(ctx, "the step before poison")
		marks := h.logMarks()
		got, err := h.load.poison(ctx, h.res.Faults[Poison], h.rng)
		for k, n := range got {
			h.res.Poison[k] += n
		}
		if err != nil {
			h.cfg.Logf("%v", err)
		}
		// Poison must not stop a partition: no instance's processor stops
		// while the records are read, and every instance is ready after.
		h.noProcessorStops(ctx, poisonWatch, "poison", marks)
		h.readyAll(ctx, "poison")
		return fmt.Sprintf("%d records", len(got))
	}
	return "unknown"
}

func retyped(drawn, done Kind) string {
	if drawn == done {
		return ""
	}
	return fmt.Sprintf(" (drawn as %s)", drawn)
}

func (h *harness) notReady(s string) {
	h.res.NotReady = append(h.res.NotReady, s)
	h.cfg.Logf("soak: FINDING: %s", s)
}

// readyAll waits for every running instance's /readyz, readyTimeout in
// all.
func (h *harness) readyAll(ctx context.Context, after string) {
	deadline := time.Now().Add(readyTimeout)
	for _, in := range h.running {
		h.readyWithin(ctx, in, after, max(time.Until(deadline), time.Second))
	}
}

// logMarks returns the size of every running instance's log.
func (h *harness) logMarks() map[*instance]int64 {
	marks := map[*instance]int64{}
	for _, in := range h.running {
		if fi, err := os.Stat(in.logPath); err == nil {
			marks[in] = fi.Size()
		}
	}
	return marks
}

// noProcessorStops polls every running instance's /readyz for d, then
// records a finding for each instance whose log, since its mark, says a
// processor stopped (instance.Instance restarts it: a rebalance of its
// group on every instance). A /readyz answer other than 200 alone is not
// one: a rebalance another step began (a member back from SIGSTOP, a
// scale-down's partitions moving) makes every member answer 503 while it
// lasts; it is logged, with the processor stops, so a finding shows both.
func (h *harness) noProcessorStops(ctx context.Context, d time.Duration, after string, marks map[*instance]int64) {
	notReady := map[string]string{}
	for end := time.Now().Add(d); time.Now().Before(end) && ctx.Err() == nil; sleep(ctx, 500*time.Millisecond) {
		for _, in := range h.running {
			if _, seen := notReady[in.name]; !seen {
				if err := in.readyOnce(ctx); err != nil {
					notReady[in.name] = err.Error()
				}
			}
		}
	}
	for _, in := range h.running {
		if s, ok := notReady[in.name]; ok {
			h.cfg.Logf("soak: %s answered /readyz %s within %s after %s", in.name, s, d, after)
		}
		stops, fenced := processorStops(in.logPath, marks[in])
		if len(fenced) > 0 {
			h.cfg.Logf("soak: %s: %d processor stops within %s after %s were the freeze fence's (an earlier SIGSTOP), not counted", in.name, len(fenced), d, after)
		}
		if len(stops) > 0 {
			h.notReady(fmt.Sprintf("%s: a processor stopped within %s after %s:\n%s", in.name, d, after, strings.Join(stops, "\n")))
		}
	}
}

// frozenText is the scheduler's freeze fence (processors/scheduler
// errFrozen): a partition session that began before the process was
// stopped fails its next callback, which may come well after SIGCONT.
const frozenText = "the process was stopped for longer than the group session allows"

// processorStops returns the lines of the log at path, from byte from on,
// that say a processor stopped, split in two: stops, and fenced, those
// whose every failed message failed on the freeze fence. A fenced stop is
// a SIGSTOP fault's doing, however late its session's next message comes
// (CI's seed 20261130 saw one in a poison watch that began after the
// frozen instance answered /readyz 200), not the poison's.
func processorStops(path string, from int64) (stops, fenced []string) {
	b, err := os.ReadFile(path)
	if err != nil || from > int64(len(b)) {
		return nil, nil
	}
	for _, l := range strings.Split(string(b[from:]), "\n") {
		if !strings.Contains(l, `msg="processor stopped`) {
			continue
		}
		if onlyFenced(l) {
			fenced = append(fenced, l)
		} else {
			stops = append(stops, l)
		}
	}
	return stops, fenced
}

// onlyFenced reports whether a processor-stop line names message failures
// and each is the freeze fence's.
func onlyFenced(line string) bool {
	msgs := strings.Split(line, "error processing message")
	if len(msgs) < 2 {
		return false
	}
	for _, m := range msgs[1:] {
		if !strings.Contains(m, frozenText) {
			return false
		}
	}
	return true
}

// ready waits for in's /readyz and records a finding if it does not come.
func (h *harness) ready(ctx context.Context, in *instance, after string) {
	h.readyWithin(ctx, in, after, readyTimeout)
}

func (h *harness) readyWithin(ctx context.Context, in *instance, after string, timeout time.Duration) {
	if err := in.waitReady(ctx, timeout); err != nil && ctx.Err() == nil {
		h.notReady(fmt.Sprintf("after %s: %v", after, err))
		if !in.alive() {
			// Start it again so the run goes on with its instances.
			if err := in.start(); err == nil {
				_ = in.waitReady(ctx, readyTimeout)
			}
		}
	}
}

// undo ends every fault: clocks back, nothing frozen, broker up, every
// instance running and ready.
func (h *harness) undo(ctx context.Context) error {
	if _, err := h.broker.run("env"); err != nil {
		h.notReady(fmt.Sprintf("the broker was down at the end of the fault phase: %v", err))
		if _, err := h.broker.restart(); err != nil {
			return err
		}
	}
	for _, in := range h.running {
		_ = in.setOffset(0)
		_ = in.signal(syscall.SIGCONT)
		if !in.alive() {
			if err := in.start(); err != nil {
				return err
			}
		}
	}
	h.readyAll(ctx, "the fault phase")
	return nil
}

// audit waits until every fire of the window was read (or drainTimeout)
// and fills the figures.
func (h *harness) audit(ctx context.Context) {
	jobs := h.load.all()
	for _, j := range jobs {
		if j.Def.At != "" {
			h.res.OneShots++
		} else {
			h.res.Recurring++
		}
	}
	plan, err := audit.Expect(jobs, audit.Options{From: h.res.From, To: h.res.To})
	if err != nil {
		h.notReady(err.Error())
		return
	}
	deadline := time.Now().Add(drainTimeout)
	var obs []audit.Observed
	for {
		obs = h.obs.snapshot()
		h.res.Report = plan.Check(obs)
		if len(h.res.Report.Missing) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		h.cfg.Logf("soak: draining: %d of %d fires read", h.res.Report.Delivered, h.res.Report.Expected)
		sleep(ctx, 5*time.Second)
	}
	sleep(ctx, 3*time.Second) // late repeats
	obs = h.obs.snapshot()
	h.res.Report = plan.Check(obs)
	early, beyond := map[string]bool{}, map[string]bool{}
	for _, o := range obs {
		if lead := o.Dispatch.ScheduledAt.Sub(o.Received); lead > 0 {
			early[o.Dispatch.FireID] = true
			h.res.MaxEarly = max(h.res.MaxEarly, lead)
			if lead > h.cfg.EarlyBound {
				beyond[o.Dispatch.FireID] = true
			}
		}
	}
	h.res.Early, h.res.EarlyBeyond, h.res.EarlyBound = len(early), len(beyond), h.cfg.EarlyBound
	h.res.MissingByPartition = map[int32]int{}
	for _, id := range h.res.Report.Missing {
		h.res.MissingByPartition[topology.Partition(id[:strings.LastIndexByte(id, '@')], h.cfg.Partitions)]++
	}
	h.res.PoisonFires, h.res.Undecodable, h.res.Rejects = h.obs.counts()
}
