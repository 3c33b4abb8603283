//go:build helm && adversary19c

package deploy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/lag"
)

// TestAdv19cHelmResolutionMismatchRenders breaks "Helm and the plain
// manifests agree" and "an idle system asks for the minimum at any
// resolution" (values.yaml keda.resolutionMillis: "the pods' --resolution
// ... so that an idle system asks for minReplicaCount at any resolution").
// The chart refuses a CHRONOS_PARTITIONS in extraEnv that differs from
// keda.partitions (adversary 19b), but the pods' --resolution can only be
// set the same way (extraEnv CHRONOS_RESOLUTION: the chart has no value
// for it) and a CHRONOS_RESOLUTION that differs from keda.resolutionMillis
// renders, with the thresholds of 1 s. At 50ms that is the idle system of
// TestFineResolutionIdleAsksForTheMinimum with the thresholds it was fixed
// away from (adversary 19b measured 75% of idle samples asking for 4 of 4
// replicas: chronos-shard-triggers lagThreshold 60 against 1,200); at 20s
// an idle partition's lateness saws to 20 s against a threshold of 5 (4
// replicas) instead of 40.
//
//	CHRONOS_HELM=~/.cache/chronos-helm/v3.22.0/helm go test -tags 'helm adversary19c' -count=1 -v -run TestAdv19cHelm ./deploy/
func TestAdv19cHelmResolutionMismatchRenders(t *testing.T) {
	var bad []string
	for _, c := range []struct {
		env string
		res time.Duration
	}{{"50ms", 50 * time.Millisecond}, {"20s", 20 * time.Second}} {
		args := []string{"template", "r", chart, "--set", "keda.enabled=true",
			"--set", "extraEnv[0].name=CHRONOS_RESOLUTION", "--set", "extraEnv[0].value=" + c.env}
		out, err := helm(t, args...)
		if err != nil {
			continue // refused: what the chart does for CHRONOS_PARTITIONS
		}
		docs := parseYAMLDocs(t, "helm "+strings.Join(args, " "), []byte(out))
		so := scaledObject(t, kind(t, docs, "ScaledObject"))
		var shardLag int64
		for _, tr := range so.Triggers {
			if strings.HasSuffix(tr.Topic, "chronos-shard-triggers") {
				shardLag = tr.LagThreshold
			}
		}
		require.NotNil(t, so.Lateness)
		wantLag, wantLate := lag.ShardTriggerLagThreshold(12, c.res), lag.LatenessThreshold(c.res)
		t.Logf("CHRONOS_RESOLUTION=%s rendered: shard-trigger lagThreshold %d (for %s: %d), lateness threshold %g (for %s: %g)",
			c.env, shardLag, c.env, wantLag, so.Lateness.Threshold, c.env, wantLate)
		if shardLag != wantLag || so.Lateness.Threshold != wantLate {
			bad = append(bad, fmt.Sprintf("pods at --resolution %s next to a ScaledObject for 1 s rendered without complaint (lagThreshold %d, want %d; lateness %g, want %g)",
				c.env, shardLag, wantLag, so.Lateness.Threshold, wantLate))
		}
	}
	require.Empty(t, bad)
}
