package lag

import "github.com/chronos-scheduler/chronos/topology"

// Targets are the (group, topic) pairs of a Chronos system on layout l: the
// scheduler group's three inputs (its first, the jobs topic, is the one
// KEDA watches), the clock group's and the router group's.
func Targets(l topology.Layout) []Target {
	s := string(l.SchedulerGroup())
	return []Target{
		{Group: s, Topic: string(l.Jobs())},
		{Group: s, Topic: string(l.ShardTriggers())},
		{Group: s, Topic: string(l.SchedulerLoop())},
		{Group: string(l.ClockGroup()), Topic: string(l.Clock())},
		{Group: string(l.RouterGroup()), Topic: string(l.BucketTriggers())},
	}
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
// ships for the chronos Deployment on layout l (a test keeps the two
// equal): 1 to 12 replicas, the largest of three Kafka triggers on the
// scheduler group, all earliest (the group starts at the oldest offset):
//   - chronos-jobs, lagThreshold 100, activation 10: commands waiting;
//   - chronos-shard-triggers, lagThreshold 20: "advance to T" messages
//     waiting, about one per partition per clock resolution (1 s) the
//     fan-out is behind, so a backlog here is fires getting late;
//   - the loopback, lagThreshold 100: fan-out continuations and one-shot
//     completions waiting behind a busy partition.
func ScaledObjectFor(l topology.Layout) ScaledObject {
	s := string(l.SchedulerGroup())
	return ScaledObject{MinReplicas: 1, MaxReplicas: 12, Triggers: []KafkaTrigger{
		{Group: s, Topic: string(l.Jobs()), LagThreshold: 100, ActivationLagThreshold: 10, Policy: Earliest},
		{Group: s, Topic: string(l.ShardTriggers()), LagThreshold: 20, Policy: Earliest},
		{Group: s, Topic: string(l.SchedulerLoop()), LagThreshold: 100, Policy: Earliest},
	}}
}
