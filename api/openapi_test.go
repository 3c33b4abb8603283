package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/topology"
	"github.com/chronos-scheduler/chronos/views"
)

const openAPIPath = "../docs/openapi.json"

var httpMethods = []string{"get", "put", "post", "delete", "patch", "head", "options", "trace"}

func loadOpenAPI(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(openAPIPath)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc), "docs/openapi.json is not valid JSON")
	require.Equal(t, "3.0.3", doc["openapi"])
	return doc
}

// obj returns m[keys[0]][keys[1]]... as an object, failing when absent.
func obj(t *testing.T, m map[string]any, keys ...string) map[string]any {
	t.Helper()
	for _, k := range keys {
		next, ok := m[k].(map[string]any)
		require.True(t, ok, "no object at %q (path %v)", k, keys)
		m = next
	}
	return m
}

// documentedRoutes returns "METHOD /path" for every operation in the document.
func documentedRoutes(t *testing.T, doc map[string]any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for path, item := range obj(t, doc, "paths") {
		for _, m := range httpMethods {
			if op, ok := item.(map[string]any)[m].(map[string]any); ok {
				out[strings.ToUpper(m)+" "+path] = op
			}
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// probeServer serves every route: a view, a gatherer and a producer.
func probeServer() http.Handler {
	return (&api.Server{Names: topology.Names{Prefix: "test-"}, Producer: &fakeProducer{},
		Jobs: newFakeJobs(), Gatherer: prometheus.NewRegistry(), ReadYourWrites: 1}).Handler()
}

var wildcard = regexp.MustCompile(`\{[^}]+\}`)

// routed reports whether the handler has a route for method and path, as
// opposed to answering from its catch-all (404 "no route" or 405).
func routed(t *testing.T, h http.Handler, method, path string) bool {
	t.Helper()
	sample := wildcard.ReplaceAllString(path, "sample")
	req := httptest.NewRequest(method, sample, nil)
	if mux, ok := h.(*http.ServeMux); ok {
		_, pattern := mux.Handler(req)
		if pattern == "" || pattern == "/" {
			return false
		}
		require.Equal(t, method+" "+path, pattern, "%s %s is served by another pattern", method, sample)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code == http.StatusMethodNotAllowed {
		return false
	}
	if rec.Code == http.StatusNotFound {
		var p api.Problem
		if json.Unmarshal(rec.Body.Bytes(), &p) == nil && strings.HasPrefix(p.Detail, "no route ") {
			return false
		}
	}
	return true
}

func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	documented := documentedRoutes(t, doc)
	h := probeServer()

	// The probe tells routes from the catch-all.
	require.False(t, routed(t, h, "GET", "/v1/nothing"))
	require.False(t, routed(t, h, "PATCH", "/v1/jobs/{id}"))
	require.False(t, routed(t, h, "POST", "/v1/jobs/{id}/explode"))

	// Documented → served. HEAD is served by the GET route of its path
	// (net/http's mux), and every GET route documents its HEAD.
	for _, r := range sortedKeys(documented) {
		method, path, _ := strings.Cut(r, " ")
		if method == http.MethodHead {
			require.Contains(t, documented, "GET "+path, "%s without its GET", r)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(method, wildcard.ReplaceAllString(path, "sample"), nil))
			require.NotEqual(t, http.StatusMethodNotAllowed, rec.Code, "documented %s is not served", r)
			delete(documented, r)
			continue
		}
		require.True(t, routed(t, h, method, path), "documented %s is not served", r)
		if method == http.MethodGet {
			require.Contains(t, documentedRoutes(t, doc), "HEAD "+path, "%s without its HEAD", r)
		}
	}
	// Served → documented, and exactly the same set.
	routes := api.Routes()
	require.NotEmpty(t, routes)
	for _, r := range routes {
		method, path, ok := strings.Cut(r, " ")
		require.True(t, ok, "route %q has no method", r)
		require.True(t, routed(t, h, method, path), "Routes() lists %s but Handler does not serve it", r)
		require.Contains(t, documented, r, "route %s is not in docs/openapi.json", r)
	}
	sort.Strings(routes)
	require.Equal(t, sortedKeys(documented), routes)
}

func TestOpenAPISecurity(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	scheme := obj(t, doc, "components", "securitySchemes", "bearerAuth")
	require.Equal(t, "http", scheme["type"])
	require.Equal(t, "bearer", scheme["scheme"])

	h := (&api.Server{Names: topology.Names{Prefix: "test-"}, Producer: &fakeProducer{}, Jobs: newFakeJobs(),
		Gatherer: prometheus.NewRegistry(), Token: "s3cret", ReadYourWrites: 1}).Handler()
	for r, op := range documentedRoutes(t, doc) {
		method, path, _ := strings.Cut(r, " ")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, wildcard.ReplaceAllString(path, "sample"), nil))
		sec, _ := op["security"].([]any)
		if strings.HasPrefix(path, "/v1/") {
			// Optional bearer auth: the scheme, or nothing when the server has no token.
			require.Equal(t, []any{map[string]any{"bearerAuth": []any{}}, map[string]any{}}, sec, r)
			require.Equal(t, http.StatusUnauthorized, rec.Code, "%s without a token", r)
			require.Contains(t, obj(t, op, "responses"), "401", r)
		} else {
			require.Empty(t, sec, r)
			require.NotEqual(t, http.StatusUnauthorized, rec.Code, r)
		}
	}
}

// resolve follows a local JSON pointer ("#/components/schemas/Job").
func resolve(doc map[string]any, ref string) (any, bool) {
	if !strings.HasPrefix(ref, "#/") {
		return nil, false
	}
	var cur any = doc
	for _, part := range strings.Split(ref[2:], "/") {
		part = strings.NewReplacer("~1", "/", "~0", "~").Replace(part)
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func TestOpenAPIReferencesResolve(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	var refs []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if r, ok := v["$ref"].(string); ok {
				refs = append(refs, r)
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	require.NotEmpty(t, refs)
	for _, r := range refs {
		_, ok := resolve(doc, r)
		require.True(t, ok, "$ref %q does not resolve", r)
	}
	schemas := obj(t, doc, "components", "schemas")
	for _, name := range []string{"JobDef", "Job", "Summary", "JobList", "Accepted", "TriggerAccepted", "Problem"} {
		require.Contains(t, schemas, name)
		require.Contains(t, refs, "#/components/schemas/"+name, "schema %s is never used", name)
	}
}

// deref returns v, or what its $ref points to.
func deref(t *testing.T, doc map[string]any, v any) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	require.True(t, ok)
	if r, ok := m["$ref"].(string); ok {
		target, ok := resolve(doc, r)
		require.True(t, ok, r)
		return deref(t, doc, target)
	}
	return m
}

func TestOpenAPIOperations(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	for r, op := range documentedRoutes(t, doc) {
		_, path, _ := strings.Cut(r, " ")
		require.NotEmpty(t, op["operationId"], r)

		// Every path wildcard is declared as a path parameter.
		declared := map[string]bool{}
		var params []any
		if item, ok := obj(t, doc, "paths")[path].(map[string]any); ok {
			ps, _ := item["parameters"].([]any)
			params = append(params, ps...)
		}
		ps, _ := op["parameters"].([]any)
		params = append(params, ps...)
		for _, p := range params {
			pm := deref(t, doc, p)
			if pm["in"] == "path" {
				require.Equal(t, true, pm["required"], "%s: path parameter %v", r, pm["name"])
				declared[pm["name"].(string)] = true
			}
		}
		for _, w := range wildcard.FindAllString(path, -1) {
			require.True(t, declared[strings.Trim(w, "{}")], "%s: %s is not declared", r, w)
			delete(declared, strings.Trim(w, "{}"))
		}
		require.Empty(t, declared, "%s declares path parameters it does not have", r)

		// Errors are problem documents, successes JSON (or text for
		// /metrics); HEAD answers have no body.
		for status, resp := range obj(t, op, "responses") {
			if strings.HasPrefix(r, "HEAD ") {
				require.NotContains(t, deref(t, doc, resp), "content", "%s %s", r, status)
				continue
			}
			content, ok := deref(t, doc, resp)["content"].(map[string]any)
			require.True(t, ok, "%s %s has no content", r, status)
			switch {
			case status >= "400":
				require.Equal(t, []string{"application/problem+json"}, sortedKeys(content), "%s %s", r, status)
				require.Equal(t, "#/components/schemas/Problem", obj(t, content, "application/problem+json", "schema")["$ref"], "%s %s", r, status)
			case path == "/metrics":
				require.Contains(t, content, "text/plain")
			default:
				require.Equal(t, []string{"application/json"}, sortedKeys(content), "%s %s", r, status)
			}
		}
	}

	put := obj(t, doc, "paths", "/v1/jobs/{id}", "put", "responses")
	for _, status := range []string{"200", "202", "400", "412", "413", "415", "503"} {
		require.Contains(t, put, status)
	}
	limit := deref(t, doc, obj(t, doc, "components", "parameters")["Limit"])
	require.Equal(t, map[string]any{"type": "integer", "minimum": 1.0, "maximum": 1000.0, "default": 100.0}, limit["schema"])
}

// jsonFields returns the JSON names of typ's fields, and those without omitempty.
func jsonFields(typ reflect.Type) (all, required []string) {
	for i := range typ.NumField() {
		f := typ.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		all = append(all, name)
		if !slices.Contains(strings.Split(opts, ","), "omitempty") {
			required = append(required, name)
		}
	}
	sort.Strings(all)
	sort.Strings(required)
	return all, required
}

func TestOpenAPISchemasMatchTypes(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	schemas := obj(t, doc, "components", "schemas")
	for name, typ := range map[string]reflect.Type{
		"JobDef":          reflect.TypeFor[codecs.JobDef](),
		"Job":             reflect.TypeFor[views.Job](),
		"LastFire":        reflect.TypeFor[views.LastFire](),
		"Summary":         reflect.TypeFor[views.Summary](),
		"JobList":         reflect.TypeFor[api.JobList](),
		"Accepted":        reflect.TypeFor[api.Accepted](),
		"TriggerAccepted": reflect.TypeFor[api.TriggerAccepted](),
		"BulkAccepted":    reflect.TypeFor[api.BulkAccepted](),
		"BulkStatus":      reflect.TypeFor[views.BulkStatus](),
		"Backfill":        reflect.TypeFor[codecs.BackfillStatus](),
		"Problem":         reflect.TypeFor[api.Problem](),
		"Whoami":          reflect.TypeFor[api.Whoami](),
		"ImportResult":    reflect.TypeFor[api.ImportResult](),
		"ImportLineError": reflect.TypeFor[api.ImportLineError](),
	} {
		s := obj(t, schemas, name)
		require.Equal(t, "object", s["type"], name)
		all, required := jsonFields(typ)
		require.Equal(t, all, sortedKeys(obj(t, s, "properties")), "%s properties vs %s", name, typ)
		var docRequired []string
		reqs, _ := s["required"].([]any)
		for _, r := range reqs {
			docRequired = append(docRequired, r.(string))
		}
		sort.Strings(docRequired)
		require.Equal(t, required, docRequired, "%s required vs %s fields without omitempty", name, typ)
	}
	require.Equal(t, false, obj(t, schemas, "JobDef")["additionalProperties"])
	// The optional fire / bucket-trigger body: the fields fire and trigger accept.
	tr := obj(t, schemas, "TriggerRequest")
	require.Equal(t, false, tr["additionalProperties"])
	require.Equal(t, []string{"payload", "trigger_id"}, sortedKeys(obj(t, tr, "properties")))
	bt, _ := jsonFields(reflect.TypeFor[codecs.BucketTrigger]())
	for _, f := range sortedKeys(obj(t, tr, "properties")) {
		require.Contains(t, bt, f)
	}
}

// TestOpenAPIDocumentsRefusals checks that every route documents the
// refusals it really answers: 403 for a confined token outside its prefix
// or a rebound Host, 415 for a write with another Content-Type.
func TestOpenAPIDocumentsRefusals(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	secret, line, err := api.NewToken("tenant", api.RoleWrite, "acme.")
	require.NoError(t, err)
	tok, err := api.ParseTokens(strings.NewReader(line))
	require.NoError(t, err)
	h := (&api.Server{Names: topology.Names{Prefix: "test-"}, Producer: &fakeProducer{}, Jobs: newFakeJobs(),
		Gatherer: prometheus.NewRegistry(), Tokens: tok, ReadYourWrites: 1,
		AllowedHosts: api.LoopbackHosts("127.0.0.1:8080")}).Handler()
	send := func(method, path, host, ct string) int {
		req := httptest.NewRequest(method, path, strings.NewReader("{}"))
		req.Host = host
		req.Header.Set("Authorization", "Bearer "+secret)
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	for r, op := range documentedRoutes(t, doc) {
		method, path, _ := strings.Cut(r, " ")
		responses := obj(t, op, "responses")
		require.Equal(t, http.StatusForbidden, send(method, wildcard.ReplaceAllString(path, "other"), "evil.example:8080", ""), r)
		require.Contains(t, responses, "403", r)
		if !strings.HasPrefix(path, "/v1/") {
			continue
		}
		if strings.Contains(path, "{") {
			require.Equal(t, http.StatusForbidden, send(method, wildcard.ReplaceAllString(path, "globex.x"), "127.0.0.1:8080", "application/json"), r)
		}
		if method == http.MethodPost || method == http.MethodPut {
			require.Equal(t, http.StatusUnsupportedMediaType, send(method, wildcard.ReplaceAllString(path, "acme.x"), "127.0.0.1:8080", "text/plain"), r)
			require.Contains(t, responses, "415", r)
		}
	}
}
