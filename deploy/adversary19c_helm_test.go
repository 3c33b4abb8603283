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

// TestAdv19cHelmRendersScaledObjectsKEDARefuses breaks "Helm and the plain
// manifests agree" at the edges of the values: the chart refuses
// keda.minReplicaCount 0 and a maxReplicaCount over the partitions, but
// renders, without a word, ScaledObjects that KEDA refuses or that do not
// scale as the values say: keda.partitions 0 (maxReplicaCount 0 under
// minReplicaCount 1, shard-trigger lagThreshold "0"), minReplicaCount 13
// over maxReplicaCount 12, lagThreshold or firesPerReplica 0 or
// loopLagThreshold -5 (thresholds lag.ParseKafkaTrigger and
// lag.ParsePrometheusTrigger refuse, as KEDA does), and a
// fanoutSecondsPerReplica of 2.5 truncated to 2 (lateness threshold 2,
// shard-trigger lagThreshold 24 instead of 2.5 and 30).
//
//	CHRONOS_HELM=~/.cache/chronos-helm/v3.22.0/helm go test -tags 'helm adversary19c' -count=1 -v -run TestAdv19cHelm ./deploy/
func TestAdv19cHelmRendersScaledObjectsKEDARefuses(t *testing.T) {
	var bad []string
	for _, set := range []string{"keda.partitions=0", "keda.minReplicaCount=13", "keda.lagThreshold=0",
		"keda.loopLagThreshold=-5", "keda.firesPerReplica=0", "keda.fanoutSecondsPerReplica=2.5"} {
		args := []string{"template", "r", chart, "--set", "keda.enabled=true", "--set", set}
		out, err := helm(t, args...)
		if err != nil {
			continue // refused
		}
		so := kind(t, parseYAMLDocs(t, "helm "+strings.Join(args, " "), []byte(out)), "ScaledObject")
		minR, maxR := get(so, "spec", "minReplicaCount").(int), get(so, "spec", "maxReplicaCount").(int)
		var problems []string
		if minR > maxR || maxR < 1 {
			problems = append(problems, fmt.Sprintf("minReplicaCount %d, maxReplicaCount %d", minR, maxR))
		}
		for _, tr := range list(get(so, "spec", "triggers")) {
			md := map[string]string{}
			for k, v := range dict(get(tr, "metadata")) {
				md[k], _ = v.(string)
			}
			var err error
			switch str(get(tr, "type")) {
			case "kafka":
				_, err = lag.ParseKafkaTrigger(md)
			case "prometheus":
				var pt lag.PrometheusTrigger
				mt, _ := get(tr, "metricType").(string)
				pt, err = lag.ParsePrometheusTrigger(mt, md)
				if err == nil && strings.Contains(pt.Query, lag.LatenessMetric) && set == "keda.fanoutSecondsPerReplica=2.5" && pt.Threshold != 2.5 {
					err = fmt.Errorf("lateness threshold %g, want 2.5", pt.Threshold)
				}
			}
			if err != nil {
				problems = append(problems, err.Error())
			}
		}
		if len(problems) > 0 {
			t.Logf("--set %s rendered: %s", set, strings.Join(problems, "; "))
			bad = append(bad, set)
		}
	}
	require.Empty(t, bad, "values rendered into ScaledObjects KEDA refuses or that do not scale as set")
}
