//go:build helm

package deploy

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/deploy/deploytest"
	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/topology"
)

// The Helm chart deploy/helm/chronos, rendered by a real helm binary
// (CHRONOS_HELM, else helm on PATH; .ci/run installs v3.22.0 from its Go
// module). Build tag "helm": `go test ./...` does not need helm. Without
// helm these tests fail (a skip would hide a broken CI):
//
//	go install helm.sh/helm/v3/cmd/helm@v3.22.0
//	go test -tags helm -count=1 -run Helm ./deploy/

const chart = "deploy/helm/chronos"

func helmBin(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("CHRONOS_HELM"); h != "" {
		return h
	}
	h, err := exec.LookPath("helm")
	require.NoError(t, err, "no helm: set CHRONOS_HELM or put helm on PATH (go install helm.sh/helm/v3/cmd/helm@v3.22.0)")
	return h
}

// helm runs helm in the repository root and returns its output.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmBin(t), args...)
	cmd.Dir = deploytest.Root
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// render is `helm template RELEASE chart --set ...`, decoded.
func render(t *testing.T, release string, set ...string) []map[string]any {
	t.Helper()
	args := []string{"template", release, chart}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := helm(t, args...)
	require.NoError(t, err, "helm %s:\n%s", strings.Join(args, " "), out)
	return deploytest.ParseYAMLDocs(t, "helm "+strings.Join(args, " "), []byte(out))
}

func kinds(docs []map[string]any) []string {
	var ks []string
	for _, d := range docs {
		ks = append(ks, deploytest.Str(d["kind"]))
	}
	slices.Sort(ks)
	return ks
}

// withoutKeys returns a deep copy of a decoded value without the given map
// keys at any depth.
func withoutKeys(v any, keys ...string) any {
	switch x := v.(type) {
	case map[string]any:
		m := map[string]any{}
		for k, e := range x {
			if !slices.Contains(keys, k) {
				m[k] = withoutKeys(e, keys...)
			}
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = withoutKeys(e, keys...)
		}
		return l
	}
	return v
}

func TestHelmLint(t *testing.T) {
	for _, set := range [][]string{
		nil,
		{"keda.enabled=true", "serviceMonitor.enabled=true", "apiTokens.tokens=x", "topicPrefix=staging."},
	} {
		args := []string{"lint", "--strict", chart}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		out, err := helm(t, args...)
		require.NoError(t, err, "helm %s:\n%s", strings.Join(args, " "), out)
		require.Contains(t, out, "1 chart(s) linted, 0 chart(s) failed")
	}
}

// TestHelmMatchesManifests renders the chart with its defaults under the
// release name chronos and checks it as deploy/kubernetes/chronos.yaml is
// checked, and equal to it except for labels, the pull policy and the
// Secret's item list.
func TestHelmMatchesManifests(t *testing.T) {
	docs := render(t, "chronos")
	require.Equal(t, []string{"Deployment", "PodDisruptionBudget", "Service"}, kinds(docs))
	checkKubernetes(t, "helm template chronos "+chart, docs)

	plain := deploytest.YAMLDocs(t, "deploy/kubernetes/chronos.yaml")
	for _, k := range []string{"Deployment", "Service", "PodDisruptionBudget"} {
		require.Equal(t, "chronos", deploytest.Str(deploytest.Get(kind(t, docs, k), "metadata", "name")), k)
	}
	hd, pd := kind(t, docs, "Deployment"), kind(t, plain, "Deployment")
	require.Equal(t, deploytest.Get(pd, "spec", "replicas"), deploytest.Get(hd, "spec", "replicas"))
	require.Equal(t, deploytest.Get(pd, "spec", "strategy"), deploytest.Get(hd, "spec", "strategy"))
	require.Equal(t, deploytest.Get(pd, "spec", "template", "metadata", "annotations"), deploytest.Get(hd, "spec", "template", "metadata", "annotations"))
	// The pod spec, field for field: probes, resources, GOMEMLIMIT, security
	// contexts, volumes, the grace period.
	require.Equal(t,
		withoutKeys(deploytest.Get(pd, "spec", "template", "spec"), "imagePullPolicy", "items"),
		withoutKeys(deploytest.Get(hd, "spec", "template", "spec"), "imagePullPolicy", "items"))
	// The chart picks the tokens file by key; the plain Secret has key "tokens".
	require.Equal(t, []any{map[string]any{"key": "tokens", "path": "tokens"}},
		deploytest.Get(hd, "spec", "template", "spec", "volumes", 2, "secret", "items"))

	hs, ps := kind(t, docs, "Service"), kind(t, plain, "Service")
	require.Equal(t, deploytest.Get(ps, "spec", "ports"), deploytest.Get(hs, "spec", "ports"))
	hp, pp := kind(t, docs, "PodDisruptionBudget"), kind(t, plain, "PodDisruptionBudget")
	require.Equal(t, deploytest.Get(pp, "spec", "maxUnavailable"), deploytest.Get(hp, "spec", "maxUnavailable"))
	require.Equal(t, deploytest.Dict(deploytest.Get(hd, "spec", "selector", "matchLabels")), deploytest.Dict(deploytest.Get(hp, "spec", "selector", "matchLabels")))
}

// TestHelmOptions renders the chart with KEDA, the ServiceMonitor and a
// tokens file from values, under another release name and a topic prefix.
func TestHelmOptions(t *testing.T) {
	tokens := "# made with chronos tokens new\nops admin * sha256:0123\n"
	docs := render(t, "sched", "keda.enabled=true", "serviceMonitor.enabled=true",
		"apiTokens.tokens="+tokens, "apiTokens.key=file")
	require.Equal(t, []string{"Deployment", "PodDisruptionBudget", "ScaledObject", "Secret", "Service", "ServiceMonitor"}, kinds(docs))
	checkKubernetes(t, "helm template sched (options)", docs)
	dep := kind(t, docs, "Deployment")
	name := deploytest.Str(deploytest.Get(dep, "metadata", "name"))
	require.Equal(t, "sched-chronos", name)
	require.Nil(t, deploytest.Get(dep, "spec", "replicas"), "with KEDA the Deployment sets no replica count (an upgrade would reset KEDA's)")

	// The Secret from values is the one the pods mount, under the key asked.
	sec := kind(t, docs, "Secret")
	require.Equal(t, tokens, deploytest.Str(deploytest.Get(sec, "stringData", "file")))
	vol := deploytest.Get(dep, "spec", "template", "spec", "volumes", 2, "secret")
	require.Equal(t, deploytest.Str(deploytest.Get(sec, "metadata", "name")), deploytest.Str(deploytest.Get(vol, "secretName")))
	require.Equal(t, []any{map[string]any{"key": "file", "path": "tokens"}}, deploytest.Get(vol, "items"))
	require.NotEmpty(t, deploytest.Get(dep, "spec", "template", "metadata", "annotations", "checksum/api-tokens"))

	// The ScaledObject is the plain one, aimed at this Deployment.
	so := kind(t, docs, "ScaledObject")
	var plainSO map[string]any
	for _, d := range deploytest.YAMLDocs(t, "deploy/kubernetes/keda-scaledobject.yaml") {
		if deploytest.Str(deploytest.Get(d, "spec", "scaleTargetRef", "name")) == "chronos" {
			plainSO = d
		}
	}
	require.NotNil(t, plainSO)
	require.Equal(t, name, deploytest.Str(deploytest.Get(so, "spec", "scaleTargetRef", "name")))
	// but for the Prometheus queries, which the chart scopes to the release
	// (adversary round 19b: two releases on one Prometheus scaled on each
	// other's series).
	require.Equal(t, withoutKeys(deploytest.Get(plainSO, "spec"), "scaleTargetRef", "query"), withoutKeys(deploytest.Get(so, "spec"), "scaleTargetRef", "query"))
	require.Equal(t, scoped(lag.ScaledObjectFor(topology.Layout{}), "sched"), deploytest.ScaledObject(t, so))
	requireKEDAVersion(t, so)

	// With a topic prefix the pods and the trigger agree on the names.
	prefixed := render(t, "sched", "keda.enabled=true", "topicPrefix=staging.")
	env := map[string]string{}
	for _, e := range deploytest.List(deploytest.Get(kind(t, prefixed, "Deployment"), "spec", "template", "spec", "containers", 0, "env")) {
		env[deploytest.Str(deploytest.Get(e, "name"))] = deploytest.Str(deploytest.Get(e, "value"))
	}
	require.Equal(t, "staging.", env["CHRONOS_TOPIC_PREFIX"])
	var topics []string
	for _, tr := range deploytest.List(deploytest.Get(kind(t, prefixed, "ScaledObject"), "spec", "triggers")) {
		if deploytest.Str(deploytest.Get(tr, "type")) != "kafka" {
			continue
		}
		md := deploytest.Dict(deploytest.Get(tr, "metadata"))
		require.Equal(t, "staging.chronos-scheduler", md["consumerGroup"])
		topics = append(topics, deploytest.Str(md["topic"]))
	}
	require.Equal(t, []string{"staging.chronos-jobs"}, topics)

	// With --partitions 48 the cap follows: the ScaledObject is
	// lag.ScaledObjectFor of that layout. Without Prometheus, no lateness
	// trigger.
	wide := deploytest.ScaledObject(t, kind(t, render(t, "sched", "keda.enabled=true", "keda.partitions=48"), "ScaledObject"))
	require.Equal(t, scoped(lag.ScaledObjectFor(topology.Layout{Partitions: 48}), "sched"), wide)
	agreed := deploytest.ScaledObject(t, kind(t, render(t, "sched", "keda.enabled=true", "keda.partitions=48",
		"extraEnv[0].name=CHRONOS_PARTITIONS", "extraEnv[0].value=48"), "ScaledObject"))
	require.Equal(t, wide, agreed, "pods and ScaledObject agree on 48 partitions")
	require.Equal(t, []string{"48"}, envValues(t, render(t, "sched", "keda.enabled=true", "keda.partitions=48",
		"extraEnv[0].name=CHRONOS_PARTITIONS", "extraEnv[0].value=48"), "CHRONOS_PARTITIONS"), "the chart adds no second CHRONOS_PARTITIONS")
	// Adversary round 19c: keda.partitions alone rendered a ScaledObject
	// for 24 next to pods at the default 12.
	require.Equal(t, []string{"24"}, envValues(t, render(t, "sched", "keda.enabled=true", "keda.partitions=24"), "CHRONOS_PARTITIONS"))
	// keda.resolutionMillis: the lateness threshold follows the pods' --resolution
	// as lag.ScaledObjectAt makes them (adversary round 19b: an idle system
	// at 20s or 50ms asked for more replicas).
	// The chart passes the same resolution to the pods (adversary round
	// 19c: pods set through extraEnv drifted from the thresholds).
	for _, ms := range []int{10, 50, 1000, 2700, 20000, 60000} {
		docs := render(t, "sched", "keda.enabled=true", "keda.partitions=48", fmt.Sprintf("keda.resolutionMillis=%d", ms))
		got := deploytest.ScaledObject(t, kind(t, docs, "ScaledObject"))
		require.Equal(t, scoped(lag.ScaledObjectAt(topology.Layout{Partitions: 48}, time.Duration(ms)*time.Millisecond), "sched"), got, "resolutionMillis %d", ms)
		var res []string
		for _, e := range deploytest.List(deploytest.Get(kind(t, docs, "Deployment"), "spec", "template", "spec", "containers", 0, "env")) {
			if deploytest.Str(deploytest.Get(e, "name")) == "CHRONOS_RESOLUTION" {
				res = append(res, deploytest.Str(deploytest.Get(e, "value")))
			}
		}
		require.Len(t, res, 1, "resolutionMillis %d: one CHRONOS_RESOLUTION in the pods", ms)
		require.Equal(t, []string{"48"}, envValues(t, docs, "CHRONOS_PARTITIONS"), "the pods' --partitions is the ScaledObject's")
		d, err := time.ParseDuration(res[0])
		require.NoError(t, err)
		require.Equal(t, time.Duration(ms)*time.Millisecond, d, "the pods' --resolution is the thresholds'")
	}
	noProm := deploytest.ScaledObject(t, kind(t, render(t, "sched", "keda.enabled=true", "keda.prometheusServerAddress="), "ScaledObject"))
	require.Nil(t, noProm.Lateness)
	require.Nil(t, noProm.FireRate)
	require.Len(t, noProm.Triggers, 1)

	// The ServiceMonitor selects the Service and scrapes its named port.
	sm, svc := kind(t, docs, "ServiceMonitor"), kind(t, docs, "Service")
	sel := deploytest.Dict(deploytest.Get(sm, "spec", "selector", "matchLabels"))
	require.NotEmpty(t, sel)
	labels := deploytest.Dict(deploytest.Get(svc, "metadata", "labels"))
	for k, v := range sel {
		require.Equal(t, v, labels[k], "ServiceMonitor selector %s", k)
	}
	var portNames []string
	for _, p := range deploytest.List(deploytest.Get(svc, "spec", "ports")) {
		portNames = append(portNames, deploytest.Str(deploytest.Get(p, "name")))
	}
	require.Contains(t, portNames, deploytest.Str(deploytest.Get(sm, "spec", "endpoints", 0, "port")))
	require.Equal(t, "/metrics", deploytest.Str(deploytest.Get(sm, "spec", "endpoints", 0, "path")))
	requireRoute(t, "/metrics")
}

// scoped is so with its Prometheus queries restricted to the pods of
// release (in the namespace helm template renders for, default), as the
// chart makes them by default.
func scoped(so lag.ScaledObject, release string) lag.ScaledObject {
	sel := fmt.Sprintf("namespace=%q,pod=~%q", "default", release+"-chronos-[a-z0-9]+-[a-z0-9]+")
	if so.Lateness != nil {
		l := *so.Lateness
		l.Query = lag.LatenessQueryFor(sel)
		so.Lateness = &l
	}
	if so.FireRate != nil {
		f := *so.FireRate
		f.Query = lag.FireRateQueryFor(sel)
		so.FireRate = &f
	}
	return so
}

// TestHelmPrometheusTriggersAreScopedToTheRelease keeps "with a topic
// prefix the pods and the trigger agree on the names" (TestHelmOptions) for
// the two Prometheus triggers, which adversary round 19b broke (issue 19):
// two releases of the chart on one cluster and one Prometheus (prod, and
// staging with topicPrefix=staging.: what topicPrefix is for) rendered the
// same unscoped queries, so each release's lateness trigger scaled on the
// other's worst partition and its fire-rate trigger on the sum of both
// systems' fires. The chart now adds matchers it controls: the release
// namespace and the job the ServiceMonitor gives its pods (the Service's
// name); a query set in values is used as given.
//
//	CHRONOS_HELM=~/.cache/chronos-helm/v3.22.0/helm go test -tags helm -count=1 -v -run TestHelmPrometheusTriggersAreScopedToTheRelease ./deploy/
func TestHelmPrometheusTriggersAreScopedToTheRelease(t *testing.T) {
	queries := func(release string, set ...string) []string {
		var qs []string
		for _, tr := range deploytest.List(deploytest.Get(kind(t, render(t, release, append([]string{"keda.enabled=true", "serviceMonitor.enabled=true"}, set...)...), "ScaledObject"), "spec", "triggers")) {
			if deploytest.Str(deploytest.Get(tr, "type")) == "prometheus" {
				qs = append(qs, deploytest.Str(deploytest.Get(tr, "metadata", "query")))
			}
		}
		return qs
	}
	prod, staging := queries("prod"), queries("staging", "topicPrefix=staging.")
	require.Len(t, prod, 2)
	require.Len(t, staging, 2)
	for i := range prod {
		require.NotEqual(t, prod[i], staging[i], "release prod and release staging (topicPrefix=staging.) read the same series")
	}
	// The pod matcher selects the Deployment's pods (<deployment>-<replica
	// set hash>-<suffix>), a label both annotation scraping and a
	// ServiceMonitor give; the job would differ between them.
	docs := render(t, "prod", "keda.enabled=true", "serviceMonitor.enabled=true")
	dep := deploytest.Str(deploytest.Get(kind(t, docs, "Deployment"), "metadata", "name"))
	for _, q := range prod {
		m := regexp.MustCompile(`pod=~"([^"]*)"`).FindStringSubmatch(q)
		require.NotNil(t, m, "the query selects pods: %s", q)
		podRe := regexp.MustCompile("^(?:" + m[1] + ")$") // PromQL anchors =~
		require.True(t, podRe.MatchString(dep+"-7d9f8c6b5-abcde"), "a pod of the release")
		require.False(t, podRe.MatchString(dep+"-staging-7d9f8c6b5-abcde"), "a pod of release %s-staging", dep)
		require.NotContains(t, q, "job=")
		require.Contains(t, q, `namespace="default"`)
	}
	require.Equal(t, []string{"max(x) or vector(0)", "sum(y)"}, queries("prod", "keda.latenessQuery=max(x) or vector(0)", "keda.fireRateQuery=sum(y)"), "a query from values is used as given")
}

// TestHelmRefuses checks that the chart refuses values that would give a
// Chronos that cannot start or fire.
func TestHelmRefuses(t *testing.T) {
	for _, c := range []struct {
		set  []string
		want string
	}{
		{[]string{"apiTokens.existingSecret="}, "chronos run refuses to start without API credentials"},
		{[]string{"keda.enabled=true", "keda.minReplicaCount=0"}, "with zero Chronos pods nothing fires"},
		{[]string{"keda.enabled=true", "keda.maxReplicaCount=13"}, "more pods than partitions are idle"},
		// Adversary round 19b (issue 19): a 48-partition pod next to a
		// ScaledObject for 12 (maxReplicaCount 12: 36 partitions never
		// spread) rendered.
		{[]string{"keda.enabled=true", "extraEnv[0].name=CHRONOS_PARTITIONS", "extraEnv[0].value=48"}, "keda.partitions 12 must be the pods' --partitions"},
		{[]string{"keda.enabled=true", "keda.partitions=48", "extraEnv[0].name=CHRONOS_PARTITIONS", "extraEnv[0].value=12"}, "keda.partitions 48 must be the pods' --partitions"},
		{[]string{"keda.enabled=true", "keda.resolutionMillis=5"}, "keda.resolutionMillis must be the pods' --resolution"},
		// Adversary round 19c (issue 19): pods at another --resolution
		// than the ScaledObject's thresholds, and values KEDA refuses or
		// the templates truncate, rendered.
		{[]string{"keda.enabled=true", "extraEnv[0].name=CHRONOS_RESOLUTION", "extraEnv[0].value=50ms"}, "set keda.resolutionMillis, not extraEnv CHRONOS_RESOLUTION"},
		{[]string{"keda.enabled=true", "extraEnv[0].name=CHRONOS_RESOLUTION", "extraEnv[0].value=1s"}, "set keda.resolutionMillis, not extraEnv CHRONOS_RESOLUTION"},
		{[]string{"keda.enabled=true", "keda.partitions=0"}, "/keda/partitions"},
		{[]string{"keda.enabled=true", "keda.minReplicaCount=13"}, "keda.minReplicaCount 13 must be at most maxReplicaCount 12"},
		{[]string{"keda.enabled=true", "keda.partitions=4", "keda.minReplicaCount=5"}, "keda.minReplicaCount 5 must be at most maxReplicaCount 4"},
		{[]string{"keda.enabled=true", "keda.lagThreshold=0"}, "/keda/lagThreshold"},
		{[]string{"keda.enabled=true", "keda.lagThreshold=ten"}, "/keda/lagThreshold"},
		{[]string{"keda.enabled=true", "keda.firesPerReplica=0"}, "/keda/firesPerReplica"},
		{[]string{"keda.enabled=true", "keda.fanoutSecondsPerReplica=2.5"}, "/keda/fanoutSecondsPerReplica"},
		{[]string{"keda.enabled=true", "extraEnv[0].name=CHRONOS_PARTITIONS", "extraEnv[0].valueFrom.configMapKeyRef.name=c", "extraEnv[0].valueFrom.configMapKeyRef.key=p"}, "not extraEnv CHRONOS_PARTITIONS from valueFrom"},
		{[]string{"brokers="}, "the Kafka bootstrap brokers"},
		// Overriding the memory limit alone left GOMEMLIMIT at 900MiB, above
		// a 512Mi limit: the kernel kills the pod before Go collects harder.
		{[]string{"resources.limits.memory=512Mi"}, "goMemLimit 900MiB is not under resources.limits.memory 512Mi"},
		{[]string{"resources.limits.memory=943718400"}, "is not under resources.limits.memory"},
		// A Kubernetes-style quantity is a malformed GOMEMLIMIT: the Go
		// runtime aborts at start (a crash loop).
		{[]string{"goMemLimit=900Mi"}, "GOMEMLIMIT takes a byte count"},
		{[]string{"goMemLimit=900M"}, "GOMEMLIMIT takes a byte count"},
		// values.schema.json: zero pods fire nothing; Kubernetes takes
		// string annotation values only (an int fails at apply time).
		{[]string{"replicaCount=0"}, "replicaCount"},
		{[]string{"podAnnotations.team=7"}, "podAnnotations"},
	} {
		args := []string{"template", "r", chart}
		for _, s := range c.set {
			args = append(args, "--set", s)
		}
		out, err := helm(t, args...)
		require.Error(t, err, "helm %s rendered:\n%s", strings.Join(args, " "), out)
		require.Contains(t, out, c.want)
	}
}

// TestHelmMemoryAccepted: memory values that keep GOMEMLIMIT well-formed
// and under the container's limit render, with that GOMEMLIMIT.
func TestHelmMemoryAccepted(t *testing.T) {
	for _, c := range []struct {
		set  []string
		want string // GOMEMLIMIT; "" means not set
	}{
		{nil, "900MiB"},
		{[]string{"resources.limits.memory=512Mi", "goMemLimit=460MiB"}, "460MiB"},
		{[]string{"resources.limits.memory=1G"}, "900MiB"},
		{[]string{"resources.limits.memory=512Mi", "goMemLimit=off"}, "off"},
		{[]string{"resources.limits.memory=512Mi", "goMemLimit="}, ""},
		{[]string{"resources.limits=null"}, "900MiB"},
	} {
		var got string
		for _, d := range render(t, "r", c.set...) {
			if deploytest.Str(d["kind"]) != "Deployment" {
				continue
			}
			for _, e := range deploytest.Get(d, "spec", "template", "spec", "containers", 0, "env").([]any) {
				if ev := e.(map[string]any); ev["name"] == "GOMEMLIMIT" {
					got = deploytest.Str(ev["value"])
				}
			}
		}
		require.Equal(t, c.want, got, "GOMEMLIMIT with --set %v", c.set)
	}
}

// TestHelmValuesDocumented checks that every top-level value has a comment
// in values.yaml (the chart's documentation).
func TestHelmValuesDocumented(t *testing.T) {
	b := deploytest.ReadFile(t, filepath.Join(chart, "values.yaml"))
	values := deploytest.YAMLDoc(t, filepath.Join(chart, "values.yaml"))
	lines := strings.Split(string(b), "\n")
	for _, k := range slices.Sorted(maps.Keys(values)) {
		i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, k+":") })
		require.GreaterOrEqual(t, i, 1, k)
		require.True(t, strings.HasPrefix(lines[i-1], "#"), "value %s has no comment above it", k)
	}
}

// envValues returns the values of the Deployment's env entries named name.
func envValues(t *testing.T, docs []map[string]any, name string) []string {
	t.Helper()
	var vals []string
	for _, e := range deploytest.List(deploytest.Get(kind(t, docs, "Deployment"), "spec", "template", "spec", "containers", 0, "env")) {
		if deploytest.Str(deploytest.Get(e, "name")) == name {
			vals = append(vals, deploytest.Str(deploytest.Get(e, "value")))
		}
	}
	return vals
}
