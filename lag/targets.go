package lag

import (
	"time"

	"github.com/chronos-scheduler/chronos/topology"
)

// Targets are the (group, topic) pairs of a Chronos system on layout l: the
// scheduler group's four inputs (the first three are the shipped
// ScaledObject's Kafka triggers; the backfill topic's lag is backfill steps
// in flight, paced by --backfill-rate, which no trigger watches), the clock
// group's and the router group's.
func Targets(l topology.Layout) []Target {
	s := string(l.SchedulerGroup())
	return []Target{
		{Group: s, Topic: string(l.Jobs())},
		{Group: s, Topic: string(l.ShardTriggers())},
		{Group: s, Topic: string(l.SchedulerLoop())},
		BackfillTarget(l),
		{Group: string(l.ClockGroup()), Topic: string(l.Clock())},
		{Group: string(l.RouterGroup()), Topic: string(l.BucketTriggers())},
	}
}

// BackfillTarget is the scheduler group's backfill-step topic on layout l:
// about one step per backfill in progress is in flight, paced by
// --backfill-rate. Not a scaling trigger (the loopback was, and B backfills
// at any rate asked for B / 100 replicas there); also in Targets.
func BackfillTarget(l topology.Layout) Target {
	return Target{Group: string(l.SchedulerGroup()), Topic: string(l.SchedulerBackfill())}
}

// HistoryTargets are the history group's inputs on layout l (issue 13):
// dispatch events, results and commands. Not a scaling trigger: the
// history group is off the fire path, its lag is how far behind the fire
// and change history is.
func HistoryTargets(l topology.Layout) []Target {
	h := string(l.HistoryGroup())
	return []Target{{Group: h, Topic: string(l.Dispatch())}, {Group: h, Topic: string(l.Results())}, {Group: h, Topic: string(l.Jobs())}}
}

// ExecutorTargets are executors' consumer groups on l's dispatch topic.
func ExecutorTargets(l topology.Layout, groups []string) []Target {
	out := make([]Target, len(groups))
	for i, g := range groups {
		out[i] = Target{Group: g, Topic: string(l.Dispatch())}
	}
	return out
}

// ScaledObjectFor is the ScaledObject deploy/kubernetes/keda-scaledobject.yaml
// ships for the chronos Deployment on layout l (a test keeps the two equal
// for the default 12 partitions; l.Partitions 0 means that default): 1
// replica to one per partition, the largest of three Kafka triggers on the
// scheduler group, all earliest (the group starts at the oldest offset),
// and a prometheus trigger on the fan-out's lateness:
//   - chronos-jobs, lagThreshold 100, activation 10: commands waiting;
//   - chronos-shard-triggers, lagThreshold FanoutSecondsPerReplica times
//     the partitions (at the default --resolution 1s; ScaledObjectAt): "advance to T" messages waiting, one per partition
//     per second a stuck fan-out is behind (idle: up to about one per
//     partition in flight, under the threshold whatever the partitions);
//   - the loopback, lagThreshold 100: fan-out continuations and one-shot
//     completions waiting behind a busy partition (backfill steps have
//     their own topic, which no trigger watches: B backfills keep about B
//     steps in flight whatever their rate);
//   - LatenessQuery, threshold FanoutSecondsPerReplica: a replica per 5 s
//     the worst partition's watermark is behind the latest announced time
//     its pod consumed: a fan-out merely slow (which none of the lags
//     shows), or a partition behind its peers;
//   - FireRateQuery, threshold FiresPerReplica: a replica per 6,125 fires
//     a second, the count a steady load needs, so that once the backlog is
//     gone the HPA does not walk back down into it.
func ScaledObjectFor(l topology.Layout) ScaledObject { return ScaledObjectAt(l, time.Second) }

// ScaledObjectAt is ScaledObjectFor for pods at clock resolution res
// (--resolution; 0 or less: 1 s, where it is ScaledObjectFor): the lateness
// threshold is LatenessThreshold(res) and the chronos-shard-triggers
// lagThreshold ShardTriggerLagThreshold(partitions, res), so that an idle
// system asks for the minimum at any resolution.
func ScaledObjectAt(l topology.Layout, res time.Duration) ScaledObject {
	s := string(l.SchedulerGroup())
	p := int64(l.Partitions)
	if p <= 0 {
		p = int64(topology.DefaultPartitions)
	}
	return ScaledObject{MinReplicas: 1, MaxReplicas: p, Triggers: []KafkaTrigger{
		{Group: s, Topic: string(l.Jobs()), LagThreshold: 100, ActivationLagThreshold: 10, Policy: Earliest},
		{Group: s, Topic: string(l.ShardTriggers()), LagThreshold: ShardTriggerLagThreshold(p, res), Policy: Earliest},
		{Group: s, Topic: string(l.SchedulerLoop()), LagThreshold: 100, Policy: Earliest},
	}, Lateness: &PrometheusTrigger{Query: LatenessQuery, Threshold: LatenessThreshold(res)},
		FireRate: &PrometheusTrigger{Query: FireRateQuery, Threshold: FiresPerReplica}}
}
