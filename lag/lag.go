// Package lag computes consumer-group lag exactly the way KEDA's Kafka
// scaler (KEDA 2.21, the version the manifests pin) does: latest offset
// minus committed offset, per partition, negative when a commit is past the
// end; a partition without a commit counts 1 under the latest offset reset
// policy and the records still in the log under earliest. It exports the lag
// as chronos_consumergroup_lag{consumergroup,topic,partition} and
// chronos_consumergroup_lag_sum{consumergroup,topic}, and computes the
// metric and replica count KEDA and the HPA derive from it for the
// ScaledObject's triggers (keda.go). The parity test in testenv/keda runs
// KEDA's own scaler against the same broker.
package lag

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Policy is KEDA's offsetResetPolicy: how a partition with no committed
// offset counts.
type Policy string

// Policies.
const (
	// Earliest: the records still in the partition (end minus log start)
	// are lag. Chronos groups start at the oldest offset, so this is their
	// truth. KEDA's default is latest.
	Earliest Policy = "earliest"
	// Latest: a partition without a commit counts 1.
	Latest Policy = "latest"
)

// Target is one consumer group on one topic.
type Target struct {
	Group string
	Topic string
	// Policy overrides Measure's policy for this target (empty: Measure's).
	Policy Policy
}

// Partition is the lag of one partition.
type Partition struct {
	Group     string
	Topic     string
	Partition int32
	Start     int64 // log start offset (after retention or deleted records)
	End       int64 // latest offset
	Committed int64 // -1: no commit
	// Lag is KEDA's lag of the partition: End - Committed, negative when
	// the commit is past the end (a recreated or truncated topic: KEDA adds
	// it to its total as it is); without a commit, by the policy.
	Lag int64
}

// Measure returns the lag of every partition of every target, sorted. A
// target's own Policy, if set, overrides policy. A group that never
// committed counts as no commit on every partition (Apache Kafka answers "no
// offset" for it; the embedded broker answers "group id does not exist",
// where KEDA's scaler reports an error and no metric).
func Measure(ctx context.Context, adm *kadm.Client, policy Policy, targets ...Target) ([]Partition, error) {
	var out []Partition
	ends := map[string]kadm.ListedOffsets{}
	starts := map[string]kadm.ListedOffsets{}
	for _, t := range targets {
		if _, ok := ends[t.Topic]; ok {
			continue
		}
		lo, err := listed(adm.ListEndOffsets(ctx, t.Topic))
		if err != nil {
			return nil, fmt.Errorf("lag: end offsets of %s: %w", t.Topic, err)
		}
		so, err := listed(adm.ListStartOffsets(ctx, t.Topic))
		if err != nil {
			return nil, fmt.Errorf("lag: start offsets of %s: %w", t.Topic, err)
		}
		ends[t.Topic], starts[t.Topic] = lo, so
	}
	for _, t := range targets {
		committed, err := adm.FetchOffsets(ctx, t.Group)
		if errors.Is(err, kerr.GroupIDNotFound) {
			// A group that never committed: every partition has no commit.
			committed, err = nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("lag: committed offsets of %s: %w", t.Group, err)
		}
		pol := policy
		if t.Policy != "" {
			pol = t.Policy
		}
		ends[t.Topic].Each(func(o kadm.ListedOffset) {
			p := Partition{Group: t.Group, Topic: t.Topic, Partition: o.Partition, End: o.Offset, Committed: -1}
			if s, ok := starts[t.Topic].Lookup(t.Topic, o.Partition); ok {
				p.Start = s.Offset
			}
			if c, ok := committed.Lookup(t.Topic, o.Partition); ok && c.Err == nil && c.At >= 0 {
				p.Committed = c.At
			}
			p.Lag = partitionLag(p.Start, p.End, p.Committed, pol)
			out = append(out, p)
		})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	return out, nil
}

// listed is lo, or the first error of its request or its partitions.
func listed(lo kadm.ListedOffsets, err error) (kadm.ListedOffsets, error) {
	if err != nil {
		return nil, err
	}
	return lo, lo.Error()
}

// Sum is the total lag of parts (KEDA's totalLag before its partition cap;
// negative lags count as they are).
func Sum(parts []Partition) int64 {
	var total int64
	for _, p := range parts {
		total += p.Lag
	}
	return total
}

// partitionLag is KEDA 2.21's per-partition lag (getLagForPartition):
// without a commit, 1 under latest and the retained records (never
// negative) under earliest; with one, end minus the commit, as it is.
func partitionLag(start, end, committed int64, policy Policy) int64 {
	if committed < 0 {
		if policy == Latest {
			return 1
		}
		return max(end-start, 0)
	}
	return end - committed
}

// Collector exports the lag of its targets on every scrape. Safe for
// concurrent use.
type Collector struct {
	Admin   *kadm.Client
	Policy  Policy
	Targets []Target
	// Timeout bounds one scrape's Kafka requests (default 5s).
	Timeout time.Duration
}

var (
	lagDesc = prometheus.NewDesc("chronos_consumergroup_lag",
		"Consumer group lag per partition: latest offset minus committed offset (as KEDA's Kafka scaler computes it).",
		[]string{"consumergroup", "topic", "partition"}, nil)
	sumDesc = prometheus.NewDesc("chronos_consumergroup_lag_sum",
		"Consumer group lag summed over the partitions of a topic, uncapped (KEDA's metric caps it at lagThreshold times the partition count; chronos lag prints both).", []string{"consumergroup", "topic"}, nil)
	upDesc = prometheus.NewDesc("chronos_consumergroup_lag_up",
		"1 if the last lag scrape reached Kafka, 0 if it failed.", nil, nil)
)

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- lagDesc
	ch <- sumDesc
	ch <- upDesc
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	timeout := c.Timeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	parts, err := Measure(ctx, c.Admin, c.Policy, c.Targets...)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 1)
	sums := map[Target]int64{}
	for _, p := range parts {
		ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, float64(p.Lag), p.Group, p.Topic, fmt.Sprint(p.Partition))
		sums[Target{Group: p.Group, Topic: p.Topic}] += p.Lag
	}
	for t, s := range sums {
		ch <- prometheus.MustNewConstMetric(sumDesc, prometheus.GaugeValue, float64(s), t.Group, t.Topic)
	}
}
