package autoscaling

// Adversary round 19g on issue 19 (autoscaling on what makes fires late):
// the reproductions of the breaks that are fixed, run by every go test.
// Each test names the promise it broke and what it measured before the
// fix; TestAdv19gClockAheadRestartResetsStalled, still open (a documented
// limit), is in deploy/adversary19g_test.go under its tag.

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/deploy/deploytest"
	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/processors/scheduler"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/topology"
)

// TestAdv19gRebalancesHideSlowBucketFanOut breaks "a fan-out that is truly
// behind (... slow bucket fan-out) asks for more replicas ... and never
// fewer than needed" through the round-19f fixes. The bucket fan-out's
// start (scheduler.pendingBuckets, what chronos_fanout_lateness_seconds
// reads for bucket fires since 02b9588) is kept in memory and reset at
// every recovery of the partition (OnRecovered: pending.reset), and every
// rebalance of the scheduler group re-recovers every partition of every
// pod (goka's eager rebalance; round 19f's TestAdv19fRepeatedRebalances
// HideTheBacklog), including the partitions that stay where they were. So
// each rebalance restarts the bucket fan-out's lateness from 0 while its
// oldest fire waits on: the same hole round 19f closed for the watermark
// ("a backlog it had before is not [excused]: a pod crash-looping in and
// out of the group ... no longer hides it"), reopened for bucket fires,
// and with no cap (the watermark's excuse is at most the restore plus
// lag.RebalancePause; the bucket's is the whole wait). Here (embedded
// broker): 2 partitions, pod A with a live clock, 160 jobs in bucket
// tenant-a (every 24h: none due by schedule), one job per chunk, a
// dispatch taking 1 s per produce (deploytest.Slow, as in
// TestAdv19fSlowBucketFanOutAsksForTheMinimum); one bucket trigger; a
// second pod C (as slow) joins 6 s later, runs 3 s, leaves, and comes back
// 8 s later (a crash loop), 3 times. Samples every 500 ms: the time the
// oldest undispatched bucket fire has waited (since the trigger) and the
// gauge (max over A and C). Expected: the gauge reads that wait within
// the documented excuse (lag.RebalancePause + 1 s restore + a threshold,
// 26 s, as round 19f's bound); no sample with the fires over that bound
// late asks for 1 replica. Measured (embedded broker, 68 s): control,
// before the first rebalance, the fires waiting 6.0 s read 5.0 s; then 131
// samples with the fan-out under way (58 of 160 fires out at the end), the
// oldest fire waiting up to 66 s, the gauge at most 10.0 s: under the wait
// minus 26 s in 76 samples (58%), and 51 samples with the fires more than
// 26 s late asked for 1 replica (with 4 cycles, 85 s: 116 of 170, at most
// 12.0 s, 79 asking for 1).
//
//	go test -count=1 -v -run TestAdv19gRebalancesHideSlowBucketFanOut ./deploy/autoscaling/
func TestAdv19gRebalancesHideSlowBucketFanOut(t *testing.T) {
	// Parallel: it mostly sleeps, and compares the gauge with the backlog
	// it measures, both slowed alike by other tests.
	t.Parallel()
	// 2 cycles (the reproduction ran 3): the package stays under go
	// test's 10 min default timeout.
	const partitions, jobs, cycles = 2, 160, 2
	env := testenv.New(t, partitions)
	now := time.Now()
	for i := range jobs {
		env.Put(fmt.Sprintf("job-%03d", i), codecs.JobDef{Every: "24h", Bucket: "tenant-a"}, now)
	}
	prodA := &deploytest.Slow{Producer: scheduler.KgoProducer{Client: env.Client}}
	regA := prometheus.NewRegistry()
	cfgA := env.Config()
	cfgA.Clock.NoTicker = false // a live clock: one advance per partition per second
	cfgA.Producer, cfgA.Registerer = prodA, regA
	cfgA.Fanout.ChunkSize = 1
	cfgA.Fanout.Budget = 50 * time.Millisecond
	a := env.Start(cfgA)
	env.WaitApplied()
	testenv.Eventually(t, 60*time.Second, func() error {
		ws := a.Scheduler().Watermarks()
		if len(ws) != partitions {
			return fmt.Errorf("watermarks %v", ws)
		}
		for p, w := range ws {
			if w.IsZero() {
				return fmt.Errorf("partition %d has no watermark yet", p)
			}
		}
		return nil
	})
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	prodA.SetDelay(time.Second)
	sent := time.Now()
	env.Produce(string(env.Layout.BucketTriggers()), "tenant-a", []byte(`{"v":1,"bucket":"tenant-a","trigger_id":"t-1"}`), sent)

	var (
		mu   sync.Mutex // regC
		regC *prometheus.Registry
	)
	type sample struct {
		waited, late float64
		out          int
	}
	var samples []sample
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			time.Sleep(500 * time.Millisecond) // a sampling rate, not a wait for an effect
			mu.Lock()
			regs := []*prometheus.Registry{regA}
			if regC != nil {
				regs = append(regs, regC)
			}
			mu.Unlock()
			if series(t, lag.LatenessMetric, regs...) != partitions {
				continue // a partition moving (revoked, or restoring on its new owner): left out of the gauge, as documented
			}
			samples = append(samples, sample{time.Since(sent).Seconds(), deploytest.Lateness(t, regs...), dispatch.Len()})
		}
	}()
	time.Sleep(6 * time.Second) // the fan-out under way before the first rebalance, not a wait for an effect
	mu.Lock()
	control := deploytest.Lateness(t, regA) // before any rebalance: the gauge reads the wait
	mu.Unlock()
	controlWait := time.Since(sent).Seconds()
	for range cycles {
		prodC := &deploytest.Slow{Producer: scheduler.KgoProducer{Client: env.Client}}
		prodC.SetDelay(time.Second)
		reg := prometheus.NewRegistry()
		cfgC := env.Config()
		cfgC.Clock.NoTicker = false
		cfgC.Producer, cfgC.Registerer = prodC, reg
		cfgC.Fanout.ChunkSize = 1
		cfgC.Fanout.Budget = 50 * time.Millisecond
		c := env.Start(cfgC)
		mu.Lock()
		regC = reg
		mu.Unlock()
		time.Sleep(3 * time.Second) // the crash-looping pod's run, not a wait for an effect
		mu.Lock()
		regC = nil
		mu.Unlock()
		prodC.SetDelay(0) // let the stopping pod finish its chunk quickly
		c.Stop()
		time.Sleep(8 * time.Second) // its restart back-off, not a wait for an effect
	}
	close(stop)
	<-done

	bound := (lag.RebalancePause + time.Second).Seconds() + lag.LatenessThreshold(time.Second)
	hidden, minimum, under := 0, 0, 0
	worstLate, worstWait := 0.0, 0.0
	for _, s := range samples {
		if s.out >= jobs {
			continue // the fan-out is done: nothing waits
		}
		under++
		worstLate, worstWait = max(worstLate, s.late), max(worstWait, s.waited)
		if s.late < s.waited-bound {
			hidden++
		}
		if s.waited > bound && s.late <= lag.LatenessThreshold(time.Second) {
			minimum++
		}
	}
	t.Logf("control, before the first rebalance: the oldest fire waiting %.1f s, the gauge %.1f s", controlWait, control)
	t.Logf("one bucket trigger of %d jobs, a dispatch of 1 s per produce, %d join/leave cycles of a crash-looping pod: %d samples with the fan-out under way (%d of %d fires out at the end), the oldest fire waiting up to %.0f s; the gauge read under the wait minus %.0f s in %d, at most %.1f s; the lateness trigger asked for 1 replica in %d samples with the fires more than %.0f s late",
		jobs, cycles, under, dispatch.Len(), jobs, worstWait, bound, hidden, worstLate, minimum, bound)
	require.Positive(t, under, "setup: sampled")
	require.Greater(t, control, controlWait-lag.LatenessThreshold(time.Second), "setup: before any rebalance the gauge reads the bucket fan-out's wait")
	require.Greater(t, worstWait, bound+lag.LatenessThreshold(time.Second), "setup: the bucket fan-out stays behind")
	require.Zero(t, hidden,
		"the oldest bucket fire waited up to %.0f s, but the gauge read less than the wait minus %.0f s in %d of %d samples (each rebalance resets the bucket fan-out's start)", worstWait, bound, hidden, under)
	require.Zero(t, minimum, "the lateness trigger asked for 1 replica in %d samples with bucket fires more than %.0f s late", minimum, bound)
}

// TestAdv19gRepeatedTriggerIDHidesSlowBucketFanOut breaks "a fan-out that
// is truly behind (... slow bucket fan-out) asks for more replicas ... and
// never fewer than needed" for a bucket trigger sent twice with one
// trigger_id (docs/topics.md: "Chronos does not deduplicate triggers:
// reusing a trigger_id gives events with the same fire_ids"; a client that
// retries a trigger whose answer it did not get, or a redelivered trigger,
// "repeats the same ids"). The bucket fan-out's start is noted per bucket
// and trigger id (scheduler.pendingBuckets, key bucket + trigger_id): the
// second fan-out finds the first's entry and notes nothing, and when the
// first finishes it deletes the entry the second still needs; the
// second's next chunk notes a new start at the announced time then. From
// there the gauge reads the time since the first finished, not since the
// second began, while its fires wait. Here (embedded broker): 2
// partitions, 1 pod with a live clock, 40 jobs in bucket tenant-a (every
// 24h), one job per chunk, a dispatch taking 1 s per produce; trigger t-1
// at 0 s and the same trigger (t-1) again at 10 s. Both fan-outs run side
// by side (their chunks alternate through the loopback). Samples every
// 500 ms from the second trigger on: the wait of the second fan-out's
// oldest undispatched fire (since it was sent) and the gauge. Expected:
// the gauge reads at least that wait minus a threshold while the fan-out
// is under way. Measured (embedded broker, 42 s): 80 fires out in 41 s;
// 20 of 60 samples (the last 10 s, after the first fan-out ended) read
// under the second fan-out's wait minus 5 s, the worst 0.0 s with its
// fires waiting 21.0 s.
//
//	go test -count=1 -v -run TestAdv19gRepeatedTriggerIDHidesSlowBucketFanOut ./deploy/autoscaling/
func TestAdv19gRepeatedTriggerIDHidesSlowBucketFanOut(t *testing.T) {
	// Parallel: it mostly sleeps, and compares the gauge with the backlog
	// it measures, both slowed alike by other tests.
	t.Parallel()
	const partitions, jobs = 2, 40
	env := testenv.New(t, partitions)
	now := time.Now()
	for i := range jobs {
		env.Put(fmt.Sprintf("job-%03d", i), codecs.JobDef{Every: "24h", Bucket: "tenant-a"}, now)
	}
	prod := &deploytest.Slow{Producer: scheduler.KgoProducer{Client: env.Client}}
	reg := prometheus.NewRegistry()
	cfg := env.Config()
	cfg.Clock.NoTicker = false // a live clock: one advance per partition per second
	cfg.Producer, cfg.Registerer = prod, reg
	cfg.Fanout.ChunkSize = 1
	cfg.Fanout.Budget = 50 * time.Millisecond
	a := env.Start(cfg)
	env.WaitApplied()
	testenv.Eventually(t, 60*time.Second, func() error {
		ws := a.Scheduler().Watermarks()
		if len(ws) != partitions {
			return fmt.Errorf("watermarks %v", ws)
		}
		for p, w := range ws {
			if w.IsZero() {
				return fmt.Errorf("partition %d has no watermark yet", p)
			}
		}
		return nil
	})
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	prod.SetDelay(time.Second)
	trigger := []byte(`{"v":1,"bucket":"tenant-a","trigger_id":"t-1"}`)
	first := time.Now()
	env.Produce(string(env.Layout.BucketTriggers()), "tenant-a", trigger, first)
	time.Sleep(10 * time.Second) // the retry's delay, not a wait for an effect
	second := time.Now()
	env.Produce(string(env.Layout.BucketTriggers()), "tenant-a", trigger, second)

	hidden, all := 0, 0
	var worstGap, gapWait, gapLate float64
	for {
		time.Sleep(500 * time.Millisecond) // a sampling rate, not a wait for an effect
		out := dispatch.Len()
		if out >= 2*jobs || time.Since(first) > 75*time.Second {
			break
		}
		all++
		waited := time.Since(second).Seconds() // the second fan-out's oldest undispatched fire
		late := deploytest.Lateness(t, reg)
		if gap := waited - late; gap > lag.LatenessThreshold(time.Second) {
			hidden++
			if gap > worstGap {
				worstGap, gapWait, gapLate = gap, waited, late
			}
		}
	}
	t.Logf("one bucket trigger of %d jobs sent twice with trigger id t-1, 10 s apart, a dispatch of 1 s per produce: %d fires out in %.0f s; %d of %d samples read under the second fan-out's wait minus %.0f s, the worst %.1f s with the fires waiting %.1f s",
		jobs, dispatch.Len(), time.Since(first).Seconds(), hidden, all, lag.LatenessThreshold(time.Second), gapLate, gapWait)
	require.Positive(t, all, "setup: sampled")
	require.Zero(t, hidden,
		"the second trigger's bucket fires waited up to %.1f s, but the gauge read %.1f s (%d of %d samples under the wait minus a threshold): the first fan-out's end deleted the second's start", gapWait, gapLate, hidden, all)
}

// TestAdv19gSteadyCommandsScaleOut breaks "an idle or on-time system asks
// for the minimum" for a steady stream of commands (puts, or the commands
// a bulk pause/resume writes: one per job it changes, docs/topics.md).
// The chronos-jobs trigger (lagThreshold 100, "grows when: a burst of
// puts, a bulk import", docs/operations.md Autoscaling) reads the
// committed lag, and the group commits once a second (sarama's default
// auto-commit interval): a steady R commands a second keep about R x 1 s
// uncommitted however fast they are applied, so R a few hundred asks for
// several replicas while every command is applied within a second and
// every fire is on time. This is round 19c's finding for the loopback
// (one-shot completions at 600 a second kept its lag near 600; that
// trigger was removed) on the one Kafka trigger kept; the project's own
// criterion (TestOneShotJobsDoNotScaleOut: with a share s of samples
// asking for more, the HPA's 60 s window of 4 polls scales up with
// probability s^4, kept under 0.05). A reminder service that creates the
// 600 `at` jobs a second of that test as they come is such a stream; a
// replica registers about 20,000 puts a second (docs/performance.md). Here
// (embedded broker): 4 partitions, one pod with a live clock, 600 puts a
// second (new jobs every 24h, 60 every 100 ms) for 28 s; 25 s of samples
// after 3 s of warm-up. Expected: the share s of samples asking for more
// than 1 replica gives s^4 < 0.05. Measured (embedded broker, 29 s): at
// most 60 puts sent and not yet applied (0.1 s of the stream), lateness
// 0.00 s, yet 432 of 482 samples (90%) asked for more than 1 replica, up
// to 4 (chronos-jobs committed lag 360): probability 0.65 in a 60 s
// window. At 300 a second: 335 of 483 (69%), up to 3 (lag 210), 0.23.
//
//	go test -count=1 -v -run TestAdv19gSteadyCommandsScaleOut ./deploy/autoscaling/
func TestAdv19gSteadyCommandsScaleOut(t *testing.T) {
	const partitions, tick = 4, 100 * time.Millisecond
	perTick := 60
	if testing.Short() {
		// The race run (-race -short): 300 puts a second, which still
		// asked for more than 1 replica in 69% of the samples before the
		// fix; at 600 the race detector's CPU cost on 2 cores beside the
		// other packages left 1,965 puts unapplied (CI, stop 34).
		perTick = 30
	}
	env := testenv.New(t, partitions)
	so := deploytest.ShippedFor(t, env)
	adm := deploytest.Admin(t, env)
	reg := prometheus.NewRegistry()
	cfg := env.Config()
	cfg.Clock.NoTicker = false
	cfg.Registerer = reg
	env.Start(cfg)
	env.WaitApplied()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sent atomic.Int64
	streamDone := make(chan struct{})
	go func() {
		defer close(streamDone)
		pace := time.NewTicker(tick) // the load's rate, not a wait for an effect
		defer pace.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-pace.C:
			}
			n := sent.Load()
			keys, vals := make([]string, perTick), make([][]byte, perTick)
			for k := range keys {
				keys[k] = fmt.Sprintf("job-%07d", n+int64(k))
				vals[k] = testenv.PutCommand(keys[k], codecs.JobDef{Every: "24h"})
			}
			env.ProduceMany(string(env.Layout.Jobs()), keys, vals, time.Now())
			sent.Add(int64(perTick))
		}
	}()
	start := time.Now()
	var over, all int
	var seen int64
	var lags map[string]int64
	worstLate, worstBehind := 0.0, 0.0
	for time.Since(start) < 28*time.Second {
		time.Sleep(50 * time.Millisecond) // a sampling rate, not a wait for an effect
		if time.Since(start) < 3*time.Second {
			continue
		}
		parts, err := lag.Measure(context.Background(), adm, lag.Earliest, so.Targets()...)
		if err != nil {
			continue
		}
		late := deploytest.Lateness(t, reg)
		worstLate = max(worstLate, late)
		// Commands sent but not yet applied, as the pod counts them.
		worstBehind = max(worstBehind, float64(sent.Load())-counterSum(t, reg, "chronos_commands_total"))
		n, verdicts := so.ReplicasWith(parts, lag.Observed{Lateness: late}, 1)
		all++
		if n > 1 {
			over++
			if n > seen {
				seen, lags = n, deploytest.ByTopic(env, verdicts)
			}
		}
	}
	cancel()
	<-streamDone
	rate := float64(perTick) / tick.Seconds()
	share := float64(over) / float64(max(all, 1))
	t.Logf("%.0f puts a second, %d sent; at most %.0f sent and not yet applied (%.1f s of the stream); worst fan-out lateness %.2f s; %d of %d samples asked for more than 1 replica (up to %d, lags %v): the HPA scales up in a 60 s window with probability %.2f",
		rate, sent.Load(), worstBehind, worstBehind/rate, worstLate, over, all, seen, lags, math.Pow(share, 4))
	require.Positive(t, all)
	require.Less(t, worstLate, lag.LatenessThreshold(time.Second), "setup: the fan-out is on time")
	require.Less(t, worstBehind, 2*rate, "setup: the commands are applied within two seconds")
	require.Less(t, math.Pow(share, 4), 0.05, "%.0f puts a second, each applied within %.1f s and the fan-out on time: %.0f%% of the samples asked for up to %d replicas (lags %v)",
		rate, worstBehind/rate, 100*share, seen, lags)
}

// TestAdv19gScaleStepWaitNotExcused breaks "an idle or on-time system asks
// for the minimum (... rebalances, restores, a scale step)" as the rule
// of rounds 19e/19f promises it (docs/operations.md Autoscaling: "For 10 s
// after a partition moved (a rebalance, a restore), up to its restore plus
// 20 s of it is excused: the advances waited for the new owner, who
// catches up in a second or two"; lag.Lateness: "the announced time then
// minus the watermark"). The excuse is From minus the watermark, From
// being the announced time the instance knew at the recovery
// (OnRecovered: announcedNow, the instance's latenessAnnounced), and that
// is what its scheduler consumed, which stopped with every member for the
// rebalance (the clock table counts only once 20 s ahead,
// lag.ConsumedGrace): From is the watermark, or before it, and nothing is
// excused after any rebalance shorter than 20 s. The gauge reads from what
// the pod consumed, and a pod consumes the queued advances of all its
// partitions at once: an idle partition catches up at once and moves the
// pod's announced time to now, while a busy one replays its queued
// advances and reads the whole wait. Here (embedded broker): 8
// partitions, 1,250 jobs every second on each even partition (5,000 fires
// a second, under a replica's 6,125; on time on one pod: checked), 20,000
// idle jobs of 1 KB on the odd ones; pod A with a live clock; two pods
// join at once (the shipped scaleUp policy adds 2 Pods), with empty data
// dirs. Samples every 50 ms of the gauge (max over the pods) and of each
// partition's times, until 10 s after both are ready.
// Expected: no sample asks for more than 1 replica
// (TestScaleUpRestoreAsksForTheMinimum's criterion). Measured before the
// fix (embedded broker, 27 s): ready after 8.2 s; From up to 6.3 s behind
// the wall time at recovery on the 8 partitions, equal to or a second
// before the watermark; the gauge at most 5.0-6.0 s, over 5 s in 0-2 of
// about 350 samples (asking for 2 replicas). The reads are transient (the
// HPA's 60 s window absorbs them here; a restore of R s adds R to them);
// the excuse never applied. Taking From from the clock table did not
// settle it (the clock group rebalances with the scheduler group: From
// still 5.3 s stale once, the gauge at 5.0 s); the fix excuses the
// restore plus lag.RebalancePause for the grace, without a From.
// Then (CI, Apache Kafka, with the processors package's tests beside it;
// 1 of 6 runs here under that load): 6.0 s in one sample. A new pod's
// busy partition recovered 0.2 s before its idle one, completed the
// oldest of the advances queued for it while the pod had consumed no
// later one, counted as caught up (nothing excused), and read 6 s once the
// idle partition consumed the rest. Caught up now means its watermark
// reached the clock table too (Scheduler.SetClockTable;
// TestCaughtUpWaitsForTheQueuedAdvances).
//
//	go test -count=1 -v -run TestAdv19gScaleStepWaitNotExcused ./deploy/autoscaling/
func TestAdv19gScaleStepWaitNotExcused(t *testing.T) {
	const partitions = 8
	perBusy, idleJobs := 1250, 20000
	if testing.Short() {
		// The race run (-race -short): the same step at a tenth of the
		// load, which the race detector's CPU cost would otherwise make
		// late on 2 cores (CI: 17 samples over 5 s, none on time).
		perBusy, idleJobs = 125, 2000
	}
	env := testenv.New(t, partitions)
	now := time.Now()
	put := func(keys []string, def codecs.JobDef) {
		for i := 0; i < len(keys); i += 1000 {
			ks := keys[i:min(i+1000, len(keys))]
			vals := make([][]byte, len(ks))
			for j, k := range ks {
				vals[j] = testenv.PutCommand(k, def)
			}
			env.ProduceMany(string(env.Layout.Jobs()), ks, vals, now)
		}
	}
	var busy, idle []string
	count := map[int32]int{}
	for i := 0; len(busy) < 4*perBusy; i++ {
		k := fmt.Sprintf("job-%06d", i)
		if p := topology.Partition(k, partitions); p%2 == 0 && count[p] < perBusy {
			count[p]++
			busy = append(busy, k)
		}
	}
	for i := 0; len(idle) < idleJobs; i++ {
		if k := fmt.Sprintf("idle-%06d", i); topology.Partition(k, partitions)%2 == 1 {
			idle = append(idle, k)
		}
	}
	put(busy, codecs.JobDef{Every: "1s"})
	put(idle, codecs.JobDef{Every: "24h", Payload: []byte(`{"blob":"` + strings.Repeat("x", 1000) + `"}`)})
	regA := prometheus.NewRegistry()
	cfgA := env.Config()
	cfgA.Clock.NoTicker = false
	cfgA.Registerer = regA
	a := env.Start(cfgA)
	env.WaitApplied()
	base := 0.0
	for range 100 {
		time.Sleep(50 * time.Millisecond) // a sampling rate, not a wait for an effect
		base = max(base, deploytest.Lateness(t, regA))
	}
	require.Less(t, base, lag.LatenessThreshold(time.Second), "setup: the load is on time on one pod")

	var (
		mu    sync.Mutex
		regs  = []*prometheus.Registry{regA}
		insts = []*testenv.Instance{a}
	)
	type sample struct {
		at    time.Time
		late  float64
		parts map[int32]scheduler.PartitionTimes
	}
	var samples []sample
	stop, done := make(chan struct{}), make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			time.Sleep(50 * time.Millisecond) // a sampling rate, not a wait for an effect
			mu.Lock()
			rs, is := append([]*prometheus.Registry(nil), regs...), append([]*testenv.Instance(nil), insts...)
			mu.Unlock()
			ps := map[int32]scheduler.PartitionTimes{}
			for _, i := range is {
				for p, pt := range i.Scheduler().Partitions() {
					ps[p] = pt
				}
			}
			samples = append(samples, sample{time.Now(), deploytest.Lateness(t, rs...), ps})
		}
	}()
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reg := prometheus.NewRegistry()
			cfg := env.Config() // an empty data dir
			cfg.Clock.NoTicker = false
			cfg.Registerer = reg
			mu.Lock()
			regs = append(regs, reg)
			mu.Unlock()
			i := env.Start(cfg)
			mu.Lock()
			insts = append(insts, i)
			mu.Unlock()
		}()
	}
	wg.Wait()
	ready := time.Since(start)
	time.Sleep(10 * time.Second) // the grace after the step, not a wait for an effect
	close(stop)
	<-done

	threshold := lag.LatenessThreshold(time.Second)
	over := 0
	var worst sample
	recovered := 0 // partitions recovered in the step
	for _, s := range samples {
		if s.late > threshold {
			over++
		}
		if s.late > worst.late {
			worst = s
		}
	}
	for _, pt := range samples[len(samples)-1].parts {
		if pt.RecoveredAt.After(start) {
			recovered++
		}
	}
	var detail []string
	for p := range int32(partitions) {
		if pt, ok := worst.parts[p]; ok {
			detail = append(detail, fmt.Sprintf("p%d watermark %s recovered %s after a %v restore, caught up %v", p, pt.Watermark.Format("15:04:05"), pt.RecoveredAt.Format("15:04:05.0"), pt.Restore.Round(time.Millisecond), pt.CaughtUp))
		}
	}
	t.Logf("%d fires a second on the even partitions, on time on one pod (lateness at most %.1f s); two pods joined, ready after %.1f s (%d partitions recovered in the step); %d of %d samples over %.0f s (asking for more than 1 replica), the worst %.1f s: %v",
		4*perBusy, base, ready.Seconds(), recovered, over, len(samples), threshold, worst.late, detail)
	require.NotZero(t, recovered, "setup: partitions recovered in the step")
	require.Zero(t, over, "an on-time system's scale step: %d of %d samples read over %.0f s, up to %.1f s (%v)", over, len(samples), threshold, worst.late, detail)
}

// series counts the series of the metric name gathered from regs.
func series(t *testing.T, name string, regs ...*prometheus.Registry) int {
	t.Helper()
	n := 0
	for _, reg := range regs {
		mfs, err := reg.Gather()
		require.NoError(t, err)
		for _, mf := range mfs {
			if mf.GetName() == name {
				n += len(mf.GetMetric())
			}
		}
	}
	return n
}

// counterSum is the sum of every series of the counter name on reg.
func counterSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
