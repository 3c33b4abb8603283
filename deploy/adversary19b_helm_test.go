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

// TestAdv19bHelmPrometheusTriggersSeeOtherReleases breaks "with a topic
// prefix the pods and the trigger agree on the names" (TestHelmOptions) for
// the two Prometheus triggers: two releases of the chart on one cluster and
// one Prometheus (prod, and staging with topicPrefix=staging., in their own
// namespaces: what topicPrefix is for) render the same unscoped queries, so
// each release's lateness trigger scales on the other's worst partition
// and its fire-rate trigger on the sum of both systems' fires. The chart
// knows the release and its namespace but adds no matcher; only
// docs/operations.md says to add one.
func TestAdv19bHelmPrometheusTriggersSeeOtherReleases(t *testing.T) {
	queries := func(release string, set ...string) []string {
		var qs []string
		for _, tr := range list(get(kind(t, render(t, release, append([]string{"keda.enabled=true", "serviceMonitor.enabled=true"}, set...)...), "ScaledObject"), "spec", "triggers")) {
			if str(get(tr, "type")) == "prometheus" {
				qs = append(qs, str(get(tr, "metadata", "query")))
			}
		}
		return qs
	}
	prod, staging := queries("prod"), queries("staging", "topicPrefix=staging.")
	for i := range prod {
		assert.NotEqual(t, prod[i], staging[i], "release prod and release staging (topicPrefix=staging.) read the same series")
	}
}

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
