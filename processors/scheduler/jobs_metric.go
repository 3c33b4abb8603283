package scheduler

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chronos-scheduler/chronos/codecs"
)

// jobsCollector exports chronos_jobs{state}: the jobs of the partitions this
// instance has open, counted by walking the stores. A count is reused for
// maxAge (a scrape of a million-job instance should not walk a million
// records), and for spend times the walk's duration when that is longer:
// walking 10M records every 30 s took ~9% of a core while they were
// registered, and a walk spaced 50 times its duration takes at most 2%.
type jobsCollector struct {
	count  func() map[codecs.Status]float64
	now    func() time.Time
	maxAge time.Duration
	spend  time.Duration

	mu     sync.Mutex
	at     time.Time     // when the counts were taken
	reuse  time.Duration // how long they serve
	counts map[codecs.Status]float64
}

var jobsDesc = prometheus.NewDesc("chronos_jobs", "Jobs in the partitions this instance owns, by state (counted at most every 30 s, or every 50 times a count's duration when that is longer).",
	[]string{"state"}, nil)

// Describe implements prometheus.Collector.
func (c *jobsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- jobsDesc }

// Collect implements prometheus.Collector.
func (c *jobsCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if start := c.now(); c.counts == nil || start.Sub(c.at) > c.reuse {
		c.counts = c.count()
		c.at = c.now()
		c.reuse = max(c.maxAge, c.spend*c.at.Sub(start))
	}
	for _, st := range []codecs.Status{codecs.StatusActive, codecs.StatusPaused, codecs.StatusCompleted} {
		ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, c.counts[st], st.String())
	}
}

// countJobs walks the open stores and counts job records by status.
func (s *Scheduler) countJobs() map[codecs.Status]float64 {
	counts := map[codecs.Status]float64{}
	for p := int32(0); p < s.cfg.Layout.Partitions; p++ {
		st := s.Store(p)
		if st == nil {
			continue
		}
		it, err := st.Iterator()
		if err != nil {
			continue
		}
		for it.Next() {
			v, err := it.Value()
			if err != nil {
				break
			}
			if status, ok := codecs.JobStatus(v); ok {
				counts[status]++
			}
		}
		it.Release()
	}
	return counts
}

// JobsCollector returns the chronos_jobs{state} collector of this scheduler.
func (s *Scheduler) JobsCollector() prometheus.Collector {
	return &jobsCollector{count: s.countJobs, now: time.Now, maxAge: 30 * time.Second, spend: 50}
}

// PartitionsGauge returns chronos_partitions_owned: the partitions whose
// store this scheduler has open (assigned, recovering or recovered). Safe
// for concurrent use.
func (s *Scheduler) PartitionsGauge() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "chronos_partitions_owned",
		Help: "Scheduler partitions whose store this instance has open (assigned and recovering or recovered)."},
		func() float64 { return float64(s.OpenStores()) })
}
