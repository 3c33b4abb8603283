package instance

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/processors/clock"
	"github.com/chronos-scheduler/chronos/store"
)

// registerGauges registers the gauges of the instance's parts, each kept
// next to the state it reads, and chronos_ready, which reads the instance.
func (s *Instance) registerGauges(reg prometheus.Registerer) {
	if !s.cfg.History.Only { // no scheduler: no announced time to age
		// The age reads the advances this instance's scheduler consumed (and
		// its partitions' watermarks), not the clock table: every fan-out
		// stuck on a dispatch broker that does not answer, or every
		// partition still restoring, consumes no advance and must page
		// while the clock table moves on (adversary 19e).
		reg.MustRegister(clock.NewAnnouncedAge(s.consumedAnnounced, s.cfg.Now).WithTable(s.annc.Latest).Collectors(s.cfg.resolution(), string(s.cfg.Layout.ClockGroup()))...)
	}
	reg.MustRegister(s.sched.JobsCollector(), s.sched.PartitionsGauge(), s.clock.LagGauge(s.cfg.Now), s.clock.AheadGauge(),
		&lag.Lateness{Partitions: s.latenessPartitions, Announced: s.latenessAnnounced}, storeMemory{},
		readyGauge("chronos_ready", "1 when /readyz would answer 200: the scheduling groups of this instance (its history group on a history-only instance) run and have recovered their partitions, its clock ticks and the job view has caught up.", s.Ready))
	if s.hist != nil {
		reg.MustRegister(readyGauge("chronos_history_ready", "1 when the history group of this instance runs and has recovered its partitions and the history view has recovered (it starts once the instance is ready).", s.HistoryReady))
	}
}

// readyGauge is 1 while ready reports nil, else 0.
func readyGauge(name, help string, ready func() error) prometheus.GaugeFunc {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
		if ready() != nil {
			return 0
		}
		return 1
	})
}

// consumedAnnounced is the newest announced time this instance's
// scheduler has seen: the latest advance it consumed, or the newest
// watermark of the partitions it owns.
func (s *Instance) consumedAnnounced() time.Time {
	t := s.sched.Announced()
	for _, w := range s.sched.Watermarks() {
		if w.After(t) {
			t = w
		}
	}
	return t
}

// latenessPartitions is Scheduler.Partitions as lag.Lateness reads it.
func (s *Instance) latenessPartitions() map[int32]lag.PartitionTimes {
	out := map[int32]lag.PartitionTimes{}
	for p, pt := range s.sched.Partitions() {
		out[p] = lag.PartitionTimes{Watermark: pt.Watermark, RecoveredAt: pt.RecoveredAt, Restore: pt.Restore, Pending: pt.Pending, CaughtUp: pt.CaughtUp}
	}
	return out
}

// latenessAnnounced is the announced time the lateness gauge measures
// from: the clock table's once it is lag.ConsumedGrace ahead of what this
// instance's scheduler consumed (a pod whose fan-out is stuck or too slow
// to read the next advance, adversary 19d), else what it consumed: during
// a rebalance every member stops consuming for a few seconds while the
// clock table moves on, which is not a fan-out behind (adversary 19c,
// TestScaleUpRestoreAsksForTheMinimum: 6 s read once in CI).
func (s *Instance) latenessAnnounced() time.Time {
	c := s.consumedAnnounced()
	if v := s.annc.Latest(); v.Sub(c) >= lag.ConsumedGrace {
		return v
	}
	return c
}

// storeMemory reports store.OpenMemory: what the process's Pebble stores
// hold in memtables and block caches (outside Go's heap with cgo).
type storeMemory struct{}

var (
	storeMemoryDesc = prometheus.NewDesc("chronos_store_memory_bytes",
		"Bytes held by this process's open Pebble stores, by kind: memtables (reserved out of each store's block cache) and block_cache (blocks cached).",
		[]string{"kind"}, nil)
	storesOpenDesc = prometheus.NewDesc("chronos_stores_open",
		"Pebble stores open in this process (partition stores of every group and view).", nil, nil)
	storesHeldDesc = prometheus.NewDesc("chronos_stores_compactions_held",
		"Open Pebble stores whose level-0 compactions wait for the recovery threshold's depth, by reason: recovery (from an empty directory) or flood (a registration of new job ids).",
		[]string{"reason"}, nil)
)

func (storeMemory) Describe(ch chan<- *prometheus.Desc) {
	ch <- storeMemoryDesc
	ch <- storesOpenDesc
	ch <- storesHeldDesc
}

func (storeMemory) Collect(ch chan<- prometheus.Metric) {
	m := store.OpenMemory()
	ch <- prometheus.MustNewConstMetric(storeMemoryDesc, prometheus.GaugeValue, float64(m.MemTables), "memtables")
	ch <- prometheus.MustNewConstMetric(storeMemoryDesc, prometheus.GaugeValue, float64(m.BlockCache), "block_cache")
	ch <- prometheus.MustNewConstMetric(storesOpenDesc, prometheus.GaugeValue, float64(m.Stores))
	h := store.OpenHeld()
	ch <- prometheus.MustNewConstMetric(storesHeldDesc, prometheus.GaugeValue, float64(h.Recovery), "recovery")
	ch <- prometheus.MustNewConstMetric(storesHeldDesc, prometheus.GaugeValue, float64(h.Flood), "flood")
}
