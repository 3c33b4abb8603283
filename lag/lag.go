// Package lag computes consumer-group lag exactly the way KEDA's Kafka
// scaler does (latest offset minus committed offset, per partition; a
// partition without a commit counts by the offset reset policy), exports it
// as chronos_consumergroup_lag{consumergroup,topic,partition} and
// chronos_consumergroup_lag_sum{consumergroup,topic}, and computes the
// replica count KEDA would ask for.
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
	// Earliest: the whole partition is lag (Chronos groups start at the
	// oldest offset, so this is their truth). KEDA's default is latest.
	Earliest Policy = "earliest"
	// Latest: a partition without a commit counts 1.
	Latest Policy = "latest"
)

// Target is one consumer group on one topic.
type Target struct {
	Group string
	Topic string
}

// Partition is the lag of one partition.
type Partition struct {
	Group     string
	Topic     string
	Partition int32
	End       int64 // latest offset
	Committed int64 // -1: no commit
	Lag       int64
}

// Measure returns the lag of every partition of every target, sorted.
func Measure(ctx context.Context, adm *kadm.Client, policy Policy, targets ...Target) ([]Partition, error) {
	var out []Partition
	ends := map[string]kadm.ListedOffsets{}
	for _, t := range targets {
		if _, ok := ends[t.Topic]; ok {
			continue
		}
		lo, err := adm.ListEndOffsets(ctx, t.Topic)
		if err != nil {
			return nil, fmt.Errorf("lag: end offsets of %s: %w", t.Topic, err)
		}
		if err := lo.Error(); err != nil {
			return nil, fmt.Errorf("lag: end offsets of %s: %w", t.Topic, err)
		}
		ends[t.Topic] = lo
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
		ends[t.Topic].Each(func(o kadm.ListedOffset) {
			p := Partition{Group: t.Group, Topic: t.Topic, Partition: o.Partition, End: o.Offset, Committed: -1}
			if c, ok := committed.Lookup(t.Topic, o.Partition); ok && c.Err == nil && c.At >= 0 {
				p.Committed = c.At
			}
			p.Lag = partitionLag(p.End, p.Committed, policy)
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

// Sum is the total lag of parts.
func Sum(parts []Partition) int64 {
	var total int64
	for _, p := range parts {
		total += p.Lag
	}
	return total
}

// partitionLag is KEDA's per-partition lag.
func partitionLag(end, committed int64, policy Policy) int64 {
	if committed < 0 {
		if policy == Latest {
			return 1
		}
		return end
	}
	return max(end-committed, 0)
}

// Replicas is the replica count KEDA's Kafka scaler asks for: the total lag
// divided by lagThreshold, rounded up, capped at the number of partitions
// (with lag, when limitToPartitionsWithLag) and at least 0.
func Replicas(parts []Partition, lagThreshold int64, limitToPartitionsWithLag bool) int64 {
	if lagThreshold < 1 {
		lagThreshold = 1
	}
	var total, withLag int64
	for _, p := range parts {
		total += p.Lag
		if p.Lag > 0 {
			withLag++
		}
	}
	want := (total + lagThreshold - 1) / lagThreshold
	limit := int64(len(parts))
	if limitToPartitionsWithLag {
		limit = withLag
	}
	return min(want, limit)
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
		"Consumer group lag summed over the partitions of a topic.", []string{"consumergroup", "topic"}, nil)
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
		sums[Target{p.Group, p.Topic}] += p.Lag
	}
	for t, s := range sums {
		ch <- prometheus.MustNewConstMetric(sumDesc, prometheus.GaugeValue, float64(s), t.Group, t.Topic)
	}
}
