//go:build helm && adversary19c

package deploy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAdv19cHelmPartitionsNotPassedToPods breaks "Helm and the plain
// manifests agree" after the fix of TestAdv19cHelmResolutionMismatchRenders
// (5b33808: keda.resolutionMillis is now passed to the pods as
// CHRONOS_RESOLUTION): keda.partitions is still only compared with an
// extraEnv CHRONOS_PARTITIONS, never passed, so `--set keda.partitions=24`
// alone renders a ScaledObject for 24 partitions (maxReplicaCount 24,
// chronos-shard-triggers lagThreshold 120) next to pods that run with the
// default --partitions 12: on a fresh cluster they create 12-partition
// topics (12 pods idle at the top, and a stuck fan-out read at half its
// rate, a replica per 10 s instead of 5); against topics of 24 they refuse
// to start (topology: "has 24 partitions, want 12"). The check
// also refuses a CHRONOS_PARTITIONS taken from a ConfigMap (valueFrom:
// "CHRONOS_PARTITIONS=<nil>") whatever it holds.
//
//	CHRONOS_HELM=~/.cache/chronos-helm/v3.22.0/helm go test -tags 'helm adversary19c' -count=1 -v -run TestAdv19cHelm ./deploy/
func TestAdv19cHelmPartitionsNotPassedToPods(t *testing.T) {
	args := []string{"template", "r", chart, "--set", "keda.enabled=true", "--set", "keda.partitions=24"}
	out, err := helm(t, args...)
	if err != nil {
		return // refused: the pods' partitions are not known
	}
	docs := parseYAMLDocs(t, "helm "+strings.Join(args, " "), []byte(out))
	env := map[string]string{}
	for _, e := range list(get(kind(t, docs, "Deployment"), "spec", "template", "spec", "containers", 0, "env")) {
		env[str(get(e, "name"))] = str(get(e, "value"))
	}
	so := kind(t, docs, "ScaledObject")
	t.Logf("keda.partitions=24 rendered: maxReplicaCount %v, pods' CHRONOS_PARTITIONS %q (unset: 12)", get(so, "spec", "maxReplicaCount"), env["CHRONOS_PARTITIONS"])
	require.Equal(t, "24", env["CHRONOS_PARTITIONS"], "a ScaledObject for 24 partitions next to pods at the default 12")
}
