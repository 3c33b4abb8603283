package deploy

// Adversary round 19e on issue 19 (autoscaling on what makes fires late).
// Each test names the promise the round broke and kept its measurement;
// all are fixed and run untagged: a partition is measured from the
// announced time at its recovery only for lag.DefaultRecoveryGrace; the
// announced age reads the advances the instance consumed, not the clock
// table; a broker time before the owner's last announcement ends the
// clock-ahead grace; the clock gauges carry clock_group, which the rules
// group by.
//
//	go test -count=1 -v -run TestAdv19e ./deploy/
//
// (and on Apache Kafka with CHRONOS_TEST_BROKERS=host:port).

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/deploy/deploytest"
	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/processors/clock"
	"github.com/chronos-scheduler/chronos/processors/scheduler"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/topology"
)

// TestAdv19eScaleStepHidesTheBacklog breaks "a fan-out that is truly
// behind asks for more replicas ... and never fewer than needed"
// (docs/operations.md "Autoscaling", lag.Lateness: "a partition behind its
// peers, or a fan-out too slow for the announcements it receives, reads
// its backlog in seconds"). The round-19d fix measures a partition from
// no earlier than the announced time when its store finished recovering
// (Scheduler.Partitions' from), so that a rebalance does not read as a
// fan-out behind. But a partition that was already behind before the
// rebalance is measured from the rebalance too: its backlog of advances
// (the fires it has not dispatched) vanishes from the gauge the moment the
// scale step the backlog asked for takes effect, and the HPA, reading 0,
// proposes the minimum again (it scales back down once the stabilization
// window passes, into the same backlog). Here: 2 partitions, 1 pod, 40
// jobs every second, a dispatch that takes 1 s per produce (each partition
// drains one advance a second); the clock announces 40 s at once (a burst
// of due advances, e.g. after the clock owner was stuck). The gauge reads
// the backlog and asks for 2+ replicas; a second pod joins (the scale step)
// with the same dispatch. Expected: the gauge still reads the partitions'
// backlog (the announced time minus their watermarks). See the
// log line (embedded broker). Measured (embedded broker): before the step the
// gauge 34.0 s, 2 replicas asked; after it the partitions 38 s behind the
// announced time (watermarks 12:00:03 and 12:00:04, announced 12:00:41),
// the gauge 0.0 s, 1 replica asked.
func TestAdv19eScaleStepHidesTheBacklog(t *testing.T) {
	const partitions, jobs, burst = 2, 40, 40
	env := testenv.New(t, partitions)
	so := deploytest.ShippedFor(t, env)
	adm := deploytest.Admin(t, env)
	t0 := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC) // simulated time
	for i := range jobs {
		env.Put(fmt.Sprintf("job-%03d", i), codecs.JobDef{Every: "1s"}, t0)
	}
	prodA := &deploytest.Slow{Producer: scheduler.KgoProducer{Client: env.Client}}
	regA, regB := prometheus.NewRegistry(), prometheus.NewRegistry()
	cfgA := env.Config()
	cfgA.Producer, cfgA.Registerer = prodA, regA
	a := env.Start(cfgA)
	env.WaitApplied()

	at := t0
	tick := func() { at = at.Add(time.Second); env.Tick(at) }
	tick()
	first := at
	deploytest.WaitWatermarks(t, partitions, first, a)

	// The dispatch slows down; the clock announces a burst of advances.
	prodA.SetDelay(time.Second)
	for range burst {
		tick()
	}
	var before float64
	testenv.Eventually(t, 60*time.Second, func() error {
		before = deploytest.Lateness(t, regA)
		if before < burst/2 {
			return fmt.Errorf("gauge %.1f s, the backlog not read yet", before)
		}
		return nil
	})
	nBefore, _ := so.ReplicasWith(deploytest.Measure(t, adm, so), lag.Observed{Lateness: before}, 1)
	require.Greater(t, nBefore, int64(1), "setup: the backlog asks for more replicas (gauge %.1f s)", before)

	// The scale step: a second pod, its dispatch as slow.
	prodB := &deploytest.Slow{Producer: scheduler.KgoProducer{Client: env.Client}}
	prodB.SetDelay(time.Second)
	cfgB := env.Config()
	cfgB.Producer, cfgB.Registerer = prodB, regB
	b := env.Start(cfgB)
	var behind float64
	var ws map[int32]time.Time
	testenv.Eventually(t, 60*time.Second, func() error {
		wa, wb := a.Scheduler().Watermarks(), b.Scheduler().Watermarks()
		if len(wa) == 0 || len(wb) == 0 || len(wa)+len(wb) != partitions {
			return fmt.Errorf("partitions of A %v, of B %v", wa, wb)
		}
		ws = map[int32]time.Time{}
		for p, w := range wa {
			ws[p] = w
		}
		for p, w := range wb {
			ws[p] = w
		}
		return nil
	})
	// The gauge may measure a partition from the announced time when it
	// recovered for lag.DefaultRecoveryGrace (the advances that waited
	// for it in the rebalance); after that, its backlog reads again.
	var late float64
	var n int64
	graceEnds := time.Now().Add(lag.DefaultRecoveryGrace + 5*time.Second)
	for {
		ws = map[int32]time.Time{}
		for p, w := range a.Scheduler().Watermarks() {
			ws[p] = w
		}
		for p, w := range b.Scheduler().Watermarks() {
			ws[p] = w
		}
		behind = 0
		for _, w := range ws {
			behind = max(behind, at.Sub(w).Seconds())
		}
		late = deploytest.Lateness(t, regA, regB)
		n, _ = so.ReplicasWith(deploytest.Measure(t, adm, so), lag.Observed{Lateness: late}, 2)
		if late >= behind-lag.LatenessThreshold(time.Second) || time.Now().After(graceEnds) {
			break
		}
		time.Sleep(500 * time.Millisecond) // a sampling rate, not a wait for an effect
	}
	t.Logf("before the scale step: gauge %.1f s, %d replicas asked; after it (both pods own a partition): watermarks %v, up to %.0f s behind the announced time %s; gauge %.1f s, %d replicas asked",
		before, nBefore, ws, behind, at.Format(time.TimeOnly), late, n)
	require.Greater(t, behind, 2*lag.LatenessThreshold(time.Second), "setup: after the scale step the partitions are still behind by more than two thresholds")
	require.GreaterOrEqual(t, late, behind-lag.LatenessThreshold(time.Second),
		"the partitions are %.0f s behind the announced time after the scale step, but the gauge reads %.1f s (measured from the announced time when each finished recovering): %d replicas asked, %d before the step",
		behind, late, n, nBefore)
}

// TestAdv19eRestartHidesTheBacklog breaks the same promise through a
// restart instead of a scale step (docs/operations.md "Clock stalled"
// names "an OOM at the first burst"; lag.Lateness: "a fan-out too slow for
// the announcements it receives reads its backlog"): the only pod, 40 s
// behind in its fan-out, restarts (a crash and a restore from the
// changelogs into an empty data dir, the dispatch as slow as before). Its
// partitions are measured from the announced time when they finished
// recovering, so the backlog it restarts with reads 0 and the HPA asks
// for the minimum for as long as it takes to drain. Measured (embedded
// broker): before the restart the gauge 40.0 s, 2 replicas asked; after
// it both partitions 39 s behind the announced time (watermarks 12:00:02,
// announced 12:00:41), the gauge 0.0 s, 1 replica asked.
func TestAdv19eRestartHidesTheBacklog(t *testing.T) {
	const partitions, jobs, burst = 2, 40, 40
	env := testenv.New(t, partitions)
	so := deploytest.ShippedFor(t, env)
	adm := deploytest.Admin(t, env)
	t0 := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC) // simulated time
	for i := range jobs {
		env.Put(fmt.Sprintf("job-%03d", i), codecs.JobDef{Every: "1s"}, t0)
	}
	prodA := &deploytest.Slow{Producer: scheduler.KgoProducer{Client: env.Client}}
	regA := prometheus.NewRegistry()
	cfgA := env.Config()
	cfgA.Producer, cfgA.Registerer = prodA, regA
	a := env.Start(cfgA)
	env.WaitApplied()
	at := t0
	tick := func() { at = at.Add(time.Second); env.Tick(at) }
	tick()
	first := at
	deploytest.WaitWatermarks(t, partitions, first, a)
	prodA.SetDelay(time.Second)
	for range burst {
		tick()
	}
	var before float64
	testenv.Eventually(t, 60*time.Second, func() error {
		if before = deploytest.Lateness(t, regA); before < burst/2 {
			return fmt.Errorf("gauge %.1f s, the backlog not read yet", before)
		}
		return nil
	})
	nBefore, _ := so.ReplicasWith(deploytest.Measure(t, adm, so), lag.Observed{Lateness: before}, 1)
	require.Greater(t, nBefore, int64(1), "setup: the backlog asks for more replicas (gauge %.1f s)", before)

	prodA.SetDelay(0) // let the stopping pod finish its fan-out quickly
	a.Stop()
	prodR := &deploytest.Slow{Producer: scheduler.KgoProducer{Client: env.Client}}
	prodR.SetDelay(time.Second)
	regR := prometheus.NewRegistry()
	cfgR := env.Config() // an empty data dir: a restore
	cfgR.Producer, cfgR.Registerer = prodR, regR
	r := env.Start(cfgR)
	var ws map[int32]time.Time
	testenv.Eventually(t, 60*time.Second, func() error {
		if ws = r.Scheduler().Watermarks(); len(ws) != partitions {
			return fmt.Errorf("watermarks %v", ws)
		}
		return nil
	})
	// As in TestAdv19eScaleStepHidesTheBacklog: after the recovery grace
	// the backlog reads again.
	var behind, late float64
	var n int64
	graceEnds := time.Now().Add(lag.DefaultRecoveryGrace + 5*time.Second)
	for {
		ws = r.Scheduler().Watermarks()
		behind = 0
		for _, w := range ws {
			behind = max(behind, at.Sub(w).Seconds())
		}
		late = deploytest.Lateness(t, regR)
		n, _ = so.ReplicasWith(deploytest.Measure(t, adm, so), lag.Observed{Lateness: late}, 1)
		if late >= behind-lag.LatenessThreshold(time.Second) || time.Now().After(graceEnds) {
			break
		}
		time.Sleep(500 * time.Millisecond) // a sampling rate, not a wait for an effect
	}
	t.Logf("before the restart: gauge %.1f s, %d replicas asked; after it: watermarks %v, up to %.0f s behind the announced time %s; gauge %.1f s, %d replicas asked",
		before, nBefore, ws, behind, at.Format(time.TimeOnly), late, n)
	require.Greater(t, behind, 2*lag.LatenessThreshold(time.Second), "setup: after the restart the partitions are still behind by more than two thresholds")
	require.GreaterOrEqual(t, late, behind-lag.LatenessThreshold(time.Second),
		"the partitions are %.0f s behind the announced time after the restart, but the gauge reads %.1f s: %d replicas asked, %d before",
		behind, late, n, nBefore)
}

// TestAdv19eDeadDispatchBrokerDoesNotPage breaks "the clock-stalled alert
// still fires when the clock stalls" for the cause the alert itself names
// (deploy/prometheus/alerts.yml ChronosClockStalled: "the clock announcing
// but the age rising everywhere: every scheduler partition is stuck in a
// fan-out (a dispatch broker that does not answer)"; docs/operations.md
// "Clock stalled" the same, and "Fires late": a pod stuck on the dispatch
// broker has "its chronos_clock_announced_age_seconds rises"). Since the
// round-19d fix the announced time an instance knows includes the clock
// table (clock.Announcements), which moves while the clock announces
// whatever the fan-out does: with every fan-out stuck the age stays at 0-1
// s on every instance and the critical alert never fires, while nothing
// is dispatched. ChronosFiresLate cannot fire either (the delay histogram
// records only fires that went out: its rate is 0/0). Here: 2 partitions,
// 2 pods, 20 jobs every second, the dispatch of both pods hangs (a
// dispatch broker that does not answer); the clock announces every second
// for 4 simulated minutes (the pods' wall clock simulated with it);
// Prometheus evaluates StalledExpr (clock.Stalled) every 15 s with the
// rule's `for: 2m`. Expected: the alert fires within StalledThreshold +
// 2m + two evaluations (3m30s). Measured (embedded broker): 4 min, 0
// fires dispatched, the smallest age at most 0.0 s at every evaluation,
// the lateness 241 s (the KEDA trigger scales out to the maximum), the
// alert never fired; Apache Kafka the same (0 fires, 0.0 s, 241 s, never).
// The same test at a001f7b~1 (before the clock table view): the alert
// fired at 3m30s (the smallest age 195 s).
func TestAdv19eDeadDispatchBrokerDoesNotPage(t *testing.T) {
	const partitions, jobs = 2, 20
	const (
		eval   = 15 * time.Second
		forDur = 2 * time.Minute
		stall  = 4 * time.Minute
	)
	env := testenv.New(t, partitions)
	// An hour ago: the simulated seconds run faster than real ones, and a
	// broker bounds each tick to its own time plus --clock-max-ahead.
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	clk := deploytest.NewSimNow(t0)
	for i := range jobs {
		env.Put(fmt.Sprintf("job-%03d", i), codecs.JobDef{Every: "1s"}, t0)
	}
	open := make(chan struct{})
	var hangs []*deploytest.Hang
	var regs []*prometheus.Registry
	var insts []*testenv.Instance
	for range 2 {
		h := &deploytest.Hang{Producer: scheduler.KgoProducer{Client: env.Client}, Open: open}
		reg := prometheus.NewRegistry()
		cfg := env.Config()
		cfg.Producer, cfg.Registerer, cfg.Now = h, reg, clk.Now
		insts = append(insts, env.Start(cfg))
		hangs, regs = append(hangs, h), append(regs, reg)
	}
	var released sync.Once
	t.Cleanup(func() { released.Do(func() { close(open) }) })
	env.WaitApplied()
	dispatch := env.Collect(string(env.Layout.Dispatch()))

	at := t0
	step := func() {
		at = at.Add(time.Second)
		clk.Set(at)
		env.Tick(at)
	}
	step()
	deploytest.WaitWatermarks(t, partitions, at, insts...)
	require.False(t, clock.Stalled(deploytest.Ages(t, regs), []time.Duration{time.Second, time.Second}), "setup: on time, not stalled")

	// The dispatch broker stops answering.
	for _, h := range hangs {
		h.Armed.Store(true)
	}
	step()
	testenv.Eventually(t, 60*time.Second, func() error {
		for i, h := range hangs {
			if h.Blocked.Load() == 0 {
				return fmt.Errorf("pod %d not stuck yet", i)
			}
		}
		return nil
	})
	sent := dispatch.Len()
	start := at
	var pending time.Time
	fired := time.Duration(-1)
	var worstMin, late float64
	for at.Sub(start) < stall {
		step()
		time.Sleep(20 * time.Millisecond) // the simulated second's real share: the clock and the view follow
		if at.Sub(start)%eval != 0 {
			continue
		}
		a := deploytest.Ages(t, regs)
		if m := minAge(a); m > worstMin {
			worstMin = m
		}
		late = deploytest.Lateness(t, regs...)
		if clock.Stalled(a, []time.Duration{time.Second, time.Second}) {
			if pending.IsZero() {
				pending = at
			}
			if at.Sub(pending) >= forDur {
				fired = at.Sub(start)
				break
			}
		} else {
			pending = time.Time{}
		}
	}
	dispatched := dispatch.Len() - sent
	t.Logf("every fan-out stuck for %v (simulated): %d fires dispatched meanwhile; the system's smallest announced age at most %.1f s; lateness %.0f s; ChronosClockStalled fired after %v (-1: never; want within %v)",
		at.Sub(start), dispatched, worstMin, late, fired, clock.StalledThreshold(time.Second)+forDur+2*eval)
	require.Zero(t, dispatched, "setup: nothing is dispatched")
	require.True(t, fired >= 0 && fired <= clock.StalledThreshold(time.Second)+forDur+2*eval,
		"nothing fired for %v while the clock announced, but ChronosClockStalled did not fire (the smallest age read at most %.1f s: the clock table moves)", at.Sub(start), worstMin)
}

func minAge(a []time.Duration) float64 {
	m := math.Inf(1)
	for _, d := range a {
		if d >= 0 {
			m = min(m, d.Seconds())
		}
	}
	return m
}

// TestAdv19eClockStalledHiddenByAnotherRelease breaks "the clock-stalled
// alert still fires when the clock stalls" for two Helm releases in one
// namespace, which the chart supports (values.yaml keda.latenessQuery:
// restricted "to this release's pods ... so releases sharing one
// Prometheus do not scale on each other's series"; the round-19d fix
// selects by pod name for that reason). ChronosClockStalled and
// ChronosClockAhead group by (namespace, job), but under the chart's
// default scrape (scrapeAnnotations: true) the job is the annotation scrape
// job's name (kubernetes-pods), the same for every release: two releases
// in one namespace (e.g. "orders" and "billing", each its own Chronos
// system with its own topic prefix) are one group, the healthy release's
// young ages are its minimum, and a stalled clock in the other never
// pages. Here: the rule's grouping read from alerts.yml, evaluated with
// clock.Stalled on release orders' 3 pods stalled for 5 min and release
// billing's 2 pods at 0.4 s, all in namespace apps with job
// kubernetes-pods (the chart's default scrape). Measured: one group, not
// stalled (its minimum 0.4 s); orders' pods alone would be.
func TestAdv19eClockStalledHiddenByAnotherRelease(t *testing.T) {
	expr := deploytest.Expressions(t)["alerts.yml ChronosClockStalled"]
	require.Equal(t, clock.StalledExpr, strings.TrimSpace(expr), "setup: the rule is clock.StalledExpr")
	m := regexp.MustCompile(`^min by \(([^)]*)\)`).FindStringSubmatch(expr)
	require.NotNil(t, m, "setup: the rule groups with min by (...): %s", expr)
	var by []string
	for _, l := range strings.Split(m[1], ",") {
		by = append(by, strings.TrimSpace(l))
	}
	values := deploytest.YAMLDoc(t, "deploy/helm/chronos/values.yaml")
	require.Equal(t, true, values["scrapeAnnotations"], "setup: the chart's default scrape is by pod annotation")

	type series struct {
		labels map[string]string
		age    time.Duration
	}
	// Each release's instances label their clock gauges with their clock
	// group (clock.ClockGroupLabel), which carries the release's topic
	// prefix (topicPrefix: each release its own system).
	clockGroup := func(prefix string) string {
		return string(topology.Layout{Names: topology.Names{Prefix: prefix}}.ClockGroup())
	}
	var all []series
	for i := range 3 {
		all = append(all, series{map[string]string{"job": "kubernetes-pods", "namespace": "apps", "pod": fmt.Sprintf("orders-chronos-5d8f7c9b4-p%d", i),
			clock.ClockGroupLabel: clockGroup("orders.")}, 300 * time.Second})
	}
	for i := range 2 {
		all = append(all, series{map[string]string{"job": "kubernetes-pods", "namespace": "apps", "pod": fmt.Sprintf("billing-chronos-7c6b5d4f8-b%d", i),
			clock.ClockGroupLabel: clockGroup("billing.")}, 400 * time.Millisecond})
	}
	groups := map[string][]time.Duration{}
	for _, s := range all {
		var key []string
		for _, l := range by {
			key = append(key, l+"="+s.labels[l])
		}
		k := strings.Join(key, ",")
		groups[k] = append(groups[k], s.age)
	}
	var firing []string
	for k, ages := range groups {
		res := make([]time.Duration, len(ages))
		for i := range res {
			res[i] = time.Second
		}
		if clock.Stalled(ages, res) {
			firing = append(firing, k)
		}
	}
	ordersAlone := clock.Stalled([]time.Duration{300 * time.Second, 300 * time.Second, 300 * time.Second}, []time.Duration{time.Second, time.Second, time.Second})
	t.Logf("groups %v, firing %v; release orders' pods alone stalled: %v", groups, firing, ordersAlone)
	require.True(t, ordersAlone, "setup: orders' clock is stalled")
	require.NotEmpty(t, firing, "release orders' clock announced nothing for 5 min on all 3 pods, but ChronosClockStalled groups by (%s): release billing's healthy pods in the same namespace (the same annotation scrape job) hold the minimum and nothing fires", m[1])
}
