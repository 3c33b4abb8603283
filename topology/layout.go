package topology

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// DefaultPartitions is the default partition count of the sharded topics.
const DefaultPartitions = 12

// Layout is the set of topics one Chronos system needs.
type Layout struct {
	Names
	// Partitions is the shard count: the partitions of chronos-jobs,
	// chronos-shard-triggers, the scheduler table and loop, dispatch,
	// rejects and bucket triggers (default 12). It caps the parallelism
	// of the scheduler group and cannot be changed once topics exist.
	Partitions int32
	// Replication is the replication factor of created topics (default -1:
	// the broker's default.replication.factor).
	Replication int16
}

// Topic is one topic of a Layout.
type Topic struct {
	Name       string
	Partitions int32
	Configs    map[string]string
	// Sharded topics must have exactly Layout.Partitions partitions.
	Sharded bool
}

// Validate reports every problem with the layout.
func (l Layout) Validate() error {
	var errs []error
	if err := ValidatePrefix(l.Prefix); err != nil {
		errs = append(errs, err)
	}
	if l.Partitions < 1 || l.Partitions > 10000 {
		errs = append(errs, fmt.Errorf("topology: partitions %d, want 1..10000", l.Partitions))
	}
	if l.Replication == 0 || l.Replication < -1 {
		errs = append(errs, fmt.Errorf("topology: replication factor %d, want -1 (broker default) or >= 1", l.Replication))
	}
	return errors.Join(errs...)
}

// Topics lists every topic of the layout.
func (l Layout) Topics() []Topic {
	compact := map[string]string{"cleanup.policy": "compact"}
	sharded := func(name string, cfg map[string]string) Topic {
		return Topic{Name: name, Partitions: l.Partitions, Configs: cfg, Sharded: true}
	}
	// Topics others write get compression.type=uncompressed: Apache Kafka
	// then recompresses each batch and refuses one that inflates past
	// max.message.bytes, so a compression bomb never reaches a consumer
	// (docs/security.md, "Size limits").
	inbound := map[string]string{"compression.type": "uncompressed"}
	return []Topic{
		sharded(string(l.Jobs()), inbound),
		sharded(string(l.ShardTriggers()), nil),
		sharded(string(l.SchedulerTable()), compact),
		sharded(string(l.SchedulerLoop()), nil),
		sharded(string(l.SchedulerBackfill()), nil),
		sharded(string(l.Dispatch()), nil),
		sharded(string(l.Rejects()), nil),
		sharded(string(l.BucketTriggers()), inbound),
		sharded(string(l.Results()), inbound),
		sharded(string(l.HistoryTable()), compact),
		// The broker stamps each tick when it appends it: the clock group
		// bounds ticks by that time (processors/clock, MaxAhead).
		{Name: string(l.Clock()), Partitions: 1, Configs: map[string]string{"message.timestamp.type": "LogAppendTime"}},
		{Name: string(l.ClockTable()), Partitions: 1, Configs: compact},
		// Named calendars: few, small, read whole by every instance.
		{Name: string(l.Calendars()), Partitions: 1, Configs: map[string]string{"cleanup.policy": "compact", "compression.type": "uncompressed"}},
	}
}

// Ensure creates every missing topic of the layout and checks that every
// existing one has its partition count (for sharded topics a mismatch breaks
// co-partitioning; the clock topics must have one), as an error, not a
// warning.
func (l Layout) Ensure(ctx context.Context, adm *kadm.Client) error {
	if err := l.Validate(); err != nil {
		return err
	}
	topics := l.Topics()
	names := make([]string, len(topics))
	for i, t := range topics {
		names[i] = t.Name
	}
	existing, err := adm.ListTopics(ctx, names...)
	if err != nil {
		return fmt.Errorf("topology: listing topics: %w", err)
	}
	var errs []error
	for _, t := range topics {
		d, ok := existing[t.Name]
		if ok && d.Err == nil {
			if got := int32(len(d.Partitions)); got != t.Partitions {
				errs = append(errs, fmt.Errorf("topology: topic %s has %d partitions, want %d", t.Name, got, t.Partitions))
			}
			if err := l.repair(ctx, adm, t); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if ok && d.Err != nil && !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			errs = append(errs, fmt.Errorf("topology: describing %s: %w", t.Name, d.Err))
			continue
		}
		if err := l.create(ctx, adm, t); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (l Layout) create(ctx context.Context, adm *kadm.Client, t Topic) error {
	cfg := make(map[string]*string, len(t.Configs))
	for k, v := range t.Configs {
		cfg[k] = kadm.StringPtr(v)
	}
	_, err := adm.CreateTopic(ctx, t.Partitions, l.Replication, cfg, t.Name)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("topology: creating %s: %w", t.Name, err)
	}
	return nil
}

// repaired are the topic settings Chronos depends on for correctness, which
// Ensure sets on topics that exist without them (created by an earlier
// release or by hand): the clock's trust in the broker's append time, and
// the broker's refusal of compression bombs on the topics others write.
var repaired = []string{"message.timestamp.type", "compression.type"}

// repair sets, on an existing topic, each repaired setting t's definition has
// and the topic lacks.
func (l Layout) repair(ctx context.Context, adm *kadm.Client, t Topic) error {
	var alter []kadm.AlterConfig
	for _, k := range repaired {
		want, ok := t.Configs[k]
		if !ok {
			continue
		}
		rs, err := adm.DescribeTopicConfigs(ctx, t.Name)
		if err != nil {
			return fmt.Errorf("topology: describing %s's configuration: %w", t.Name, err)
		}
		rc, err := rs.On(t.Name, nil)
		if err != nil || rc.Err != nil {
			return fmt.Errorf("topology: describing %s's configuration: %w", t.Name, errors.Join(err, rc.Err))
		}
		var have string
		for _, c := range rc.Configs {
			if c.Key == k && c.Value != nil {
				have = *c.Value
			}
		}
		if have != want {
			alter = append(alter, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kadm.StringPtr(want)})
		}
	}
	if len(alter) == 0 {
		return nil
	}
	rs, err := adm.AlterTopicConfigs(ctx, alter, t.Name)
	if err == nil {
		_, err = rs.On(t.Name, nil)
	}
	if err == nil {
		for _, r := range rs {
			err = errors.Join(err, r.Err)
		}
	}
	if err != nil {
		return fmt.Errorf("topology: setting %s on %s: %w", alter[0].Name, t.Name, err)
	}
	return nil
}

// String lists the layout's topics, one per line, for `chronos topics`.
func (l Layout) String() string {
	topics := l.Topics()
	sort.Slice(topics, func(i, j int) bool { return topics[i].Name < topics[j].Name })
	var b strings.Builder
	for _, t := range topics {
		fmt.Fprintf(&b, "%s\tpartitions=%d", t.Name, t.Partitions)
		keys := make([]string, 0, len(t.Configs))
		for k := range t.Configs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, " %s=%s", k, t.Configs[k])
		}
		b.WriteByte('\n')
	}
	return b.String()
}
