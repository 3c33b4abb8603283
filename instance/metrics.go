package instance

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/processors/clock"
)

// registerGauges registers the gauges of the instance's parts, each kept
// next to the state it reads, and chronos_ready, which reads the instance.
func (s *Instance) registerGauges(reg prometheus.Registerer) {
	if !s.cfg.History.Only { // no scheduler: its age would rise for ever (a job of history-only pods would read stalled)
		reg.MustRegister(clock.NewAnnouncedAge(s.sched.Announced, s.cfg.Now).Collectors(s.cfg.resolution())...)
	}
	reg.MustRegister(s.sched.JobsCollector(), s.sched.PartitionsGauge(), s.clock.LagGauge(s.cfg.Now), s.clock.AheadGauge(),
		&lag.Lateness{Watermarks: s.sched.Watermarks, Announced: s.sched.Announced},
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "chronos_ready",
			Help: "1 when every group of this instance runs and has recovered its partitions."},
			func() float64 {
				if s.Ready() != nil {
					return 0
				}
				return 1
			}))
}
