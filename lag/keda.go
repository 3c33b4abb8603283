package lag

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// ErrTrigger reports trigger metadata KEDA would refuse.
var ErrTrigger = errors.New("lag: invalid kafka trigger")

// HPATolerance is the HPA's default tolerance: a proposal within 10% of the
// current replica count leaves it unchanged.
const HPATolerance = 0.1

// KafkaTrigger is one `type: kafka` trigger of a KEDA ScaledObject: what
// KEDA 2.21's Kafka scaler reads from its metadata. A value; safe for
// concurrent use.
type KafkaTrigger struct {
	Group string
	Topic string
	// LagThreshold is the target lag per replica (KEDA's default 10).
	LagThreshold int64
	// ActivationLagThreshold: the trigger is active above it (default 0).
	// Only decides between 0 and 1 replicas.
	ActivationLagThreshold int64
	// Policy counts partitions without a commit (KEDA's default latest).
	Policy Policy
	// LimitToPartitionsWithLag caps the metric at the partitions with lag.
	LimitToPartitionsWithLag bool
	// AllowIdleConsumers removes the cap at the partition count.
	AllowIdleConsumers bool
}

// ParseKafkaTrigger reads a trigger's metadata as KEDA does: the same keys,
// defaults and checks (consumerGroup and topic are required here: an
// unpinned topic makes KEDA sum every topic the group committed on).
func ParseKafkaTrigger(md map[string]string) (KafkaTrigger, error) {
	tr := KafkaTrigger{Group: md["consumerGroup"], Topic: md["topic"], LagThreshold: 10, Policy: Latest}
	var errs []error
	num := func(key string, dst *int64) {
		if v, ok := md[key]; ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("%w: %s %q is not an integer", ErrTrigger, key, v))
			}
			*dst = n
		}
	}
	flag := func(key string, dst *bool) {
		if v, ok := md[key]; ok {
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%w: %s %q is not a boolean", ErrTrigger, key, v))
			}
			*dst = b
		}
	}
	num("lagThreshold", &tr.LagThreshold)
	num("activationLagThreshold", &tr.ActivationLagThreshold)
	flag("limitToPartitionsWithLag", &tr.LimitToPartitionsWithLag)
	flag("allowIdleConsumers", &tr.AllowIdleConsumers)
	if v, ok := md["offsetResetPolicy"]; ok {
		tr.Policy = Policy(v)
	}
	if tr.Group == "" || tr.Topic == "" {
		errs = append(errs, fmt.Errorf("%w: consumerGroup and topic are required", ErrTrigger))
	}
	if err := tr.Validate(); err != nil {
		errs = append(errs, err)
	}
	return tr, errors.Join(errs...)
}

// Validate reports what KEDA's scaler refuses.
func (tr KafkaTrigger) Validate() error {
	var errs []error
	if tr.LagThreshold <= 0 {
		errs = append(errs, fmt.Errorf("%w: lagThreshold %d must be positive", ErrTrigger, tr.LagThreshold))
	}
	if tr.ActivationLagThreshold < 0 {
		errs = append(errs, fmt.Errorf("%w: activationLagThreshold %d must not be negative", ErrTrigger, tr.ActivationLagThreshold))
	}
	if tr.Policy != Earliest && tr.Policy != Latest {
		errs = append(errs, fmt.Errorf("%w: offsetResetPolicy %q: want earliest or latest", ErrTrigger, tr.Policy))
	}
	if tr.AllowIdleConsumers && tr.LimitToPartitionsWithLag {
		errs = append(errs, fmt.Errorf("%w: allowIdleConsumers and limitToPartitionsWithLag cannot be set together", ErrTrigger))
	}
	return errors.Join(errs...)
}

// Target is the group and topic the trigger watches, with its policy.
func (tr KafkaTrigger) Target() Target {
	return Target{Group: tr.Group, Topic: tr.Topic, Policy: tr.Policy}
}

// Metric is the value KEDA's scaler reports to the HPA for the partitions of
// parts that belong to the trigger, and whether the trigger is active: the
// total lag, then (unless AllowIdleConsumers) capped at the partition count
// times LagThreshold where the total divided by LagThreshold in integer
// division exceeds that count (so a total of 1,201-1,299 on 12 partitions
// and a threshold of 100 stays uncapped and asks for 13); a negative total
// is reported as 0 (KEDA's metric quantity is never negative).
func (tr KafkaTrigger) Metric(parts []Partition) (value int64, active bool) {
	var total, n, withLag int64
	for _, p := range parts {
		if p.Group != tr.Group || p.Topic != tr.Topic {
			continue
		}
		total += p.Lag
		n++
		if p.Lag > 0 {
			withLag++
		}
	}
	active = total > tr.ActivationLagThreshold
	if !tr.AllowIdleConsumers || tr.LimitToPartitionsWithLag {
		bound := n
		if tr.LimitToPartitionsWithLag {
			bound = withLag
		}
		if threshold := max(tr.LagThreshold, 1); total/threshold > bound {
			total = bound * threshold
		}
	}
	return max(total, 0), active
}

// Proposal is the HPA's replica count for an AverageValue external metric
// with target threshold: ceil(value/threshold), or current when current > 0
// and the ratio is within HPATolerance of it. May be 0 or negative.
func Proposal(value float64, threshold float64, current int64) int64 {
	if current > 0 {
		if ratio := value / (threshold * float64(current)); math.Abs(ratio-1) <= HPATolerance {
			return current
		}
	}
	return int64(math.Ceil(value / threshold))
}

// ScaledObject is the part of a KEDA ScaledObject that decides the replica
// count: its bounds, its Kafka triggers, and its two prometheus triggers,
// on the fan-out's lateness and on the fire rate (nil: none). A value; safe
// for concurrent use.
type ScaledObject struct {
	MinReplicas int64
	MaxReplicas int64
	Triggers    []KafkaTrigger
	Lateness    *PrometheusTrigger
	FireRate    *PrometheusTrigger
}

// Observed are the values the prometheus triggers' queries return: the
// worst chronos_fanout_lateness_seconds and the fires per second.
type Observed struct {
	Lateness float64
	FireRate float64
}

// Verdict is one trigger's part in a decision.
type Verdict struct {
	Trigger KafkaTrigger
	Lag     int64 // total lag of the trigger's partitions (uncapped)
	Metric  int64 // the value KEDA reports (capped)
	Active  bool
	// Replicas is the HPA's proposal for this metric alone.
	Replicas int64
}

// Targets are the triggers' targets.
func (so ScaledObject) Targets() []Target {
	out := make([]Target, len(so.Triggers))
	for i, tr := range so.Triggers {
		out[i] = tr.Target()
	}
	return out
}

// Replicas is the replica count KEDA and the HPA ask for from parts, with
// current replicas running (0: unknown, no tolerance): the largest proposal
// of the Kafka triggers (the HPA takes the maximum over metrics), kept
// between MinReplicas (at least 1) and MaxReplicas; 0 when MinReplicas is 0
// and no trigger is active (KEDA scales to zero). The lateness trigger is
// left out, as the HPA leaves out a metric it cannot read (Prometheus
// down); ReplicasWith includes it.
func (so ScaledObject) Replicas(parts []Partition, current int64) (int64, []Verdict) {
	return so.replicas(parts, nil, current)
}

// ReplicasWith is Replicas with the prometheus triggers too, their queries
// returning obs. The HPA takes the largest of all the proposals.
func (so ScaledObject) ReplicasWith(parts []Partition, obs Observed, current int64) (int64, []Verdict) {
	return so.replicas(parts, &obs, current)
}

func (so ScaledObject) replicas(parts []Partition, obs *Observed, current int64) (int64, []Verdict) {
	verdicts := make([]Verdict, len(so.Triggers))
	want, active := int64(math.MinInt64), false
	if obs != nil {
		for _, p := range []struct {
			tr *PrometheusTrigger
			v  float64
		}{{so.Lateness, obs.Lateness}, {so.FireRate, obs.FireRate}} {
			if p.tr != nil {
				n, a := p.tr.Replicas(p.v, current)
				want, active = max(want, n), active || a
			}
		}
	}
	for i, tr := range so.Triggers {
		v := Verdict{Trigger: tr}
		for _, p := range parts {
			if p.Group == tr.Group && p.Topic == tr.Topic {
				v.Lag += p.Lag
			}
		}
		v.Metric, v.Active = tr.Metric(parts)
		v.Replicas = Proposal(float64(v.Metric), float64(max(tr.LagThreshold, 1)), current)
		verdicts[i] = v
		want = max(want, v.Replicas)
		active = active || v.Active
	}
	if so.MinReplicas == 0 && !active {
		return 0, verdicts
	}
	return so.Bound(want), verdicts
}

// Bound keeps n between MinReplicas (at least 1) and MaxReplicas (0: no
// upper bound).
func (so ScaledObject) Bound(n int64) int64 {
	n = max(n, so.MinReplicas, 1)
	if so.MaxReplicas > 0 {
		n = min(n, max(so.MaxReplicas, so.MinReplicas, 1))
	}
	return n
}
