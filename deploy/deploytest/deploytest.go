// Package deploytest is the shared support of the deploy and
// deploy/autoscaling tests (the manifests' checks and the slow autoscaling
// adversary tests split out of them): reading the repository's manifests
// (YAML, PromQL expressions), the shipped ScaledObject evaluated on a test
// broker, dispatch producers that are slow or hang, a settable wall clock,
// and readers of an instance's gauges.
package deploytest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// Root is the repository root: the directory of the go.mod above the
// working directory (tests run in their package's directory, deploy/ or
// deploy/autoscaling/, and read the same files).
var Root = moduleRoot()

func moduleRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		panic(fmt.Sprintf("deploytest: %v", err))
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			panic(fmt.Sprintf("deploytest: no go.mod above %s", wd))
		}
		dir = parent
	}
}

// ---------------------------------------------------------------------------
// Reading the files

// ReadFile is the content of the file rel (a path from the repository root).
func ReadFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Root, rel))
	require.NoError(t, err)
	return b
}

// YAMLDocs decodes every document of a YAML file.
func YAMLDocs(t *testing.T, rel string) []map[string]any {
	t.Helper()
	return ParseYAMLDocs(t, rel, ReadFile(t, rel))
}

// ParseYAMLDocs decodes every document of a YAML stream; where names it in
// failures.
func ParseYAMLDocs(t *testing.T, rel string, b []byte) []map[string]any {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var docs []map[string]any
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "%s does not parse", rel)
		if d != nil {
			docs = append(docs, d)
		}
	}
	require.NotEmpty(t, docs, "%s is empty", rel)
	return docs
}

// YAMLDoc decodes a YAML file of one document.
func YAMLDoc(t *testing.T, rel string) map[string]any {
	t.Helper()
	docs := YAMLDocs(t, rel)
	require.Len(t, docs, 1, rel)
	return docs[0]
}

// Get walks a decoded YAML/JSON value: keys of maps, indexes of lists.
func Get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// Str is a decoded scalar as a string ("" for none).
func Str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// List is a decoded list (nil for anything else).
func List(v any) []any { l, _ := v.([]any); return l }

// Dict is a decoded map (nil for anything else).
func Dict(v any) map[string]any { m, _ := v.(map[string]any); return m }

// Expressions are the PromQL expressions of the manifests, by where they are.
func Expressions(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, g := range List(YAMLDoc(t, "deploy/prometheus/alerts.yml")["groups"]) {
		for _, r := range List(Get(g, "rules")) {
			out["alerts.yml "+Str(Get(r, "alert"))] = Str(Get(r, "expr"))
		}
	}
	for i, tr := range List(Get(ShippedScaledObject(t), "spec", "triggers")) {
		if Str(Get(tr, "type")) == "prometheus" {
			out[fmt.Sprintf("keda-scaledobject.yaml #%d", i)] = Str(Get(tr, "metadata", "query"))
		}
	}
	var dash map[string]any
	require.NoError(t, json.Unmarshal(ReadFile(t, "deploy/grafana/dashboards/chronos.json"), &dash))
	for _, p := range List(dash["panels"]) {
		for i, tg := range List(Get(p, "targets")) {
			out[fmt.Sprintf("chronos.json %q #%d", Str(Get(p, "title")), i)] = Str(Get(tg, "expr"))
		}
	}
	return out
}
