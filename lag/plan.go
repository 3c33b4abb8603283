package lag

import (
	"fmt"
	"math"
	"strings"
)

// Capacity is what one Chronos replica was measured to do, and what a
// rebalance costs: the inputs of a scaling plan (docs/operations.md names
// the runs they come from).
type Capacity struct {
	// FiresPerSecond one replica dispatches (chronos bench --aligned).
	FiresPerSecond float64
	// CommandsPerSecond one replica applies (chronos bench registration).
	CommandsPerSecond float64
	// RebalancePause is how long every replica stops when the count
	// changes (a restart with its data dir until ready).
	RebalancePause float64
	// RecoverySecondsPerJob is how long a new owner takes per job of the
	// partitions it receives to restore them from the changelog.
	RecoverySecondsPerJob float64
}

// Autoscaler is the KEDA and HPA configuration of a plan: the shipped
// ScaledObject's triggers and bounds, and the HPA's behavior.
type Autoscaler struct {
	ScaledObject ScaledObject
	// Partitions of the scheduler topics (replicas beyond them are idle).
	Partitions int
	// SyncSeconds: the HPA reads KEDA's metrics this often (the HPA's
	// default sync period, 15 s; KEDA's pollingInterval 15 s).
	SyncSeconds int
	// ScaleUpWindow and ScaleDownWindow are the stabilization windows in
	// seconds; ScaleUpPods per ScaleUpPeriod and ScaleDownPods per
	// ScaleDownPeriod the step policies.
	ScaleUpWindow, ScaleUpPods, ScaleUpPeriod       int
	ScaleDownWindow, ScaleDownPods, ScaleDownPeriod int
}

// Load is one scenario: a steady fire rate, bursts of fires due at one
// second, and commands (puts) arriving.
type Load struct {
	Name string
	// Jobs registered (what a new owner must recover).
	Jobs float64
	// FiresPerSecond due every second.
	FiresPerSecond float64
	// Burst fires due at BurstAt (seconds after the start).
	Burst   float64
	BurstAt int
	// Commands arriving at CommandsPerSecond from CommandsFrom for
	// CommandsFor seconds.
	CommandsPerSecond         float64
	CommandsFrom, CommandsFor int
	// Seconds simulated.
	Seconds int
}

// Step is a change of the replica count in a plan.
type Step struct {
	At       int // seconds after the start
	Replicas int64
}

// Outcome is what a plan predicts for a load.
type Outcome struct {
	Load  Load
	Steps []Step // starts with the count at 0 s
	// MaxFireLateness is the most seconds a fire waits past its time;
	// MaxCommandWait the most a command waits to be applied.
	MaxFireLateness, MaxCommandWait float64
	// CaughtUp is when the backlog last became empty (-1: never).
	CaughtUp int
	// PeakReplicas is the most replicas asked.
	PeakReplicas int64
}

// cohort is work that arrived in one second and is not done yet.
type cohort struct {
	at    int
	count float64
}

// queue is FIFO work of one kind.
type queue struct{ cs []cohort }

func (q *queue) add(at int, n float64) {
	if n > 0 {
		q.cs = append(q.cs, cohort{at, n})
	}
}

func (q *queue) total() float64 {
	var s float64
	for _, c := range q.cs {
		s += c.count
	}
	return s
}

// take removes up to n items, oldest first, and returns the arrival second
// of the oldest one taken (-1: none).
func (q *queue) take(n float64) int {
	oldest := -1
	for n > 1e-9 && len(q.cs) > 0 {
		c := &q.cs[0]
		if oldest < 0 {
			oldest = c.at
		}
		d := math.Min(n, c.count)
		c.count -= d
		n -= d
		if c.count <= 1e-9 {
			q.cs = q.cs[1:]
		}
	}
	return oldest
}

func (q *queue) oldest(now int) int {
	if len(q.cs) == 0 {
		return 0
	}
	return now - q.cs[0].at
}

// Simulate runs load second by second against cap with a: the replicas
// process fires and commands oldest first (their capacity shared in
// proportion to the work waiting), and every SyncSeconds the HPA reads the
// triggers as the code makes them: chronos-jobs holds the commands
// waiting; the lateness trigger reads the age of the oldest waiting fire in
// seconds (the worst watermark); the
// fire-rate trigger the fires dispatched per second over the last 2
// minutes. The
// HPA proposes, stabilizes and steps the count as Autoscaler says. A count
// change pauses every replica for RebalancePause and then leaves the moved
// partitions' share of the capacity idle while their new owners recover
// them (the new pods on a scale-up, the remaining ones on a scale-down,
// each its part of the jobs, in parallel). A model: it spreads work evenly
// over the partitions.
func Simulate(cap Capacity, a Autoscaler, load Load) Outcome {
	out := Outcome{Load: load, CaughtUp: -1}
	replicas := a.ScaledObject.Bound(a.ScaledObject.MinReplicas)
	out.Steps = []Step{{0, replicas}}
	out.PeakReplicas = replicas
	var fires, cmds queue
	var fired []float64 // fires dispatched in each second, for the rate
	var recs []rec      // the HPA's recommendations
	var changes []rec   // scale events (at, delta)
	pausedUntil, recoveringUntil := -1, -1
	recoveringShare := 0.0
	s := a.ScaledObject
	for t := 0; t < load.Seconds; t++ {
		fires.add(t, load.FiresPerSecond)
		if t == load.BurstAt {
			fires.add(t, load.Burst)
		}
		if t >= load.CommandsFrom && t < load.CommandsFrom+load.CommandsFor {
			cmds.add(t, load.CommandsPerSecond)
		}
		// A second of work: replica-seconds, as fires and commands.
		capacity := float64(min(replicas, int64(a.Partitions)))
		switch {
		case t < pausedUntil:
			capacity = 0
		case t < recoveringUntil:
			capacity *= 1 - recoveringShare
		}
		fw, cw := fires.total()/cap.FiresPerSecond, cmds.total()/cap.CommandsPerSecond
		waiting := fires.total()
		if work := fw + cw; work > 0 {
			share := math.Min(1, capacity/work)
			if o := fires.take(fires.total() * share); o >= 0 {
				out.MaxFireLateness = math.Max(out.MaxFireLateness, float64(t-o))
			}
			if o := cmds.take(cmds.total() * share); o >= 0 {
				out.MaxCommandWait = math.Max(out.MaxCommandWait, float64(t-o))
			}
		}
		fired = append(fired, waiting-fires.total())
		if fires.total()+cmds.total() < 1 {
			if out.CaughtUp < 0 {
				out.CaughtUp = t
			}
		} else {
			out.CaughtUp = -1
		}
		if a.SyncSeconds <= 0 || t%a.SyncSeconds != 0 {
			continue
		}
		// KEDA's metrics as they would be measured now, spread evenly over
		// the partitions.
		behind := float64(fires.oldest(t))
		parts := make([]Partition, 0, len(s.Triggers)*a.Partitions)
		for p := range a.Partitions {
			for _, tr := range s.Triggers {
				l := 0.0
				if strings.HasSuffix(tr.Topic, "chronos-jobs") {
					l = cmds.total() / float64(a.Partitions)
				}
				parts = append(parts, Partition{Group: tr.Group, Topic: tr.Topic, Partition: int32(p), Lag: int64(math.Round(l))})
			}
		}
		// rate(chronos_fires_total[2m]): the fires of the last 120 s (or
		// of the run so far) per second.
		from := max(0, len(fired)-120)
		var recent float64
		for _, n := range fired[from:] {
			recent += n
		}
		obs := Observed{Lateness: behind, FireRate: recent / float64(len(fired)-from)}
		want, _ := s.ReplicasWith(parts, obs, replicas)
		recs = append(recs, rec{t, want})
		next := stabilize(recs, t, replicas, a)
		// Step policies: pods added (removed) in the last period.
		var added, removed int64
		for _, c := range changes {
			if c.n > 0 && t-c.at < a.ScaleUpPeriod {
				added += c.n
			}
			if c.n < 0 && t-c.at < a.ScaleDownPeriod {
				removed -= c.n
			}
		}
		next = min(next, replicas-added+int64(a.ScaleUpPods))
		next = max(next, replicas+removed-int64(a.ScaleDownPods))
		next = s.Bound(next)
		if next == replicas {
			continue
		}
		changes = append(changes, rec{t, next - replicas})
		// The moved share of the partitions, and who recovers it: the new
		// pods (scale-up) or the ones that stay (scale-down), in parallel.
		delta := math.Abs(float64(next - replicas))
		moved := delta / float64(max(next, replicas))
		recipients := delta
		if next < replicas {
			recipients = float64(next)
		}
		replicas = next
		out.Steps = append(out.Steps, Step{t, replicas})
		out.PeakReplicas = max(out.PeakReplicas, replicas)
		pausedUntil = t + 1 + int(math.Ceil(cap.RebalancePause))
		recoveringShare = moved
		recoveringUntil = pausedUntil + int(math.Ceil(load.Jobs*moved/recipients*cap.RecoverySecondsPerJob))
	}
	return out
}

// rec is a replica count at a second: an HPA recommendation or a change.
type rec struct {
	at int
	n  int64
}

// stabilize is the HPA's stabilization: a scale-up goes to the lowest
// recommendation of the scale-up window, a scale-down to the highest of
// the scale-down window.
func stabilize(recs []rec, t int, current int64, a Autoscaler) int64 {
	upTo, downTo := int64(math.MaxInt64), int64(math.MinInt64)
	for _, r := range recs {
		if t-r.at <= a.ScaleUpWindow {
			upTo = min(upTo, r.n)
		}
		if t-r.at <= a.ScaleDownWindow {
			downTo = max(downTo, r.n)
		}
	}
	switch {
	case upTo > current:
		return upTo
	case downTo < current:
		return downTo
	}
	return current
}

// Table renders outcomes as a Markdown table.
func Table(outs []Outcome) string {
	var b strings.Builder
	b.WriteString("| Load | Replicas over time (s: count) | Peak | Fires late by at most | Commands wait at most | Caught up at |\n|---|---|---|---|---|---|\n")
	for _, o := range outs {
		var steps []string
		for _, s := range o.Steps {
			steps = append(steps, fmt.Sprintf("%d: %d", s.At, s.Replicas))
		}
		caught := "not within the run"
		if o.CaughtUp >= 0 {
			caught = fmt.Sprintf("%d s", o.CaughtUp)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %.0f s | %.0f s | %s |\n", o.Load.Name, strings.Join(steps, ", "), o.PeakReplicas,
			o.MaxFireLateness, o.MaxCommandWait, caught)
	}
	return b.String()
}
