//go:build helm && adversary19b

package deploy

// Adversary round 19b on issue 19: the chart's ScaledObject against the
// pods it scales.
//
//	CHRONOS_HELM=~/.cache/chronos-helm/v3.22.0/helm go test -tags 'helm adversary19b' -count=1 -v -run TestAdv19bHelm ./deploy/

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAdv19bHelmPartitionsNotThePods breaks "partitions must be the pods'
// --partitions" (values.yaml, docs/deploy.md) by not checking it: the chart
// sets no CHRONOS_PARTITIONS from keda.partitions and renders a pod with
// CHRONOS_PARTITIONS=48 in extraEnv next to a ScaledObject for 12 (the
// shard-trigger lagThreshold 60, maxReplicaCount 12): an idle 48-partition
// system has 48-96 advances in flight (asks for 1-2), and 36 partitions are
// never spread.
func TestAdv19bHelmPartitionsNotThePods(t *testing.T) {
	out, err := helm(t, "template", "sched", chart, "--set", "keda.enabled=true",
		"--set", "extraEnv[0].name=CHRONOS_PARTITIONS", "--set-string", "extraEnv[0].value=48")
	assert.Error(t, err, "the chart rendered a 48-partition pod with a ScaledObject for keda.partitions=12 (lagThreshold 60 on chronos-shard-triggers: %t, maxReplicaCount 12: %t)",
		strings.Contains(out, `lagThreshold: "60"`), strings.Contains(out, "maxReplicaCount: 12"))
}
