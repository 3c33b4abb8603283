//go:build helm

package deploy

// Adversary round 19d on issue 19, promise "Helm and the plain manifests
// agree" and "a fan-out that is truly behind asks for more replicas".
//
//	CHRONOS_HELM=~/.cache/chronos-helm/v3.22.0/helm go test -tags 'adversary19d helm' -count=1 -v -run TestAdv19dHelm ./deploy/

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/deploy/deploytest"
	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/topology"
)

// TestAdv19dHelmDefaultScrapeMissesTheScaledObjectsQueries: with the
// chart's defaults and keda.enabled, the pods are scraped the way the chart
// sets up by default (scrapeAnnotations: true, the prometheus.io/*
// annotations; serviceMonitor.enabled: false), and a Prometheus that
// discovers pods by annotation labels their series with its scrape job's
// name ("kubernetes-pods" in the prometheus-community chart's config,
// "pods" or "apps" in others; never the Service's name: a pod target has
// none), plus namespace and pod. The chart's default
// Prometheus queries select job="<fullname>", the name the Prometheus
// Operator gives a ServiceMonitor's job, which the chart does not create by
// default. So neither query matches a series, `or vector(0)` turns that
// into 0, and both the lateness and the fire-rate triggers read 0 whatever
// the fan-out does: the chart scales on commands only, silently (no error,
// no inactive trigger: KEDA sees a valid 0). values.yaml says to set the
// queries "when your scrape config labels the pods otherwise", but the
// scrape the chart itself sets up by default is such a config. The plain
// manifest's
// unscoped query matches the same series. Measured: release "prod" in
// namespace "default" with the chart's defaults: the lateness query
// selects job="prod-chronos", the pods' series carry job="kubernetes-pods";
// a 60 s lateness asks for 12 replicas through the plain manifest and 1
// through the chart.
func TestAdv19dHelmDefaultScrapeMissesTheScaledObjectsQueries(t *testing.T) {
	docs := render(t, "prod", "keda.enabled=true")
	values := deploytest.YAMLDoc(t, "deploy/helm/chronos/values.yaml")
	require.Equal(t, true, deploytest.Get(values, "scrapeAnnotations"), "setup: the chart's default scraping is by annotation")
	require.Equal(t, false, deploytest.Get(values, "serviceMonitor", "enabled"), "setup: no ServiceMonitor by default")
	var kinds []string
	for _, d := range docs {
		kinds = append(kinds, deploytest.Str(deploytest.Get(d, "kind")))
	}
	require.NotContains(t, kinds, "ServiceMonitor", "setup")
	pod := deploytest.Get(kind(t, docs, "Deployment"), "spec", "template", "metadata", "annotations")
	require.Equal(t, "true", deploytest.Str(deploytest.Get(pod, "prometheus.io/scrape")), "setup: the pods ask to be scraped by annotation")

	// The labels an annotation-discovery scrape job gives a pod's series.
	series := map[string]string{"job": "kubernetes-pods", "namespace": "default", "pod": "prod-chronos-7d9f8-abcde", "partition": "3"}
	matches := func(query string) bool {
		ms := regexp.MustCompile(`(\w+)="([^"]*)"`).FindAllStringSubmatch(query, -1)
		for _, m := range ms {
			if series[m[1]] != m[2] {
				return false
			}
		}
		return true
	}
	var lateness, fireRate string
	for _, tr := range deploytest.List(deploytest.Get(kind(t, docs, "ScaledObject"), "spec", "triggers")) {
		q := deploytest.Str(deploytest.Get(tr, "metadata", "query"))
		switch {
		case regexp.MustCompile(lag.LatenessMetric).MatchString(q):
			lateness = q
		case regexp.MustCompile(`chronos_fires_total`).MatchString(q):
			fireRate = q
		}
	}
	require.NotEmpty(t, lateness, "setup: the chart has a lateness trigger by default")
	require.True(t, matches(lag.LatenessQuery), "the plain manifest's query selects the pods' series")
	const late = 60.0
	plain := lag.ScaledObjectFor(topology.Layout{})
	seen := func(q string) float64 { // what the query returns for one pod at 60 s of lateness
		if matches(q) {
			return late
		}
		return 0 // `or vector(0)`
	}
	viaPlain, _ := plain.ReplicasWith(nil, lag.Observed{Lateness: seen(lag.LatenessQuery)}, 1)
	viaChart, _ := plain.ReplicasWith(nil, lag.Observed{Lateness: seen(lateness)}, 1)
	t.Logf("chart lateness query %s, fire-rate query %s; series labels %v; a %.0f s lateness asks for %d replicas through the plain manifest, %d through the chart", lateness, fireRate, series, late, viaPlain, viaChart)
	require.True(t, matches(lateness) && matches(fireRate), "with the chart's default scraping (annotations, no ServiceMonitor) the chart's queries %q and %q match no series of its pods (job=%q): both Prometheus triggers read 0 for ever (%d replicas at %.0f s of lateness, %d with the plain manifest)",
		lateness, fireRate, series["job"], viaChart, late, viaPlain)
}
