package deploytest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/topology"
)

// ScaledObject reads a ScaledObject manifest as KEDA does: its bounds, its
// Kafka triggers and its lateness (prometheus) trigger; any other trigger
// fails the test (lag.ScaledObject would not evaluate it).
func ScaledObject(t *testing.T, so map[string]any) lag.ScaledObject {
	t.Helper()
	out := lag.ScaledObject{MinReplicas: int64(Get(so, "spec", "minReplicaCount").(int)), MaxReplicas: int64(Get(so, "spec", "maxReplicaCount").(int))}
	for _, tr := range List(Get(so, "spec", "triggers")) {
		md := map[string]string{}
		for k, v := range Dict(Get(tr, "metadata")) {
			require.IsType(t, "", v, "trigger metadata %s: KEDA takes strings", k)
			md[k] = v.(string)
		}
		switch typ := Str(Get(tr, "type")); typ {
		case "kafka":
			kt, err := lag.ParseKafkaTrigger(md)
			require.NoError(t, err)
			out.Triggers = append(out.Triggers, kt)
		case "prometheus":
			mt, _ := Get(tr, "metricType").(string)
			pt, err := lag.ParsePrometheusTrigger(mt, md)
			require.NoError(t, err)
			switch {
			case strings.Contains(pt.Query, lag.LatenessMetric):
				require.Nil(t, out.Lateness, "one lateness trigger")
				out.Lateness = &pt
			case strings.Contains(pt.Query, "chronos_fires_total"):
				require.Nil(t, out.FireRate, "one fire-rate trigger")
				out.FireRate = &pt
			default:
				t.Fatalf("prometheus query %s: not evaluated by lag.ScaledObject", pt.Query)
			}
		default:
			t.Fatalf("trigger type %s: not evaluated by lag.ScaledObject", typ)
		}
	}
	return out
}

// ShippedScaledObject is the ScaledObject of
// deploy/kubernetes/keda-scaledobject.yaml aimed at the chronos Deployment.
func ShippedScaledObject(t *testing.T) map[string]any {
	t.Helper()
	for _, d := range YAMLDocs(t, "deploy/kubernetes/keda-scaledobject.yaml") {
		if Str(Get(d, "spec", "scaleTargetRef", "name")) == "chronos" {
			return d
		}
	}
	t.Fatal("deploy/kubernetes/keda-scaledobject.yaml: no ScaledObject for the chronos Deployment")
	return nil
}

// ShippedFor is the shipped ScaledObject for env's partitions and prefix:
// lag.ScaledObjectFor(env.Layout), after checking the manifest is
// lag.ScaledObjectFor of the default layout it is written for.
func ShippedFor(t *testing.T, env *testenv.Env) lag.ScaledObject {
	t.Helper()
	require.Equal(t, lag.ScaledObjectFor(topology.Layout{}), ScaledObject(t, ShippedScaledObject(t)), "the manifest is ScaledObjectFor(12 partitions)")
	return lag.ScaledObjectFor(env.Layout)
}

// Admin is an admin client on env with its own metadata cache (env.Client's
// saw the topics missing).
func Admin(t *testing.T, env *testenv.Env) *kadm.Client {
	t.Helper()
	cl, err := env.Kafka.NewKgo()
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// Measure is the lag of so's Kafka triggers now.
func Measure(t *testing.T, adm *kadm.Client, so lag.ScaledObject) []lag.Partition {
	t.Helper()
	var parts []lag.Partition
	testenv.Eventually(t, 60*time.Second, func() (err error) { // a fresh broker's coordinator may not be up yet
		parts, err = lag.Measure(context.Background(), adm, lag.Earliest, so.Targets()...)
		return err
	})
	return parts
}

// ByTopic is each verdict's lag by its trigger's topic without env's
// prefix.
func ByTopic(env *testenv.Env, verdicts []lag.Verdict) map[string]int64 {
	out := map[string]int64{}
	for _, v := range verdicts {
		out[strings.TrimPrefix(v.Trigger.Topic, env.Layout.Prefix)] = v.Lag
	}
	return out
}

// WaitWatermarks waits until insts together own every partition and each
// owned partition's watermark is want (zero want: any completed advance).
func WaitWatermarks(t *testing.T, partitions int, want time.Time, insts ...*testenv.Instance) {
	t.Helper()
	testenv.Eventually(t, 60*time.Second, func() error {
		n := 0
		for _, in := range insts {
			for p, w := range in.Scheduler().Watermarks() {
				if want.IsZero() && w.IsZero() {
					return fmt.Errorf("partition %d has no watermark yet", p)
				}
				if !want.IsZero() && !w.Equal(want) {
					return fmt.Errorf("partition %d watermark %s, want %s", p, w, want)
				}
				n++
			}
		}
		if n != partitions {
			return fmt.Errorf("%d of %d partitions owned and recovered", n, partitions)
		}
		return nil
	})
}

// PutBigJobs registers jobs job-000000... every 24h with a 1 KB payload,
// commands produced in batches of 1,000 stamped at.
func PutBigJobs(env *testenv.Env, jobs int, at time.Time) {
	payload := []byte(`{"blob":"` + strings.Repeat("x", 1000) + `"}`)
	for i := 0; i < jobs; i += 1000 {
		keys, vals := make([]string, min(1000, jobs-i)), make([][]byte, min(1000, jobs-i))
		for k := range keys {
			keys[k] = fmt.Sprintf("job-%06d", i+k)
			vals[k] = testenv.PutCommand(keys[k], codecs.JobDef{Every: "24h", Payload: payload})
		}
		env.ProduceMany(string(env.Layout.Jobs()), keys, vals, at)
	}
}
