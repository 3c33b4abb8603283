//go:build adversary19

// Adversary tests for issue 19 (autoscaling). They fail on purpose while
// the promise they name is broken. Run:
//
//	go test -count=1 -tags adversary19 -run Adversary19 ./lag/
package lag_test

import (
	"testing"

	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/topology"
)

// TestAdversary19IdleFanOutAsksForOneReplica: the shipped ScaledObject's
// fan-out trigger (keda-scaledobject.yaml: "Up to one advance per partition
// is in flight in steady state (12 < 20)") promises that a system whose
// fires are on time asks for minReplicaCount. That holds only for
// partitions <= lagThreshold (20): with --partitions 48 (Helm values and
// ScaledObjectFor keep fanoutLagThreshold 20 and maxReplicaCount 12 whatever
// the partition count) one in-flight advance per partition, every second,
// asks for 3 replicas while nothing is late; KEDA samples either 0 or 48
// depending on the phase of its poll against the clock tick, and the
// 300 s scale-down window keeps the maximum.
func TestAdversary19IdleFanOutAsksForOneReplica(t *testing.T) {
	for _, partitions := range []int32{4, 12, 24, 48} {
		l := topology.Layout{Partitions: partitions}
		so := lag.ScaledObjectFor(l)
		var parts []lag.Partition
		for _, tr := range so.Triggers {
			for p := range partitions {
				var lg int64
				if tr.Topic == string(l.ShardTriggers()) {
					lg = 1 // the advance of this second, not yet committed
				}
				parts = append(parts, lag.Partition{Group: tr.Group, Topic: tr.Topic, Partition: p, Lag: lg})
			}
		}
		got, _ := so.Replicas(parts, 1)
		if got != so.Bound(so.MinReplicas) {
			t.Errorf("%d partitions, every fire on time (one advance in flight per partition): ScaledObject asks for %d replicas, want minReplicaCount %d",
				partitions, got, so.MinReplicas)
		}
		if so.MaxReplicas > int64(partitions) {
			t.Errorf("%d partitions: ScaledObjectFor caps at (chronos lag --partitions N too: --max-replica-count defaults to 12) %d replicas (manifest: maxReplicaCount is at most the partition count)", partitions, so.MaxReplicas)
		}
	}
}
