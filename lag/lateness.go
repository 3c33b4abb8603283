package lag

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// LatenessMetric is the gauge Lateness exports and the shipped
// ScaledObject's prometheus trigger reads.
const LatenessMetric = "chronos_fanout_lateness_seconds"

// LatenessQuery is the shipped trigger's query: the worst partition of any
// instance, 0 while no instance reports one.
const LatenessQuery = "max(" + LatenessMetric + ") or vector(0)"

// FireRateQuery is the shipped load trigger's query: the fires per second
// of the whole system over the last 2 minutes (0 while none reports).
const FireRateQuery = "sum(rate(chronos_fires_total[2m])) or vector(0)"

// LatenessQueryFor is LatenessQuery restricted to the series matching
// selector, PromQL label matchers without braces (e.g.
// `namespace="prod",job="prod-chronos"`), so that a trigger reads one
// Chronos system when several share a Prometheus; empty: LatenessQuery.
func LatenessQueryFor(selector string) string {
	if selector == "" {
		return LatenessQuery
	}
	return "max(" + LatenessMetric + "{" + selector + "}) or vector(0)"
}

// FireRateQueryFor is FireRateQuery restricted to the series matching
// selector (as LatenessQueryFor); empty: FireRateQuery.
func FireRateQueryFor(selector string) string {
	if selector == "" {
		return FireRateQuery
	}
	return "sum(rate(chronos_fires_total{" + selector + "}[2m])) or vector(0)"
}

// FiresPerCore is the fires per second one core of a replica was measured
// to dispatch: the lowest rate of the 1,000,000-job burst, 98,000/s on 2
// cores (chronos bench --jobs 1000000 --aligned, docs/performance.md),
// per core. The cheapest fires (one per job, all due at once): a steady
// load's cost more.
const FiresPerCore = 98000 / 2

// PodCPURequest is the CPU the shipped Deployment requests per pod, in
// cores (deploy/kubernetes/chronos.yaml and the Helm chart: 500m): what a
// pod is sure to get on a busy node.
const PodCPURequest = 0.5

// FiresPerReplica is the shipped load trigger's threshold, the fire rate
// one replica is asked to carry: FiresPerCore x PodCPURequest (24,500/s,
// what a pod held to its request dispatches), halved for the history group
// running in the same pods (it about doubled the CPU per event,
// docs/performance.md "History group") and halved again for headroom, as
// a steady load costs more than the burst measured: 6,125. It keeps the
// count a steady load needs once the backlog is gone, so the HPA does not
// walk back down into it. Derive yours the same way from chronos bench on
// your nodes and your pods' CPU request.
const FiresPerReplica = FiresPerCore * PodCPURequest / 2 / 2

// FanoutSecondsPerReplica is the fan-out lateness the shipped ScaledObject
// answers with one more replica: the lateness trigger's threshold at the
// default resolution.
const FanoutSecondsPerReplica = 5

// LatenessThreshold is the lateness trigger's threshold in seconds for pods
// at clock resolution res (--resolution; 0 or less: the default 1 s): the
// larger of FanoutSecondsPerReplica and twice the resolution. A caught-up
// partition reads one resolution while an advance is under way (the
// announced step is the next one, its watermark the last); below twice
// that, an idle system at a coarse resolution would ask for more replicas.
func LatenessThreshold(res time.Duration) float64 {
	return latenessThreshold(res).Seconds()
}

// latenessThreshold is LatenessThreshold as a duration.
func latenessThreshold(res time.Duration) time.Duration {
	if res <= 0 {
		res = time.Second
	}
	return max(FanoutSecondsPerReplica*time.Second, 2*res)
}

var latenessDesc = prometheus.NewDesc(LatenessMetric,
	"The latest time the clock announced (the clock table, read by every instance) minus the shard watermark of each scheduler partition this instance owns (for 10 s after the partition finished recovering, less its restore plus 20 s: the longest it may have waited for its new owner), "+
		"or minus the start of the oldest bucket fan-out still under way on it if that is more: how far the time up to which "+
		"every due fire has been dispatched is behind the announced time. 0 when caught up (up to one clock resolution while an advance is under way); "+
		"grows a second a second while the fan-out is slow or behind its peers and the clock announces. 0 before the partition's first completed advance "+
		"and before the instance's first advance; a partition still restoring from the changelog is left out.",
	[]string{"partition"}, nil)

// Lateness exports chronos_fanout_lateness_seconds{partition}: for each
// scheduler partition the instance owns, the latest announced time the
// instance knows (the clock table, which every instance reads, and the
// advances it consumed) minus the partition's shard watermark (never
// negative; 0 while either is zero), or minus the start of the oldest
// bucket fan-out still under way on it if that is more.
//
// Both terms come from the clock group's announcements, which the broker's
// clock bounds, never from the pod's wall clock: a pod whose clock is fast
// or slow reads the same as any other, and a clock that announces nothing
// (its owner stuck, its group rebalancing) reads 0 once the announced
// fires are dispatched (chronos_clock_lag_seconds and the chronos-clock lag
// show that stall; more replicas would not fix it). A partition behind
// its peers, or a fan-out too slow for the announcements it receives,
// reads its backlog in seconds, including a pod whose every callback is
// stuck or too slow to read the next advance: the announced time comes
// from the clock table, not from the advances the pod consumed (adversary
// 19d). A bucket trigger's fires go out one chunk per callback between
// the advances, whose watermark keeps up meanwhile: the bucket fan-out's
// own start counts for them (adversary 19f).
//
// A rebalance or a restore stops a partition's advances until its new
// owner has recovered it; nobody's fan-out is slow, and it catches up in a
// second or two once it runs. For DefaultRecoveryGrace after a partition
// finished recovering up to its restore plus RebalancePause of its
// lateness is excused as that wait. No more: a backlog it had before reads
// less at most that (adversary 19f: a pod crash-looping in and out of the
// group re-recovers every partition at each step; excusing the whole
// backlog hid it for as long as that went on), and after the grace in
// full (adversary 19e).
// Unlike the fire delay histogram it grows while a dispatch is slow
// (nothing is recorded until a fire goes out), has no sub-second floor
// from schedules finer than the clock, and falls when more replicas share
// the work. Safe for concurrent use.
type Lateness struct {
	// Watermarks returns the watermark of every owned partition
	// (scheduler.Scheduler.Watermarks). Used when Partitions is nil.
	Watermarks func() map[int32]time.Time
	// Partitions returns, for every owned, recovered partition, its
	// watermark, when and after how long a restore it finished
	// recovering, and the start of its oldest bucket fan-out under way
	// (scheduler.Scheduler.Partitions).
	Partitions func() map[int32]PartitionTimes
	// Now is the clock of Partition.RecoveredAt (nil: time.Now).
	Now func() time.Time
	// Announced returns the latest announced time the instance knows
	// (the clock table's, clock.Announcements, and the advances its
	// scheduler consumed); zero: none yet.
	Announced func() time.Time
}

// Describe implements prometheus.Collector.
func (l *Lateness) Describe(ch chan<- *prometheus.Desc) { ch <- latenessDesc }

// Collect implements prometheus.Collector.
func (l *Lateness) Collect(ch chan<- prometheus.Metric) {
	t := l.Announced()
	ps := map[int32]PartitionTimes{}
	if l.Partitions != nil {
		ps = l.Partitions()
	} else {
		for p, w := range l.Watermarks() {
			ps[p] = PartitionTimes{Watermark: w}
		}
	}
	now := time.Now
	if l.Now != nil {
		now = l.Now
	}
	n := now()
	for p, pt := range ps {
		v := LatenessOf(pt.Watermark.Add(pt.excused(n)), t)
		if !pt.Pending.IsZero() {
			v = max(v, LatenessOf(pt.Pending, t))
		}
		ch <- prometheus.MustNewConstMetric(latenessDesc, prometheus.GaugeValue, v, strconv.Itoa(int(p)))
	}
}

// PartitionTimes is what Lateness reads of one owned, recovered partition.
type PartitionTimes struct {
	Watermark   time.Time     // every fire due up to it dispatched
	RecoveredAt time.Time     // when it finished recovering, on the Now clock
	Restore     time.Duration // how long it took from assigned to recovered
	// CaughtUp: since it recovered its watermark has reached the latest
	// time its instance knows announced (the advances it consumed and the
	// clock table), announced after the recovery: the advances queued
	// for it while it moved are done; nothing is excused any more.
	CaughtUp bool
	// Pending: the announced time when the oldest bucket fan-out still
	// under way on the partition started (zero: none). A bucket's fires
	// go out one chunk per callback between the advances, whose watermark
	// keeps up meanwhile (adversary 19f).
	Pending time.Time
}

// excused is how much of the partition's lateness at now may be the wait
// for its new owner, not a fan-out behind: for DefaultRecoveryGrace after
// it finished recovering and until it has caught up (PartitionTimes.
// CaughtUp), its restore plus RebalancePause; else
// none: a partition stuck right after a pod's start reads its lateness
// once the advances it completed show it was on time. A
// backlog it had before the rebalance reads less at most that: repeated
// rebalances (a crash-looping pod joining and leaving) no longer hide it
// (adversary 19f). Not the announced time at the recovery minus the
// watermark: what the pod consumed, and the clock table too, stop during
// the rebalance (the clock group rebalances with the scheduler group),
// so that read the wait as lateness (adversary 19g: up to 5-7 s on an
// on-time scale step).
func (pt PartitionTimes) excused(now time.Time) time.Duration {
	if pt.Watermark.IsZero() || pt.CaughtUp || pt.RecoveredAt.IsZero() || now.Sub(pt.RecoveredAt) >= DefaultRecoveryGrace {
		return 0
	}
	return pt.Restore + RebalancePause
}

// RebalancePause is the longest a rebalance is taken to stop a partition's
// advances before its new owner is assigned it: about 8 s measured for a
// scale step; a member that died without leaving adds the group's session
// timeout (10 s). Lateness excuses at most this plus the restore after a
// partition recovers.
const RebalancePause = 20 * time.Second

// ConsumedGrace is how far the clock table's announced time must be ahead
// of the advances an instance consumed before its lateness is measured
// from the table: a rebalance stops every member's consumption for
// several seconds (about 8 s measured for a scale step), a stuck or too
// slow fan-out falls further behind for ever. A pod stuck that way reads
// its backlog once it is this far behind; the shipped 60 s scale-up
// window is longer anyway.
const ConsumedGrace = 20 * time.Second

// DefaultRecoveryGrace is how long after a partition finished recovering
// Lateness excuses the wait for its new owner (PartitionTimes.excused): a
// partition that was on time catches up on the advances that waited for
// it in well under that (1-2 s measured), and a pod's scale-up window
// (60 s in the shipped ScaledObject) absorbs a backlog hidden that long.
const DefaultRecoveryGrace = 10 * time.Second

// LatenessOf is a partition's lateness with watermark w when the latest
// announced time is announced: announced - w in seconds, never negative, 0
// when either is zero.
func LatenessOf(w, announced time.Time) float64 {
	if w.IsZero() || announced.IsZero() || !announced.After(w) {
		return 0
	}
	return announced.Sub(w).Seconds()
}

// ErrPrometheusTrigger reports prometheus trigger metadata Chronos does not
// evaluate the way KEDA would.
var ErrPrometheusTrigger = errors.New("lag: invalid prometheus trigger")

// PrometheusTrigger is a `type: prometheus` trigger of a ScaledObject with
// metricType AverageValue (KEDA's default): the HPA asks for
// ceil(value / Threshold) replicas, value being what Query returns. A
// value; safe for concurrent use.
type PrometheusTrigger struct {
	Query     string
	Threshold float64
	// ActivationThreshold: active above it (default 0); only decides
	// between 0 and 1 replicas.
	ActivationThreshold float64
}

// ParsePrometheusTrigger reads a prometheus trigger's metricType and
// metadata as KEDA does; metricType must be AverageValue (or empty).
func ParsePrometheusTrigger(metricType string, md map[string]string) (PrometheusTrigger, error) {
	tr := PrometheusTrigger{Query: md["query"]}
	var errs []error
	if metricType != "" && metricType != "AverageValue" {
		errs = append(errs, fmt.Errorf("%w: metricType %q: only AverageValue is evaluated", ErrPrometheusTrigger, metricType))
	}
	if tr.Query == "" || md["serverAddress"] == "" {
		errs = append(errs, fmt.Errorf("%w: query and serverAddress are required", ErrPrometheusTrigger))
	}
	num := func(key string, dst *float64) {
		if v, ok := md[key]; ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("%w: %s %q is not a number", ErrPrometheusTrigger, key, v))
			}
			*dst = f
		}
	}
	num("threshold", &tr.Threshold)
	num("activationThreshold", &tr.ActivationThreshold)
	if tr.Threshold <= 0 {
		errs = append(errs, fmt.Errorf("%w: threshold %g must be positive", ErrPrometheusTrigger, tr.Threshold))
	}
	return tr, errors.Join(errs...)
}

// Replicas is the HPA's proposal for value (with current replicas running,
// 0: unknown) and whether the trigger is active.
func (tr PrometheusTrigger) Replicas(value float64, current int64) (int64, bool) {
	return Proposal(max(value, 0), tr.Threshold, current), value > tr.ActivationThreshold
}
