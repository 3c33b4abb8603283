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
