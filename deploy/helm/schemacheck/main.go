// Command schemacheck validates Kubernetes objects (a multi-document YAML
// stream on standard input, such as `helm template` prints) against the
// Kubernetes API types: every object is decoded strictly into the Go type of
// its apiVersion and kind (k8s.io/api for the built-in kinds, the Prometheus
// Operator's types for ServiceMonitor, a copy of KEDA's v1alpha1 ScaledObject
// spec), so an unknown or misspelt field, a wrong type or a duplicate key is
// an error, and the fields the API server requires are checked. It exits 1
// with every problem listed, 0 with one line per valid object.
//
//	helm template r deploy/helm/chronos | (cd deploy/helm/schemacheck && go run .)
//
// It lives in a module of its own so that the Kubernetes types are no
// dependency of Chronos.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// scaledObject is KEDA's keda.sh/v1alpha1 ScaledObject (apis/keda/v1alpha1,
// KEDA 2.x), copied field for field: KEDA's own module would pull in most of
// its operator.
type scaledObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		ScaleTargetRef *struct {
			APIVersion             string `json:"apiVersion,omitempty"`
			Kind                   string `json:"kind,omitempty"`
			Name                   string `json:"name"`
			EnvSourceContainerName string `json:"envSourceContainerName,omitempty"`
		} `json:"scaleTargetRef"`
		PollingInterval       *int32 `json:"pollingInterval,omitempty"`
		InitialCooldownPeriod *int32 `json:"initialCooldownPeriod,omitempty"`
		CooldownPeriod        *int32 `json:"cooldownPeriod,omitempty"`
		IdleReplicaCount      *int32 `json:"idleReplicaCount,omitempty"`
		MinReplicaCount       *int32 `json:"minReplicaCount,omitempty"`
		MaxReplicaCount       *int32 `json:"maxReplicaCount,omitempty"`
		Advanced              *struct {
			HorizontalPodAutoscalerConfig *struct {
				Name     string                                         `json:"name,omitempty"`
				Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
			} `json:"horizontalPodAutoscalerConfig,omitempty"`
			RestoreToOriginalReplicaCount bool `json:"restoreToOriginalReplicaCount,omitempty"`
			ScalingModifiers              *struct {
				Formula          string `json:"formula,omitempty"`
				Target           string `json:"target,omitempty"`
				ActivationTarget string `json:"activationTarget,omitempty"`
				MetricType       string `json:"metricType,omitempty"`
			} `json:"scalingModifiers,omitempty"`
		} `json:"advanced,omitempty"`
		Triggers []struct {
			Type              string            `json:"type"`
			Name              string            `json:"name,omitempty"`
			UseCachedMetrics  bool              `json:"useCachedMetrics,omitempty"`
			Metadata          map[string]string `json:"metadata"`
			AuthenticationRef *struct {
				Name string `json:"name"`
				Kind string `json:"kind,omitempty"`
			} `json:"authenticationRef,omitempty"`
			MetricType string `json:"metricType,omitempty"`
		} `json:"triggers"`
		Fallback *struct {
			FailureThreshold int32  `json:"failureThreshold"`
			Replicas         int32  `json:"replicas"`
			Behavior         string `json:"behavior,omitempty"`
		} `json:"fallback,omitempty"`
	} `json:"spec"`
}

var dnsName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// check decodes one object strictly and checks what the API server requires.
func check(doc []byte) (string, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return "", err
	}
	var meta *metav1.ObjectMeta
	var more []error
	strict := func(into any) error { return yaml.UnmarshalStrict(doc, into) }
	var err error
	switch tm.APIVersion + " " + tm.Kind {
	case "apps/v1 Deployment":
		var o appsv1.Deployment
		err, meta = strict(&o), &o.ObjectMeta
		more = deployment(&o)
	case "v1 Service":
		var o corev1.Service
		err, meta = strict(&o), &o.ObjectMeta
		if len(o.Spec.Ports) == 0 {
			more = append(more, errors.New("spec.ports: required"))
		}
	case "v1 Secret":
		var o corev1.Secret
		err, meta = strict(&o), &o.ObjectMeta
	case "policy/v1 PodDisruptionBudget":
		var o policyv1.PodDisruptionBudget
		err, meta = strict(&o), &o.ObjectMeta
		if (o.Spec.MinAvailable == nil) == (o.Spec.MaxUnavailable == nil) {
			more = append(more, errors.New("spec: exactly one of minAvailable and maxUnavailable"))
		}
	case "monitoring.coreos.com/v1 ServiceMonitor":
		var o monitoringv1.ServiceMonitor
		err, meta = strict(&o), &o.ObjectMeta
		if len(o.Spec.Endpoints) == 0 {
			more = append(more, errors.New("spec.endpoints: required"))
		}
	case "keda.sh/v1alpha1 ScaledObject":
		var o scaledObject
		err, meta = strict(&o), &o.ObjectMeta
		s := o.Spec
		if s.ScaleTargetRef == nil || s.ScaleTargetRef.Name == "" {
			more = append(more, errors.New("spec.scaleTargetRef.name: required"))
		}
		if len(s.Triggers) == 0 {
			more = append(more, errors.New("spec.triggers: required"))
		}
		for i, tr := range s.Triggers {
			if tr.Type == "" {
				more = append(more, fmt.Errorf("spec.triggers[%d].type: required", i))
			}
		}
		if s.MinReplicaCount != nil && s.MaxReplicaCount != nil && *s.MinReplicaCount > *s.MaxReplicaCount {
			more = append(more, errors.New("spec: minReplicaCount above maxReplicaCount"))
		}
	default:
		return "", fmt.Errorf("apiVersion %q kind %q: no schema known here", tm.APIVersion, tm.Kind)
	}
	what := tm.Kind + "/" + meta.Name
	if err != nil {
		return what, err
	}
	if meta.Name == "" || len(meta.Name) > 253 || !dnsName.MatchString(meta.Name) {
		more = append(more, fmt.Errorf("metadata.name %q is not a DNS subdomain name", meta.Name))
	}
	return what, errors.Join(more...)
}

// deployment checks what the API server's validation of a Deployment
// requires beyond the types.
func deployment(d *appsv1.Deployment) []error {
	var errs []error
	sel := d.Spec.Selector
	if sel == nil || len(sel.MatchLabels) == 0 {
		errs = append(errs, errors.New("spec.selector.matchLabels: required"))
	}
	if sel != nil {
		for k, v := range sel.MatchLabels {
			if d.Spec.Template.Labels[k] != v {
				errs = append(errs, fmt.Errorf("spec.selector %s=%s does not match the template's labels", k, v))
			}
		}
	}
	ps := d.Spec.Template.Spec
	if len(ps.Containers) == 0 {
		errs = append(errs, errors.New("spec.template.spec.containers: required"))
	}
	vols := map[string]bool{}
	for _, v := range ps.Volumes {
		vols[v.Name] = true
	}
	for _, c := range ps.Containers {
		if c.Name == "" || c.Image == "" {
			errs = append(errs, fmt.Errorf("container %q: name and image are required", c.Name))
		}
		ports := map[string]bool{}
		for _, p := range c.Ports {
			ports[p.Name] = true
		}
		for _, m := range c.VolumeMounts {
			if !vols[m.Name] {
				errs = append(errs, fmt.Errorf("container %s mounts the unknown volume %q", c.Name, m.Name))
			}
		}
		for _, p := range []*corev1.Probe{c.StartupProbe, c.LivenessProbe, c.ReadinessProbe} {
			if p != nil && p.HTTPGet != nil && p.HTTPGet.Port.StrVal != "" && !ports[p.HTTPGet.Port.StrVal] {
				errs = append(errs, fmt.Errorf("container %s: a probe names the unknown port %q", c.Name, p.HTTPGet.Port.StrVal))
			}
		}
	}
	return errs
}

// split cuts a YAML stream into documents (empty ones dropped).
func split(r io.Reader) ([][]byte, error) {
	var docs [][]byte
	var cur bytes.Buffer
	flush := func() {
		if len(bytes.TrimSpace(stripComments(cur.Bytes()))) > 0 {
			docs = append(docs, bytes.Clone(cur.Bytes()))
		}
		cur.Reset()
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "---" || strings.HasPrefix(line, "--- ") {
			flush()
			continue
		}
		cur.WriteString(line + "\n")
	}
	flush()
	return docs, sc.Err()
}

func stripComments(b []byte) []byte {
	var out bytes.Buffer
	for _, l := range bytes.Split(b, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			out.Write(l)
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}

func main() {
	docs, err := split(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "schemacheck:", err)
		os.Exit(1)
	}
	if len(docs) == 0 {
		fmt.Fprintln(os.Stderr, "schemacheck: no objects on standard input")
		os.Exit(1)
	}
	failed := false
	for i, d := range docs {
		what, err := check(d)
		if err != nil {
			failed = true
			fmt.Fprintf(os.Stderr, "schemacheck: object %d %s: %v\n", i+1, what, err)
			continue
		}
		fmt.Printf("valid %s\n", what)
	}
	if failed {
		os.Exit(1)
	}
}
