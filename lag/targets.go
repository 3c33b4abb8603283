package lag

import (
	"time"

	"github.com/chronos-scheduler/chronos/topology"
)

// Targets are the (group, topic) pairs of a Chronos system on layout l: the
// scheduler group's four inputs (the first is the shipped ScaledObject's
// Kafka trigger; the others are measured, not scaled on: advances and
// bucket triggers, continuations and one-shot completions, backfill steps
// paced by --backfill-rate), the clock group's and the router group's.
func Targets(l topology.Layout) []Target {
	s := string(l.SchedulerGroup())
	return []Target{
		{Group: s, Topic: string(l.Jobs())},
		FanoutTargets(l)[0],
		FanoutTargets(l)[1],
		BackfillTarget(l),
		{Group: string(l.ClockGroup()), Topic: string(l.Clock())},
		{Group: string(l.RouterGroup()), Topic: string(l.BucketTriggers())},
	}
}

// BackfillTarget is the scheduler group's backfill-step topic on layout l:
// about one step per backfill in progress is in flight, paced by
// --backfill-rate. Not a scaling trigger (B backfills at any rate keep
// about B steps in flight); also in Targets.
func BackfillTarget(l topology.Layout) Target {
	return Target{Group: string(l.SchedulerGroup()), Topic: string(l.SchedulerBackfill())}
}

// FanoutTargets are the scheduler group's fan-out inputs on layout l:
// chronos-shard-triggers (advances, bucket triggers) and the loopback
// (continuations, one-shot completions). Not scaling triggers (their lag is
// not fires being late: ScaledObjectFor); also in Targets.
func FanoutTargets(l topology.Layout) []Target {
	s := string(l.SchedulerGroup())
	return []Target{{Group: s, Topic: string(l.ShardTriggers())}, {Group: s, Topic: string(l.SchedulerLoop())}}
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
// replica to one per partition, the largest of one Kafka trigger and two
// prometheus triggers:
//   - chronos-jobs, lagThreshold CommandsPerReplica, activation 10, earliest (the group
//     starts at the oldest offset): commands waiting;
//   - LatenessQuery, threshold LatenessThreshold (FanoutSecondsPerReplica
//     at the default --resolution 1s; ScaledObjectAt): a replica per 5 s the
//     worst partition's watermark is behind the latest announced time its
//     pod consumed: the fan-out behind (slow, or a partition stuck while
//     its pod's others go on), whatever the records it leaves on the topics;
//   - FireRateQuery, threshold FiresPerReplica: a replica per 6,125 fires
//     a second, the count a steady load needs, so that once the backlog is
//     gone the HPA does not walk back down into it.
//
// No trigger watches chronos-shard-triggers or the loopback (adversary
// round 19c, issue 19): their Kafka lag is not fires being late. Bucket
// triggers go to every partition of the first, one-shot completions
// through the second, so an on-time system with many of either kept a lag
// over any fixed threshold; and advances wait there unconsumed during every
// rebalance and restore, so each scale step asked for more. The lateness
// gauge measures the fan-out in seconds and leaves restoring partitions
// out.
func ScaledObjectFor(l topology.Layout) ScaledObject { return ScaledObjectAt(l, time.Second) }

// CommandsPerReplica is the shipped chronos-jobs trigger's lagThreshold,
// the commands waiting per replica. The scheduler group commits its
// offsets once a second, so an on-time system holds about a second of its
// command rate as lag however fast it applies them: with 100 (the
// threshold until adversary round 19g), 600 puts a second, each applied
// within 0.1 s, asked for up to 4 replicas. 1,000 is the command rate one
// replica is asked to carry in steady state (a pod applies several
// thousand a second at its 0.5-core request, docs/performance.md), and a
// burst of N commands still asks for ceil(N / 1,000).
const CommandsPerReplica = 1000

// ScaledObjectAt is ScaledObjectFor for pods at clock resolution res
// (--resolution; 0 or less: 1 s, where it is ScaledObjectFor): the lateness
// threshold is LatenessThreshold(res), so that an idle system asks for the
// minimum at any resolution.
func ScaledObjectAt(l topology.Layout, res time.Duration) ScaledObject {
	s := string(l.SchedulerGroup())
	p := int64(l.Partitions)
	if p <= 0 {
		p = int64(topology.DefaultPartitions)
	}
	return ScaledObject{MinReplicas: 1, MaxReplicas: p, Triggers: []KafkaTrigger{
		{Group: s, Topic: string(l.Jobs()), LagThreshold: CommandsPerReplica, ActivationLagThreshold: 10, Policy: Earliest},
	}, Lateness: &PrometheusTrigger{Query: LatenessQuery, Threshold: LatenessThreshold(res)},
		FireRate: &PrometheusTrigger{Query: FireRateQuery, Threshold: FiresPerReplica}}
}
