package bench

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/store"
)

// Run registers the jobs, measures the fires and returns the report. The
// system under test (processors for cfg.Layout on cfg.Kafka.Brokers) must be
// running, with its clock ticking in real time.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Every == 0 {
		cfg.Every = time.Minute
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cpu0 := cpuSeconds()
	cl, err := cfg.Kafka.NewKgo(kgo.ConsumeTopics(string(cfg.Layout.Dispatch())),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	rep := &Report{Jobs: cfg.Jobs, Mode: cfg.Mode, PayloadBytes: cfg.PayloadBytes}
	if cfg.Jitter > 0 {
		rep.Jitter = cfg.Jitter.String()
	}
	payload := randomPayload(cfg.PayloadBytes)
	if cfg.Mode == ModeEvery {
		rep.Every = cfg.Every.String()
	}
	sample := codecs.AppendDispatch(nil, &codecs.Dispatch{FireID: "job-0000000@2026-01-01T00:00:00Z", JobID: "job-0000000",
		Trigger: codecs.TriggerSchedule, ScheduledAt: time.Now(), FiredAt: time.Now(), Payload: payload})
	rep.RecordBytes = len(sample)
	if rep.RawPerSecond, rep.RawGokaPerSecond, err = rawCeilings(ctx, cfg, sample); err != nil {
		return nil, err
	}
	cfg.progress("raw transport ceiling: %.0f records/s of %d B (goka's sarama producer: %.0f records/s)",
		rep.RawPerSecond, len(sample), rep.RawGokaPerSecond)

	// Fires start only after registration is expected to be done. A burst
	// must not begin during registration, so its estimate is generous; a
	// steady run that overruns just measures from after registration.
	estimate := time.Duration(cfg.Jobs/20_000)*time.Second + 5*time.Second
	if cfg.Mode == ModeEvery {
		estimate = time.Duration(cfg.Jobs/40_000)*time.Second + 2*time.Second
	}
	// Payload-heavy puts register at a few MB/s (measured: 120 MB in
	// 12.8 s), so each 4 MiB of payload adds a second.
	estimate += time.Duration(int64(cfg.Jobs)*int64(cfg.PayloadBytes)/(4<<20)) * time.Second
	if cfg.FirstFireAfter > 0 {
		estimate = cfg.FirstFireAfter
	}
	base := time.Now().Add(estimate).Truncate(time.Second).Add(time.Second)
	col := newCollector(expectedFires(cfg))
	go col.consume(ctx, cl)
	regStart := time.Now()
	stopHeld := func() {}
	if cfg.StoresHeld != nil {
		h := &Held{}
		stop := sync.OnceFunc(sampleHeld(cfg.StoresHeld, regStart, h))
		defer stop() // an error before the window's end
		stopHeld = func() { stop(); rep.StoresHeld = h }
	}
	if err := register(ctx, cfg, cl, base, payload); err != nil {
		return nil, err
	}
	rep.Registration = time.Since(regStart)
	rep.RegistrationRate = float64(cfg.Jobs) / rep.Registration.Seconds()
	cfg.progress("registered %d jobs in %s (%.0f/s); first fires at %s", cfg.Jobs, rep.Registration.Round(time.Millisecond),
		rep.RegistrationRate, base.Format(time.TimeOnly))
	if time.Now().After(base) {
		cfg.progress("registration overran the first fire time by %s: early fires are late", time.Since(base).Round(time.Millisecond))
	}
	if cfg.Measuring != nil {
		cfg.Measuring()
	}
	var writes0 store.Writes
	if cfg.StoreWrites != nil {
		writes0 = cfg.StoreWrites()
	}
	switch cfg.Mode {
	case ModeAligned:
		err = measureBurst(ctx, cfg, col, base, rep)
	case ModeBucket:
		var at time.Time
		if at, err = triggerBucket(ctx, cfg, cl, base); err == nil {
			err = measureBurst(ctx, cfg, col, at, rep)
		}
	default:
		err = measureSteady(ctx, cfg, col, base, rep)
	}
	if err != nil {
		return nil, err
	}
	stopHeld() // the window's end: not the history's catch-up after it
	if cfg.StoreWrites != nil && rep.Fires > 0 {
		w, n := cfg.StoreWrites().Sub(writes0), float64(rep.Fires)
		rep.StoreBytesPerFire = &StoreBytes{WAL: float64(w.WAL) / n, Flush: float64(w.Flush) / n, Compaction: float64(w.Compaction) / n}
	}
	if cfg.History {
		measureHistory(ctx, cfg, cl, rep)
	}
	rep.CPUSeconds = cpuSeconds() - cpu0
	rep.PeakRSSBytes = peakRSS()
	if cfg.InstancePID != 0 {
		if rep.InstancePeakRSSBytes, err = VmHWM(cfg.InstancePID); err != nil {
			return nil, err
		}
	}
	if rep.RawPerSecond > 0 {
		rep.RawRatio = rep.FiresPerSecond / rep.RawPerSecond
	}
	return rep, nil
}

// register produces one put command per job and waits until the scheduler
// group has consumed them all.
func register(ctx context.Context, cfg Config, cl *kgo.Client, base time.Time, payload []byte) error {
	topic := string(cfg.Layout.Jobs())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	every := int(cfg.Every / time.Second)
	for i := 0; i < cfg.Jobs; i++ {
		id := jobID(i)
		def := codecs.JobDef{MisfireGrace: "5m", Payload: payload}
		if cfg.Jitter > 0 {
			def.Jitter = cfg.Jitter.String()
		}
		switch cfg.Mode {
		case ModeAligned:
			// Recurring jobs due at the same second (every hourly report at
			// :00), so the burst measures the fan-out, not completions.
			def.Every = "24h"
			def.Start = base.UTC().Format(time.RFC3339)
		case ModeBucket:
			// Members of one bucket whose own schedule is far off: only the
			// trigger fires them.
			def.Every = "24h"
			def.Start = base.Add(12 * time.Hour).UTC().Format(time.RFC3339)
			def.Bucket = BenchBucket
		default:
			def.Every = cfg.Every.String()
			def.Start = base.Add(time.Duration(i%every) * time.Second).UTC().Format(time.RFC3339)
		}
		v, err := codecs.EncodeCommand(codecs.CommandMsg{Op: codecs.OpPut, Job: &def})
		if err != nil {
			return err
		}
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte(id), Value: v}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				firstErr = err
				mu.Unlock()
			}
		})
		if i > 0 && i%200_000 == 0 {
			cfg.progress("produced %d put commands", i)
		}
	}
	wg.Wait()
	if firstErr != nil {
		return fmt.Errorf("bench: registering: %w", firstErr)
	}
	return waitConsumed(ctx, cl, string(cfg.Layout.SchedulerGroup()), topic)
}

func jobID(i int) string { return "job-" + strconv.Itoa(i) }

// triggerBucket waits until base and produces the bucket trigger of
// ModeBucket; the burst is measured from the time it was produced (the
// dispatch events' scheduled_at is the trigger's timestamp).
func triggerBucket(ctx context.Context, cfg Config, cl *kgo.Client, base time.Time) (time.Time, error) {
	if err := sleepUntil(ctx, base); err != nil {
		return time.Time{}, err
	}
	at := time.Now()
	v := fmt.Appendf(nil, `{"v":1,"bucket":%q,"trigger_id":"bench-%d"}`, BenchBucket, at.UnixNano())
	r := &kgo.Record{Topic: string(cfg.Layout.BucketTriggers()), Key: []byte(BenchBucket), Value: v, Timestamp: at}
	if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		return time.Time{}, fmt.Errorf("bench: producing the bucket trigger: %w", err)
	}
	cfg.progress("bucket trigger produced at %s", at.Format(time.TimeOnly))
	return at, nil
}

// waitConsumed waits until group's committed offsets reach the end of topic
// (its lag, measured as the lag package measures it, is 0).
func waitConsumed(ctx context.Context, cl *kgo.Client, group, topic string) error {
	adm := kadm.NewClient(cl)
	for {
		parts, err := lag.Measure(ctx, adm, lag.Earliest, lag.Target{Group: group, Topic: topic})
		if err == nil && lag.Sum(parts) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// rawCeilings produces min(jobs, 500k) records of the dispatch size to a
// scratch topic, once with a plain franz-go producer and once with goka's
// own producer (sarama, the path goka's ctx.Emit takes), and returns the
// records per second of each; every ack is awaited.
func rawCeilings(ctx context.Context, cfg Config, value []byte) (kgoRate, gokaRate float64, err error) {
	cl, err := cfg.Kafka.NewKgo(kgo.ProducerLinger(0))
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	n := min(cfg.Jobs, 500_000)
	topic := func(name string) (string, error) {
		t := string(cfg.Layout.Prefix) + name
		_, err := kadm.NewClient(cl).CreateTopic(ctx, cfg.Layout.Partitions, cfg.Layout.Replication, nil, t)
		return t, err
	}
	kt, err := topic("chronos-bench-raw")
	if err != nil {
		return 0, 0, fmt.Errorf("bench: raw ceiling: %w", err)
	}
	if kgoRate, err = rawKgo(ctx, cl, kt, n, value); err != nil {
		return 0, 0, fmt.Errorf("bench: raw ceiling: %w", err)
	}
	gt, err := topic("chronos-bench-raw-goka")
	if err != nil {
		return 0, 0, fmt.Errorf("bench: raw ceiling of goka's producer: %w", err)
	}
	if gokaRate, err = rawGoka(cfg, gt, n, value); err != nil {
		return 0, 0, fmt.Errorf("bench: raw ceiling of goka's producer: %w", err)
	}
	return kgoRate, gokaRate, nil
}

func rawKgo(ctx context.Context, cl *kgo.Client, topic string, n int, value []byte) (float64, error) {
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Key: []byte(jobID(i)), Value: value}
	}
	start := time.Now()
	for i := 0; i < n; i += 5000 {
		if err := cl.ProduceSync(ctx, recs[i:min(i+5000, n)]...).FirstErr(); err != nil {
			return 0, err
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

func rawGoka(cfg Config, topic string, n int, value []byte) (float64, error) {
	p, err := cfg.Kafka.GokaProducer()
	if err != nil {
		return 0, err
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = jobID(i)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	for _, k := range keys {
		wg.Add(1)
		p.EmitWithHeaders(topic, k, value, nil).Then(func(err error) {
			if err != nil {
				mu.Lock()
				firstErr = cmp.Or(firstErr, err)
				mu.Unlock()
			}
			wg.Done()
		})
	}
	wg.Wait()
	rate := float64(n) / time.Since(start).Seconds()
	return rate, errors.Join(firstErr, p.Close())
}

// collector keeps what arrived on chronos-dispatch.
type collector struct {
	mu       sync.Mutex
	seen     map[uint64]uint32 // fire_id hash -> count
	arrivals []arrival
	dups     int64
}

type arrival struct {
	scheduled, received time.Time
	// due is the dispatch's due_at (scheduled without a jitter).
	due time.Time
	// fired is the dispatch's fired_at: when the fan-out of its chunk began.
	fired time.Time
}

// newCollector returns a collector sized for about n fires, so the measuring
// consumer does not spend the burst growing its map and slice.
func newCollector(n int) *collector {
	n = min(n, 20_000_000)
	return &collector{seen: make(map[uint64]uint32, n), arrivals: make([]arrival, 0, n)}
}

// expectedFires estimates the fires a run receives (the window plus slack).
func expectedFires(cfg Config) int {
	if cfg.Mode == ModeAligned || cfg.Mode == ModeBucket {
		return cfg.Jobs
	}
	perSecond := float64(cfg.Jobs) / cfg.Every.Seconds()
	return int(perSecond * (cfg.Duration.Seconds() + 10))
}

func (c *collector) consume(ctx context.Context, cl *kgo.Client) {
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		now := time.Now()
		c.mu.Lock()
		fs.EachRecord(func(r *kgo.Record) {
			id, sched, fired, ok := parseDispatch(r.Value)
			if !ok {
				return
			}
			due := sched
			if d, err := time.Parse(time.RFC3339Nano, string(field(r.Value, `"due_at":"`))); err == nil {
				due = d
			}
			h := fnv.New64a()
			_, _ = h.Write(id)
			k := h.Sum64()
			if c.seen[k]++; c.seen[k] > 1 {
				c.dups++
				return
			}
			c.arrivals = append(c.arrivals, arrival{scheduled: sched, received: now, fired: fired, due: due})
		})
		c.mu.Unlock()
	}
}

// parseDispatch extracts fire_id, scheduled_at and fired_at without a JSON
// decoder.
func parseDispatch(v []byte) (id []byte, scheduled, fired time.Time, ok bool) {
	id = field(v, `"fire_id":"`)
	scheduled, err := time.Parse(time.RFC3339Nano, string(field(v, `"scheduled_at":"`)))
	fired, ferr := time.Parse(time.RFC3339Nano, string(field(v, `"fired_at":"`)))
	return id, scheduled, fired, id != nil && err == nil && ferr == nil
}

func field(v []byte, name string) []byte {
	i := bytes.Index(v, []byte(name))
	if i < 0 {
		return nil
	}
	v = v[i+len(name):]
	j := bytes.IndexByte(v, '"')
	if j < 0 {
		return nil
	}
	return v[:j]
}

func (c *collector) snapshot() ([]arrival, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]arrival(nil), c.arrivals...), c.dups
}

func (c *collector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.arrivals)
}

// measureBurst waits until every aligned job fired (or the duration runs out).
func measureBurst(ctx context.Context, cfg Config, col *collector, due time.Time, rep *Report) error {
	deadline := due.Add(cfg.Jitter + cfg.Duration)
	for col.count() < cfg.Jobs && time.Now().Before(deadline) {
		if err := sleepUntil(ctx, time.Now().Add(50*time.Millisecond)); err != nil {
			return err
		}
		if n := col.count(); n > 0 && n%100_000 < 2000 {
			cfg.progress("%d of %d fired", n, cfg.Jobs)
		}
	}
	time.Sleep(500 * time.Millisecond) // late duplicates
	arr, dups := col.snapshot()
	rep.Expected, rep.Fires, rep.Duplicates = int64(cfg.Jobs), int64(len(arr)), dups
	rep.Missed = rep.Expected - rep.Fires
	delays(arr, rep)
	if len(arr) > 0 {
		first, last := arr[0].received, arr[0].received
		for _, a := range arr {
			first, last = minTime(first, a.received), maxTime(last, a.received)
		}
		rep.Drain = last.Sub(due)
		rep.Window = last.Sub(first)
		rep.FiresPerSecond = float64(len(arr)) / max(last.Sub(first).Seconds(), 0.001)
	}
	return nil
}

// measureSteady measures the fires scheduled in a window of Duration that
// starts at base, or at the first whole second after registration ended if
// registration overran base (the earlier fires are catch-up, not steady).
func measureSteady(ctx context.Context, cfg Config, col *collector, base time.Time, rep *Report) error {
	start := base
	if now := time.Now(); now.After(base) {
		start = now.Truncate(time.Second).Add(time.Second)
		cfg.progress("measuring from %s, after registration, instead of %s", start.Format(time.TimeOnly), base.Format(time.TimeOnly))
	}
	end := start.Add(cfg.Duration)
	for time.Now().Before(end.Add(5 * time.Second)) {
		if err := sleepUntil(ctx, minTime(time.Now().Add(5*time.Second), end.Add(5*time.Second))); err != nil {
			return err
		}
		cfg.progress("%d fires so far", col.count())
	}
	arr, dups := col.snapshot()
	in := arr[:0]
	for _, a := range arr {
		if !a.scheduled.Before(start) && a.scheduled.Before(end) {
			in = append(in, a)
		}
	}
	rep.Window, rep.Duplicates = cfg.Duration, dups
	from := int(start.Sub(base) / time.Second)
	rep.Expected = expectedEvery(cfg.Jobs, int(cfg.Every/time.Second), from, int(cfg.Duration/time.Second))
	rep.Fires = int64(len(in))
	rep.Missed = rep.Expected - rep.Fires
	rep.FiresPerSecond = float64(len(in)) / cfg.Duration.Seconds()
	delays(in, rep)
	rep.Slices = slices(in, start, end, 10*time.Second)
	return nil
}

// slices splits arrivals by scheduled time into slices of width w and
// returns each slice's p99 and max delay.
func slices(arr []arrival, start, end time.Time, w time.Duration) []Slice {
	var out []Slice
	for from := start; from.Before(end); from = from.Add(w) {
		var r Report
		var in []arrival
		for _, a := range arr {
			if !a.scheduled.Before(from) && a.scheduled.Before(from.Add(w)) {
				in = append(in, a)
			}
		}
		delays(in, &r)
		out = append(out, Slice{Start: from, Fires: len(in), P99: r.DelayP99, Max: r.DelayMax, StartP99: r.StartP99})
	}
	return out
}

// expectedEvery counts the fires in seconds [from, from+d) after base of
// jobs where job i fires at second i mod every and then every `every`
// seconds.
func expectedEvery(jobs, every, from, d int) int64 {
	var n int64
	for sec := from; sec < from+d; sec++ {
		off := sec % every
		if off < jobs {
			n += int64((jobs-1-off)/every + 1)
		}
	}
	return n
}

func delays(arr []arrival, rep *Report) {
	if len(arr) == 0 {
		return
	}
	ds := make([]time.Duration, len(arr))
	for i, a := range arr {
		ds[i] = a.received.Sub(a.scheduled)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	rep.DelayP50 = ds[len(ds)/2]
	rep.DelayP99 = ds[len(ds)*99/100]
	rep.DelayMax = ds[len(ds)-1]
	for i, a := range arr {
		ds[i] = a.fired.Sub(a.scheduled)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	rep.StartP99 = ds[len(ds)*99/100]
	perSecond := map[int64]int{}
	for i, a := range arr {
		ds[i] = a.received.Sub(a.due)
		perSecond[a.received.Unix()]++
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	rep.DueDelayP99 = ds[len(ds)*99/100]
	for _, n := range perSecond {
		rep.PeakPerSecond = max(rep.PeakPerSecond, n)
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

// VmHWM returns the peak resident set size of process pid in bytes, from
// /proc/<pid>/status (Linux).
func VmHWM(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, fmt.Errorf("bench: peak RSS of process %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("bench: peak RSS of process %d: %w", pid, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("bench: no VmHWM for process %d", pid)
}

// randomPayload is a JSON string of n bytes of random hex digits (nil for 0).
func randomPayload(n int) []byte {
	if n == 0 {
		return nil
	}
	b := make([]byte, n)
	b[0], b[n-1] = '"', '"'
	const hexDigits = "0123456789abcdef"
	for i := 1; i < n-1; i++ {
		b[i] = hexDigits[rand.IntN(16)]
	}
	return b
}

func peakRSS() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Maxrss * 1024
}

// measureHistory records the history group's lag on the dispatch topic
// now, and how long it takes to reach 0 (bounded by a minute).
func measureHistory(ctx context.Context, cfg Config, cl *kgo.Client, rep *Report) {
	adm := kadm.NewClient(cl)
	target := lag.Target{Group: string(cfg.Layout.HistoryGroup()), Topic: string(cfg.Layout.Dispatch())}
	start := time.Now()
	for first := true; ; first = false {
		parts, err := lag.Measure(ctx, adm, lag.Earliest, target)
		if err == nil {
			n := lag.Sum(parts)
			if first {
				rep.HistoryLag = &n
			}
			if n == 0 {
				d := time.Since(start)
				rep.HistoryCatchUp = &d
				return
			}
		}
		if time.Since(start) > time.Minute || ctx.Err() != nil {
			d := time.Duration(-1)
			rep.HistoryCatchUp = &d
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// sampleHeld samples held every 250 ms into h until stop is called (once:
// it waits for the sampler, then h is the caller's again). Times are from
// start.
func sampleHeld(held func() store.Held, start time.Time, h *Held) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	take := func() {
		n := held()
		h.FloodMax, h.RecoveryMax = max(h.FloodMax, n.Flood), max(h.RecoveryMax, n.Recovery)
		if n.Flood > 0 {
			at := time.Since(start)
			if h.FloodFirst == nil {
				h.FloodFirst = &at
			}
			h.FloodLast = &at
		}
	}
	go func() {
		defer close(exited)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			take()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(done); <-exited }
}
