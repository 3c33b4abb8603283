package autoscaling

// Adversary round 19d on issue 19 (autoscaling on what makes fires late).
// Each test names the promise the round broke and kept its measurement;
// all are fixed and run untagged: the lateness reads the clock table
// (clock.Announcements) and measures a partition from no earlier than the
// announced time when it finished recovering; ChronosClockAhead waits for
// the broker's time to pass max(10 s, 3 x resolution) without an
// announcement; the stalled rule groups by namespace and job.
//
//	go test -count=1 -v -run TestAdv19d ./deploy/autoscaling/
//
// (and on Apache Kafka with CHRONOS_TEST_BROKERS=host:port).

import (
	"fmt"
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
)

// TestAdv19dStuckPodAsksForTheMinimum breaks "a fan-out that is truly
// behind (stuck callback, one slow partition) asks for more replicas"
// (docs/operations.md "Autoscaling", keda-scaledobject.yaml: the lateness
// trigger "sees the fan-out behind: ... a partition stuck while its pod's
// others go on"). The lateness gauge measures a partition against the
// announced time its own pod consumed, so a pod whose every partition is
// stuck freezes its own yardstick: its partitions read 0-1 s however far
// behind they fall, while the system's announced time (the other pods')
// runs on. The stall alert does not see it either (the smallest age of the
// system counts: the healthy pod's is 0). Here: 4 partitions, 2 pods, 40
// jobs every second; pod A's dispatch hangs; the clock advances 30 s.
// Scaling out would help (the rebalance a scale step starts evicts the
// stuck member after its rebalance timeout, and its partitions move to
// pods that dispatch); instead the system asks for the minimum, and with
// 2 replicas running the HPA would scale down. Measured (embedded broker):
// pod A's 2 partitions 30 s behind the announced time, the gauge's worst
// 1.0 s, 1 replica asked; Apache Kafka the same (30 s, 1.0 s, 1).
func TestAdv19dStuckPodAsksForTheMinimum(t *testing.T) {
	// Parallel: a fan-out behind only falls further behind when other
	// tests slow it; the package stays under go test's 10 min default.
	t.Parallel()
	const partitions, jobs = 4, 40
	env := testenv.New(t, partitions)
	so := deploytest.ShippedFor(t, env)
	adm := deploytest.Admin(t, env)
	t0 := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC) // simulated time
	for i := range jobs {
		env.Put(fmt.Sprintf("job-%03d", i), codecs.JobDef{Every: "1s"}, t0)
	}
	h := &deploytest.Hang{Producer: scheduler.KgoProducer{Client: env.Client}, Open: make(chan struct{})}
	regA, regB := prometheus.NewRegistry(), prometheus.NewRegistry()
	cfgA := env.Config()
	cfgA.Producer, cfgA.Registerer = h, regA
	a := env.Start(cfgA)
	var released sync.Once
	t.Cleanup(func() { released.Do(func() { close(h.Open) }) })
	cfgB := env.Config()
	cfgB.Registerer = regB
	b := env.Start(cfgB)
	env.WaitApplied()

	at := t0
	tick := func() { at = at.Add(time.Second); env.Tick(at) }
	tick()
	first := at
	owned := func() (map[int32]time.Time, map[int32]time.Time) {
		return a.Scheduler().Watermarks(), b.Scheduler().Watermarks()
	}
	testenv.Eventually(t, 60*time.Second, func() error {
		wa, wb := owned()
		if len(wa) == 0 || len(wb) == 0 || len(wa)+len(wb) != partitions {
			return fmt.Errorf("partitions of A %v, of B %v", wa, wb)
		}
		for _, ws := range []map[int32]time.Time{wa, wb} {
			for p, w := range ws {
				if !w.Equal(first) {
					return fmt.Errorf("partition %d watermark %s, want %s", p, w, first)
				}
			}
		}
		return nil
	})
	late := deploytest.Lateness(t, regA, regB)
	n, _ := so.ReplicasWith(deploytest.Measure(t, adm, so), lag.Observed{Lateness: late}, 2)
	require.Equal(t, int64(1), n, "caught up: the minimum (lateness %.1f)", late)

	// Pod A's dispatch hangs; the clock advances 30 s, pod B keeps up.
	h.Armed.Store(true)
	pace := time.NewTicker(time.Second) // the clock moves with real time, as in production
	for range 30 {
		<-pace.C
		tick()
	}
	pace.Stop()
	testenv.Eventually(t, 60*time.Second, func() error {
		if got := b.Scheduler().Announced(); !got.Equal(at) {
			return fmt.Errorf("B announced %s, want %s", got, at)
		}
		for p, w := range b.Scheduler().Watermarks() {
			if !w.Equal(at) {
				return fmt.Errorf("B's partition %d watermark %s, want %s", p, w, at)
			}
		}
		return nil
	})
	require.Positive(t, h.Blocked.Load(), "setup: pod A's fan-out is stuck")
	wa, _ := owned()
	behind := 0.0
	for _, w := range wa {
		behind = max(behind, at.Sub(w).Seconds())
	}
	late = deploytest.Lateness(t, regA, regB)
	n, _ = so.ReplicasWith(deploytest.Measure(t, adm, so), lag.Observed{Lateness: late}, 2)
	t.Logf("pod A's %d partitions up to %.0f s behind the announced time %s (watermarks %v); A announced %s; gauge's worst %.1f s; %d replicas asked",
		len(wa), behind, at.Format(time.TimeOnly), wa, a.Scheduler().Announced().Format(time.TimeOnly), late, n)
	require.GreaterOrEqual(t, behind, 29.0, "setup: pod A's partitions are behind")
	require.Greater(t, n, int64(1), "pod A's partitions are %.0f s behind the announced time, but the lateness trigger reads %.1f s (A's own announced time froze with its fan-out): %d replica asked",
		behind, late, n)
}

// TestAdv19dSkewedPodRaisesClockAhead breaks "an on-time system with clock
// skew either way" staying quiet, for the new ChronosClockAhead alert
// (deploy/prometheus/alerts.yml: max(chronos_clock_ahead_seconds) > 60
// for 2m, "the clock table is ... ahead of the ticks: nothing is announced
// until they pass it"). Every instance ticks with its own wall clock, and
// the clock owner sets the gauge from every tick it drops, resetting it
// only at its next announcement. One pod whose clock is 2 min slow (NTP
// broken on its node) has each of its ticks dropped, a fraction of a
// second after the healthy pods' tick announced: the owner then reads 120 s
// "ahead" until the next healthy tick, i.e. for most of every second, while
// the clock announces every second and nothing is late. Here: 2 pods, live
// tickers at 1 s, pod B's wall clock 120.1 s behind (its ticks land 0.1 s
// after the healthy ones). Prometheus evaluating every 30 s fires the
// alert after 5 evaluations in a row above 60: with a share s of scrapes
// above, about s^5 of the 2-minute windows fire it. Measured (embedded
// broker): the clock announced 20 times in 20 s; 346 of 386 samples read
// 120 s ahead: s^5 = 0.58; Apache Kafka 351 of 389, 0.60.
func TestAdv19dSkewedPodRaisesClockAhead(t *testing.T) {
	const partitions, skew = 2, 120*time.Second + 100*time.Millisecond
	env := testenv.New(t, partitions)
	regA, regB := prometheus.NewRegistry(), prometheus.NewRegistry()
	cfgA := env.Config()
	cfgA.Clock.NoTicker = false
	cfgA.Registerer = regA
	a := env.Start(cfgA)
	cfgB := env.Config()
	cfgB.Clock.NoTicker = false
	cfgB.Registerer = regB
	cfgB.Now = func() time.Time { return time.Now().Add(-skew) }
	b := env.Start(cfgB)
	env.WaitApplied()
	time.Sleep(5 * time.Second) // the group settles after B joins, then the samples

	announced := func() time.Time {
		x, y := a.Scheduler().Announced(), b.Scheduler().Announced()
		if x.After(y) {
			return x
		}
		return y
	}
	start := time.Now()
	var over, all int
	worst := 0.0
	prev, moves := announced(), 0
	for time.Since(start) < 20*time.Second {
		time.Sleep(50 * time.Millisecond) // a sampling rate, not a wait for an effect
		ahead := deploytest.GaugeMax(t, "chronos_clock_ahead_seconds", regA, regB)
		worst = max(worst, ahead)
		all++
		if ahead > 60 {
			over++
		}
		if cur := announced(); cur.After(prev) {
			prev, moves = cur, moves+1
		}
	}
	behind := time.Now().Sub(prev).Seconds()
	share := float64(over) / float64(max(all, 1))
	t.Logf("the clock announced %d times in 20 s (last %.1f s ago by the wall clock); %d of %d samples read chronos_clock_ahead_seconds over 60 (up to %.1f): the alert fires in a 2-minute window of 30 s evaluations with probability about %.2f",
		moves, behind, over, all, worst, share*share*share*share*share)
	require.GreaterOrEqual(t, moves, 18, "setup: the clock announces every second")
	require.Less(t, behind, 3.0, "setup: the announced time is the healthy pods' wall time")
	require.Less(t, share*share*share*share*share, 0.05, "the clock announces every second, but one pod's slow ticks make the owner read %.0f s ahead in %.0f%% of the samples: ChronosClockAhead (\"nothing is announced until they pass it\") fires on an on-time system",
		worst, 100*share)
}

// TestAdv19dClockStalledHiddenByAnotherSystem breaks "the clock-stalled
// alert still fires when the clock stalls" (docs/deploy.md Alerts: "on
// every instance of the system ... over max(60 s, 3 x resolution)") for
// the Kubernetes deployment the repository ships next to the rules. The
// rule takes the smallest age "by (job)": the job is the system only under
// Compose (job="chronos", one system). The shipped Kubernetes manifest is
// scraped by its pods' prometheus.io annotations, so its series carry the
// annotation scrape job's name (kubernetes-pods, shared by every annotated
// pod) and a namespace; with a ServiceMonitor, the Service's name,
// "chronos" in every namespace the manifest is applied to. Two Chronos
// systems on one Prometheus (keda-scaledobject.yaml: "Several Chronos
// systems on one Prometheus"), e.g. prod and staging namespaces, are then
// one group: the healthy system's young ages are the minimum, and a
// stalled production clock never pages. Here: the rule's grouping read
// from alerts.yml, evaluated with clock.Stalled (the Go form of the rule)
// on prod's 3 pods at 300 s (stalled for 5 min) and staging's 2 at 0.4 s.
// Measured: with job kubernetes-pods and with job chronos, the only group
// is not stalled (its minimum 0.4 s); prod's pods alone would be.
func TestAdv19dClockStalledHiddenByAnotherSystem(t *testing.T) {
	expr := deploytest.Expressions(t)["alerts.yml ChronosClockStalled"]
	require.Equal(t, clock.StalledExpr, strings.TrimSpace(expr), "setup: the rule is clock.StalledExpr")
	m := regexp.MustCompile(`^min by \(([^)]*)\)`).FindStringSubmatch(expr)
	require.NotNil(t, m, "setup: the rule groups with min by (...): %s", expr)
	var by []string
	for _, l := range strings.Split(m[1], ",") {
		by = append(by, strings.TrimSpace(l))
	}
	var svc string
	var annotated bool
	for _, d := range deploytest.YAMLDocs(t, "deploy/kubernetes/chronos.yaml") {
		switch deploytest.Str(deploytest.Get(d, "kind")) {
		case "Service":
			svc = deploytest.Str(deploytest.Get(d, "metadata", "name"))
		case "Deployment":
			annotated = deploytest.Str(deploytest.Get(d, "spec", "template", "metadata", "annotations", "prometheus.io/scrape")) == "true"
		}
	}
	require.True(t, annotated, "setup: the shipped pods are scraped by annotation")
	require.NotEmpty(t, svc)

	type series struct {
		labels map[string]string
		age    time.Duration
	}
	var all []series
	var silent []string
	for _, job := range []string{"kubernetes-pods", svc} { // annotation scrape; ServiceMonitor of the shipped Service
		all = all[:0]
		for i := range 3 {
			all = append(all, series{map[string]string{"job": job, "namespace": "prod", "pod": fmt.Sprintf("chronos-p%d", i)}, 300 * time.Second})
		}
		for i := range 2 {
			all = append(all, series{map[string]string{"job": job, "namespace": "staging", "pod": fmt.Sprintf("chronos-s%d", i)}, 400 * time.Millisecond})
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
		prodAlone := clock.Stalled([]time.Duration{300 * time.Second, 300 * time.Second, 300 * time.Second}, []time.Duration{time.Second, time.Second, time.Second})
		t.Logf("job %q: groups %v, firing %v; prod's pods alone stalled: %v", job, groups, firing, prodAlone)
		require.True(t, prodAlone, "setup: prod's clock is stalled")
		if len(firing) == 0 {
			silent = append(silent, job)
		}
	}
	require.Empty(t, silent, "prod's clock announced nothing for 5 min on all 3 pods, but ChronosClockStalled groups by (%s): staging's healthy pods (the same job) hold the minimum and nothing fires", m[1])
}

// TestAdv19dSlowFanOutAtDefaultChunkingAsksForTheMinimum breaks "a
// fan-out that is truly behind (a burst of due jobs, a slow broker) asks
// for more replicas" (keda-scaledobject.yaml: the lateness trigger "sees
// the fan-out behind: slow (a burst of due jobs, a slow broker)") at the
// default chunking. TestShippedScaledObjectSeesASlowFanOut passes with
// --fanout-chunk 1 and a 50 ms budget, so every advance yields through the
// loopback and the next advances are consumed (the announced time moves)
// while fires wait. At the defaults (25,000 fires a chunk, 500 ms budget)
// an advance whose fires fit in one chunk finishes in one callback however
// long it takes, and the next advance waits unconsumed behind it: the
// pod's announced time is the advance it is working on, its watermark the
// one before, so the gauge reads one resolution while the fan-out falls
// further behind every second. The same setup as that test (one pod, 4
// partitions, 40 jobs every second, the dispatch producer 1.5 s a
// produce, a live clock), with the default chunking. The slowness is that
// test's model (a slow produce); a CPU-starved pod, which more replicas do
// fix, takes the same path: any steady load of up to 25,000 fires per
// partition per advance is one chunk. Measured (embedded broker): after
// 30 s, the oldest watermark 11.1 s behind the wall clock and falling
// further, the gauge's worst 1.0 s, 1 replica asked; 25 fires/s dispatched
// of 40 due (the fire-rate trigger asks for nothing either). Apache Kafka:
// 11.9 s behind, 1.0 s, 1 replica, 25/s.
func TestAdv19dSlowFanOutAtDefaultChunkingAsksForTheMinimum(t *testing.T) {
	// Parallel: a fan-out behind only falls further behind when other
	// tests slow it; the package stays under go test's 10 min default.
	t.Parallel()
	const partitions, jobs = 4, 40
	env := testenv.New(t, partitions)
	so := deploytest.ShippedFor(t, env)
	adm := deploytest.Admin(t, env)
	t0 := time.Now().Truncate(time.Second)
	for i := range jobs {
		env.Put(fmt.Sprintf("job-%03d", i), codecs.JobDef{Every: "1s"}, t0)
	}
	prod := &deploytest.Slow{Producer: scheduler.KgoProducer{Client: env.Client}}
	reg := prometheus.NewRegistry()
	cfg := env.Config()
	cfg.Clock.NoTicker = false // a live clock: the instance ticks every second
	cfg.Producer = prod
	cfg.Registerer = reg
	inst := env.Start(cfg) // default Fanout: ChunkSize 25,000, Budget 500 ms
	env.WaitApplied()
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	time.Sleep(3 * time.Second) // on time first
	prod.SetDelay(1500 * time.Millisecond)
	slowFrom, before := time.Now(), dispatch.Len()
	worst, behind := 0.0, 0.0
	var n int64
	for time.Since(slowFrom) < 60*time.Second {
		time.Sleep(500 * time.Millisecond) // a sampling rate, not a wait for an effect
		late := deploytest.Lateness(t, reg)
		worst = max(worst, late)
		oldest := time.Now()
		for _, w := range inst.Scheduler().Watermarks() {
			if w.Before(oldest) {
				oldest = w
			}
		}
		behind = time.Since(oldest).Seconds()
		rate := float64(dispatch.Len()-before) / time.Since(slowFrom).Seconds()
		n, _ = so.ReplicasWith(deploytest.Measure(t, adm, so), lag.Observed{Lateness: late, FireRate: rate}, 1)
		if n > 1 {
			break
		}
	}
	rate := float64(dispatch.Len()-before) / time.Since(slowFrom).Seconds()
	t.Logf("after %.0f s of a slow dispatch: the oldest watermark %.1f s behind the wall clock, announced %s, the gauge's worst %.1f s, fire rate %.0f/s (%d due/s), %d replicas asked",
		time.Since(slowFrom).Seconds(), behind, inst.Scheduler().Announced().Format(time.TimeOnly), worst, rate, jobs, n)
	require.Greater(t, behind, lag.LatenessThreshold(time.Second), "setup: the fan-out is behind by more than the trigger's threshold")
	require.Greater(t, n, int64(1), "the fan-out is %.0f s behind and falling further, but the lateness gauge reads at most %.1f s (each advance fits one chunk: the next waits unconsumed, the announced time with it): %d replica asked",
		behind, worst, n)
}
