package scheduler

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chronos-scheduler/chronos/codecs"
)

// Metrics are the scheduler's Prometheus metrics. A nil *Metrics records
// nothing. Safe for concurrent use.
type Metrics struct {
	fires    *prometheus.CounterVec
	missed   prometheus.Counter
	delays   prometheus.Histogram
	commands *prometheus.CounterVec
	rejects  *prometheus.CounterVec
	fanouts  prometheus.Histogram
	bulk     *prometheus.CounterVec
	waits    prometheus.Histogram
}

// NewMetrics creates the scheduler metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		fires: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chronos_fires_total",
			Help: "Dispatch events produced, by trigger (schedule, bucket, manual)."}, []string{"trigger"}),
		missed: prometheus.NewCounter(prometheus.CounterOpts{Name: "chronos_missed_fires_total",
			Help: "Scheduled fires not dispatched because of the misfire policy."}),
		delays: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "chronos_fire_delay_seconds",
			Help:    "Time from a fire's scheduled time to its dispatch (fired_at - scheduled_at).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}}),
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chronos_commands_total",
			Help: "Commands consumed from chronos-jobs, by op and result."}, []string{"op", "result"}),
		rejects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chronos_rejects_total",
			Help: "Inputs written to chronos-rejects, by reason code."}, []string{"reason"}),
		fanouts: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "chronos_fanout_jobs",
			Help:    "Jobs fired per trigger callback (one chunk of an advance or a bucket trigger).",
			Buckets: prometheus.ExponentialBuckets(1, 4, 10)}),
		bulk: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chronos_bulk_commands_total",
			Help: "Commands written to chronos-jobs by bulk operations (one per job the op changes), by op."}, []string{"op"}),
		waits: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "chronos_changelog_wait_seconds",
			Help:    "Time a callback waited for the table writes before it to reach the changelog before it fired (an advance's start, a bucket chunk's start and end).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10}}),
	}
	for _, t := range []string{"schedule", "bucket", "manual"} {
		m.fires.WithLabelValues(t)
	}
	// Every reason at 0 from the start: Prometheus's increase() does not
	// count a series' first sample, so a reject burst that created its
	// series would never fire ChronosRejectsRising.
	for _, c := range codecs.RejectCodes() {
		m.rejects.WithLabelValues(c)
	}
	reg.MustRegister(m.fires, m.missed, m.delays, m.commands, m.rejects, m.fanouts, m.bulk, m.waits)
	return m
}

func (m *Metrics) fired(trigger string, n int, missed int64) {
	if m == nil {
		return
	}
	m.fires.WithLabelValues(trigger).Add(float64(n))
	m.missed.Add(float64(missed))
}

func (m *Metrics) delay(d time.Duration) {
	if m != nil {
		m.delays.Observe(d.Seconds())
	}
}

func (m *Metrics) command(op, result string) {
	if m != nil {
		m.commands.WithLabelValues(op, result).Inc()
	}
}

func (m *Metrics) rejected(code string) {
	if m != nil {
		m.rejects.WithLabelValues(code).Inc()
	}
}

func (m *Metrics) bulked(op string, n int) {
	if m != nil {
		m.bulk.WithLabelValues(op).Add(float64(n))
	}
}

func (m *Metrics) fanout(n int) {
	if m != nil {
		m.fanouts.Observe(float64(n))
	}
}

// Watermarks returns the shard watermark of every partition whose store
// this instance has open and has recovered: every fire due up to it has been
// dispatched (zero: no advance has completed on the partition yet). A store
// still restoring from the changelog is left out (its shard record is the
// oldest surviving version, not the partition's watermark), as is one that
// cannot be read (closing during a rebalance). It reads the stores, not the
// callbacks' state; safe for concurrent use.
func (s *Scheduler) Watermarks() map[int32]time.Time {
	out := map[int32]time.Time{}
	for p, pt := range s.Partitions() {
		out[p] = pt.Watermark
	}
	return out
}

// PartitionTimes is what the lateness gauge reads of an owned, recovered
// partition (Partitions).
type PartitionTimes struct {
	// Watermark: every fire due up to it has been dispatched.
	Watermark time.Time
	// RecoveredAt: when it finished recovering, on this process's clock.
	RecoveredAt time.Time
	// Restore: how long its store took from being built (the partition
	// assigned to this instance) to recovered.
	Restore time.Duration
	// Pending: the announced time when the oldest bucket fan-out still
	// under way on it started here (zero: none).
	Pending time.Time
	// CaughtUp: since it recovered, its watermark has reached the latest
	// time the instance knows announced (the advances it consumed and
	// the clock table, SetClockTable), and that time was announced after
	// the recovery: the advances queued for it meanwhile are done and any
	// wait for its new owner is over.
	CaughtUp bool
	// announcedAtRecovery: the latest announced time the instance knew
	// (known) when it recovered.
	announcedAtRecovery time.Time
}

// Partitions returns, for every partition the instance owns and has
// recovered, its watermark (as Watermarks), when it finished recovering
// and how long its restore took (lag.Lateness excuses that wait for a
// while), and the start of its oldest bucket fan-out under way.
func (s *Scheduler) Partitions() map[int32]PartitionTimes {
	out := map[int32]PartitionTimes{}
	for p, key := range s.shardKeys {
		if st := s.Store(int32(p)); st != nil && st.Recovered() {
			if b, err := st.Get(key); err == nil {
				if rec, err := codecs.DecodeShardHead(b); err == nil {
					pt := PartitionTimes{Watermark: rec.Watermark, Pending: s.pending.oldest(int32(p), time.Now())}
					s.noteCaughtUp(int32(p), rec.Watermark)
					if v, ok := s.started.Load(int32(p)); ok {
						st := v.(PartitionTimes)
						pt.RecoveredAt, pt.Restore, pt.CaughtUp = st.RecoveredAt, st.Restore, st.CaughtUp
					}
					out[int32(p)] = pt
				}
			}
		}
	}
	return out
}

// SetAnnouncedSource makes announced the instance's announced time (the
// lateness gauge's yardstick), on which a bucket fan-out's start is noted;
// unset: Announced. Safe for concurrent use.
func (s *Scheduler) SetAnnouncedSource(announced func() time.Time) {
	s.announcedSrc.Store(&announced)
}

// noteCaughtUp marks partition p caught up (PartitionTimes.CaughtUp) if
// its watermark w has reached the latest time the instance knows
// announced, announced after its recovery. Called when an advance
// completes, so the mark does not depend on a scrape having run in the
// moment the watermark was there (adversary 22: with the shipped 30 s
// scrape interval a partition that caught up and then got stuck within
// its 10 s of grace read 0 instead of its backlog), and by Partitions.
func (s *Scheduler) noteCaughtUp(p int32, w time.Time) {
	v, ok := s.started.Load(p)
	if !ok {
		return
	}
	st := v.(PartitionTimes)
	if st.CaughtUp {
		return
	}
	if a := s.known(); !a.After(st.announcedAtRecovery) || w.Before(a) {
		return
	}
	caught := st
	caught.CaughtUp = true
	s.started.CompareAndSwap(p, st, caught)
}

// SetClockTable makes table the clock table's latest announced time as
// this instance reads it (clock.Announcements.Latest): after a recovery a
// partition counts as caught up (PartitionTimes.CaughtUp) only once its
// watermark reaches it, not at the first of the advances queued for it
// while it moved (adversary 19g in CI: a new pod's busy partition
// recovered before its idle one, completed the oldest queued advance
// before the pod had consumed a later one, and read 6 s once the idle
// partition consumed the rest). Unset, only the consumed advances count.
// Safe for concurrent use.
func (s *Scheduler) SetClockTable(table func() time.Time) {
	s.tableSrc.Store(&table)
}

// known is the latest announced time this instance knows: the latest
// advance it consumed, or the clock table's if later.
func (s *Scheduler) known() time.Time {
	t := s.Announced()
	if f := s.tableSrc.Load(); f != nil {
		if v := (*f)(); v.After(t) {
			t = v
		}
	}
	return t
}

func (s *Scheduler) announcedNow() time.Time {
	if f := s.announcedSrc.Load(); f != nil {
		return (*f)()
	}
	return s.Announced()
}

func (m *Metrics) changelogWait(d time.Duration) {
	if m != nil {
		m.waits.Observe(d.Seconds())
	}
}
