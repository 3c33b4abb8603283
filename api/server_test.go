package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/topology"
)

// fakeProducer records produced records and fails when err is set.
type fakeProducer struct {
	mu   sync.Mutex
	recs []*kgo.Record
	err  error
}

func (p *fakeProducer) ProduceSync(_ context.Context, rs ...*kgo.Record) kgo.ProduceResults {
	p.mu.Lock()
	defer p.mu.Unlock()
	res := make(kgo.ProduceResults, 0, len(rs))
	for _, r := range rs {
		if p.err != nil {
			res = append(res, kgo.ProduceResult{Record: r, Err: p.err})
			continue
		}
		r.Partition = 3
		r.Offset = int64(len(p.recs))
		p.recs = append(p.recs, r)
		res = append(res, kgo.ProduceResult{Record: r})
	}
	return res
}

func (p *fakeProducer) records() []*kgo.Record {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*kgo.Record(nil), p.recs...)
}

type fixture struct {
	srv  *api.Server
	prod *fakeProducer
	ts   *httptest.Server
}

func newFixture(t testing.TB, configure func(*api.Server)) *fixture {
	t.Helper()
	prod := &fakeProducer{}
	srv := &api.Server{Names: topology.Names{Prefix: "test-"}, Producer: prod}
	if configure != nil {
		configure(srv)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return &fixture{srv: srv, prod: prod, ts: ts}
}

type request struct {
	method, path, body string
	header             map[string]string
}

// do sends a request; a body, a POST and a PUT get Content-Type
// application/json unless the header map sets one (an explicit "" removes it).
func (f *fixture) do(t testing.TB, rq request) (*http.Response, []byte) {
	t.Helper()
	var body io.Reader
	if rq.body != "" {
		body = strings.NewReader(rq.body)
	}
	req, err := http.NewRequestWithContext(t.Context(), rq.method, f.ts.URL+rq.path, body)
	require.NoError(t, err)
	if rq.body != "" || rq.method == http.MethodPost || rq.method == http.MethodPut {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range rq.header {
		if k == "Host" {
			req.Host = v
			continue
		}
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := f.ts.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

func decodeProblem(t *testing.T, resp *http.Response, b []byte) api.Problem {
	t.Helper()
	require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"), "body: %s", b)
	var p api.Problem
	require.NoError(t, json.Unmarshal(b, &p), "body: %s", b)
	require.Equal(t, resp.StatusCode, p.Status)
	require.Equal(t, http.StatusText(resp.StatusCode), p.Title)
	require.Equal(t, "about:blank", p.Type)
	require.NotEmpty(t, p.Detail)
	return p
}

func decodeAccepted(t *testing.T, resp *http.Response, b []byte) api.Accepted {
	t.Helper()
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "body: %s", b)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var a api.Accepted
	require.NoError(t, json.Unmarshal(b, &a), "body: %s", b)
	return a
}

// decodeRecord checks a produced record the way the scheduler reads it.
func decodeRecord(t *testing.T, r *kgo.Record, id string) codecs.Command {
	t.Helper()
	require.Equal(t, "test-chronos-jobs", r.Topic)
	require.Equal(t, id, string(r.Key))
	c, err := codecs.DecodeCommand(r.Key, r.Value, codecs.DefaultLimits())
	require.NoError(t, err, "value: %s", r.Value)
	return c
}

func TestPutJob(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, id, escaped, body string
		header                  map[string]string
	}{
		{name: "cron", id: "nightly", escaped: "nightly",
			body: `{"cron":"0 3 * * *","tz":"Europe/Berlin","payload":{"a": [1, 2]},"bucket":"b1","misfire_policy":"skip","misfire_grace":"5m"}`},
		{name: "every", id: "tick", escaped: "tick", body: `{"every":"30s","start":"2026-01-02T15:04:05Z"}`},
		{name: "at", id: "once", escaped: "once", body: `{"at":"2030-01-02T15:04:05Z"}`},
		{name: "calendar cron with a DST policy", id: "lastfri", escaped: "lastfri",
			body: `{"cron":"30 1 * * 5L","tz":"America/New_York","dst":{"gap":"skip","overlap":"both"}}`},
		{name: "escaped id", id: "a/b c", escaped: "a%2Fb%20c", body: `{"every":"1m"}`},
		{name: "unicode id", id: "jöb-✓", escaped: "j%C3%B6b-%E2%9C%93", body: `{"every":"1m"}`},
		{name: "json with charset", id: "cs", escaped: "cs", body: `{"every":"1m"}`,
			header: map[string]string{"Content-Type": "application/json; charset=utf-8"}},
		{name: "surrounding whitespace", id: "ws", escaped: "ws", body: "\n  {\"every\":\"1m\"}  \n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			resp, b := f.do(t, request{method: http.MethodPut, path: "/v1/jobs/" + tc.escaped, body: tc.body, header: tc.header})
			a := decodeAccepted(t, resp, b)
			require.Equal(t, api.Accepted{ID: tc.id, Op: codecs.OpPut, Partition: 3, Offset: 0}, a)

			recs := f.prod.records()
			require.Len(t, recs, 1)
			c := decodeRecord(t, recs[0], tc.id)
			require.Equal(t, codecs.OpPut, c.Op)
			require.Equal(t, tc.id, c.ID)

			var def codecs.JobDef
			require.NoError(t, json.Unmarshal([]byte(tc.body), &def))
			want, err := def.Validate(codecs.DefaultLimits())
			require.NoError(t, err)
			require.Equal(t, want, c.Job)
		})
	}
}

func TestMalformedRequestsProduceNothing(t *testing.T) {
	t.Parallel()
	big := `"` + strings.Repeat("x", codecs.DefaultMaxPayload) + `"`
	huge := strings.Repeat(" ", codecs.DefaultMaxPayload+32<<10) + `{"every":"1m"}`
	tests := []struct {
		name   string
		rq     request
		status int
		code   string
		field  string
	}{
		{"empty body", request{method: "PUT", path: "/v1/jobs/x"}, 400, codecs.CodeMalformed, ""},
		{"blank body", request{method: "PUT", path: "/v1/jobs/x", body: "  \n"}, 400, codecs.CodeMalformed, ""},
		{"invalid json", request{method: "PUT", path: "/v1/jobs/x", body: `{"every":`}, 400, codecs.CodeMalformed, ""},
		{"not an object", request{method: "PUT", path: "/v1/jobs/x", body: `[1]`}, 400, codecs.CodeMalformed, ""},
		{"unknown field", request{method: "PUT", path: "/v1/jobs/x", body: `{"every":"1m","color":"red"}`},
			400, codecs.CodeUnknownField, "color"},
		{"trailing object", request{method: "PUT", path: "/v1/jobs/x", body: `{"every":"1m"}{"every":"2m"}`},
			400, codecs.CodeMalformed, ""},
		{"trailing garbage", request{method: "PUT", path: "/v1/jobs/x", body: `{"every":"1m"} x`}, 400, codecs.CodeMalformed, ""},
		{"trailing close brace", request{method: "PUT", path: "/v1/jobs/x", body: `{"every":"1m"}}`}, 400, codecs.CodeMalformed, ""},
		{"trailing close bracket", request{method: "PUT", path: "/v1/jobs/x", body: `{"every":"1m"}]`}, 400, codecs.CodeMalformed, ""},
		{"wrong type", request{method: "PUT", path: "/v1/jobs/x", body: `{"every":60}`}, 400, codecs.CodeMalformed, "every"},
		{"bad cron", request{method: "PUT", path: "/v1/jobs/x", body: `{"cron":"not a cron"}`}, 400, codecs.CodeInvalidSchedule, "cron"},
		{"bad tz", request{method: "PUT", path: "/v1/jobs/x", body: `{"cron":"* * * * *","tz":"Mars/Olympus"}`},
			400, codecs.CodeInvalidSchedule, "tz"},
		{"bad every", request{method: "PUT", path: "/v1/jobs/x", body: `{"every":"soon"}`}, 400, codecs.CodeInvalidSchedule, "every"},
		{"bad calendar item", request{method: "PUT", path: "/v1/jobs/x", body: `{"cron":"0 0 L-31 * *"}`}, 400, codecs.CodeInvalidSchedule, "cron"},
		{"dst on every", request{method: "PUT", path: "/v1/jobs/x", body: `{"every":"1m","dst":{"gap":"skip"}}`}, 400, codecs.CodeInvalidSchedule, "dst"},
		{"bad dst overlap", request{method: "PUT", path: "/v1/jobs/x", body: `{"cron":"@daily","dst":{"overlap":"twice"}}`}, 400, codecs.CodeInvalidSchedule, "dst"},
		{"unknown dst key", request{method: "PUT", path: "/v1/jobs/x", body: `{"cron":"@daily","dst":{"fold":1}}`}, 400, codecs.CodeUnknownField, "fold"},
		{"negative every", request{method: "PUT", path: "/v1/jobs/x", body: `{"every":"-1m"}`}, 400, codecs.CodeInvalidSchedule, "every"},
		{"bad at", request{method: "PUT", path: "/v1/jobs/x", body: `{"at":"tomorrow"}`}, 400, codecs.CodeInvalidSchedule, "at"},
		{"two schedule kinds", request{method: "PUT", path: "/v1/jobs/x", body: `{"cron":"* * * * *","every":"1m"}`},
			400, codecs.CodeInvalidSchedule, "schedule"},
		{"no schedule", request{method: "PUT", path: "/v1/jobs/x", body: `{}`}, 400, codecs.CodeInvalidSchedule, "schedule"},
		{"bad misfire policy", request{method: "PUT", path: "/v1/jobs/x", body: `{"every":"1m","misfire_policy":"never"}`},
			400, codecs.CodeInvalidField, "misfire_policy"},
		{"payload over the limit", request{method: "PUT", path: "/v1/jobs/x", body: `{"every":"1m","payload":` + big + `}`},
			413, codecs.CodePayloadTooLarge, "payload"},
		{"body over the limit", request{method: "PUT", path: "/v1/jobs/x", body: huge}, 413, codecs.CodePayloadTooLarge, ""},
		{"wrong content type", request{method: "PUT", path: "/v1/jobs/x", body: `{"every":"1m"}`,
			header: map[string]string{"Content-Type": "text/plain"}}, 415, codecs.CodeMalformed, "Content-Type"},
		{"no content type", request{method: "PUT", path: "/v1/jobs/x", body: `{"every":"1m"}`,
			header: map[string]string{"Content-Type": ""}}, 415, codecs.CodeMalformed, "Content-Type"},
		{"pause without a content type", request{method: "POST", path: "/v1/jobs/x/pause",
			header: map[string]string{"Content-Type": ""}}, 415, codecs.CodeMalformed, "Content-Type"},
		{"form content type", request{method: "PUT", path: "/v1/jobs/x", body: `{"every":"1m"}`,
			header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}, 415, codecs.CodeMalformed, "Content-Type"},
		{"reserved id", request{method: "PUT", path: "/v1/jobs/__chronos%2Fx", body: `{"every":"1m"}`},
			400, codecs.CodeReservedID, "id"},
		{"reserved id delete", request{method: "DELETE", path: "/v1/jobs/__chronos%2F0"}, 400, codecs.CodeReservedID, "id"},
		{"reserved id fire", request{method: "POST", path: "/v1/jobs/__chronos%2F0/fire"}, 400, codecs.CodeReservedID, "id"},
		{"over-long id", request{method: "PUT", path: "/v1/jobs/" + strings.Repeat("i", codecs.MaxIDLen+1), body: `{"every":"1m"}`},
			400, codecs.CodeInvalidID, "id"},
		{"control character id", request{method: "DELETE", path: "/v1/jobs/a%01b"}, 400, codecs.CodeInvalidID, "id"},
		{"unknown route", request{method: "GET", path: "/v1/nothing"}, 404, "not_found", ""},
		{"unknown root route", request{method: "GET", path: "/favicon.ico"}, 404, "not_found", ""},
		{"unknown job subroute", request{method: "POST", path: "/v1/jobs/x/explode"}, 404, "not_found", ""},
		{"wrong method patch job", request{method: "PATCH", path: "/v1/jobs/x"}, 405, "method_not_allowed", ""},
		{"wrong method post job", request{method: "POST", path: "/v1/jobs/x", body: `{"every":"1m"}`}, 405, "method_not_allowed", ""},
		{"wrong method pause", request{method: "PUT", path: "/v1/jobs/x/pause"}, 405, "method_not_allowed", ""},
		{"wrong method healthz", request{method: "DELETE", path: "/healthz"}, 405, "method_not_allowed", ""},
		{"pause unknown field", request{method: "POST", path: "/v1/jobs/x/pause", body: `{"reason":"r"}`}, 400, codecs.CodeUnknownField, "reason"},
		{"pause over-long note", request{method: "POST", path: "/v1/jobs/x/pause", body: `{"note":"` + strings.Repeat("n", codecs.MaxNoteBytes+1) + `"}`},
			400, codecs.CodeInvalidField, "note"},
		{"fire bad json", request{method: "POST", path: "/v1/jobs/x/fire", body: `{"trigger_id":`}, 400, codecs.CodeMalformed, ""},
		{"fire unknown field", request{method: "POST", path: "/v1/jobs/x/fire", body: `{"trigger":"t"}`},
			400, codecs.CodeUnknownField, "trigger"},
		{"fire trailing data", request{method: "POST", path: "/v1/jobs/x/fire", body: `{"trigger_id":"t"} {}`}, 400, codecs.CodeMalformed, ""},
		{"fire wrong type", request{method: "POST", path: "/v1/jobs/x/fire", body: `{"trigger_id":7}`}, 400, codecs.CodeMalformed, "trigger_id"},
		{"fire payload over the limit", request{method: "POST", path: "/v1/jobs/x/fire", body: `{"payload":` + big + `}`},
			413, codecs.CodePayloadTooLarge, "payload"},
		{"fire over-long trigger", request{method: "POST", path: "/v1/jobs/x/fire",
			body: `{"trigger_id":"` + strings.Repeat("t", codecs.MaxIDLen+1) + `"}`}, 400, codecs.CodeInvalidField, "trigger_id"},
		{"fire wrong content type", request{method: "POST", path: "/v1/jobs/x/fire", body: `{}`,
			header: map[string]string{"Content-Type": "text/plain"}}, 415, codecs.CodeMalformed, "Content-Type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			resp, b := f.do(t, tc.rq)
			require.Equal(t, tc.status, resp.StatusCode, "body: %s", b)
			p := decodeProblem(t, resp, b)
			require.Equal(t, tc.code, p.Code, "detail: %s", p.Detail)
			require.Equal(t, tc.field, p.Field, "detail: %s", p.Detail)
			if tc.status == http.StatusMethodNotAllowed {
				require.NotEmpty(t, resp.Header.Get("Allow"))
			}
			require.Empty(t, f.prod.records())
		})
	}
}

func TestMethodNotAllowedListsAllowedMethods(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	resp, b := f.do(t, request{method: "POST", path: "/v1/jobs/x"})
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "body: %s", b)
	allow := strings.Split(resp.Header.Get("Allow"), ", ")
	require.ElementsMatch(t, []string{"GET", "HEAD", "PUT", "DELETE"}, allow)

	resp, b = f.do(t, request{method: "POST", path: "/healthz"})
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "body: %s", b)
	require.ElementsMatch(t, []string{"GET", "HEAD"}, strings.Split(resp.Header.Get("Allow"), ", "))
}

func TestOps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		method, suffix, op string
	}{
		{http.MethodDelete, "", codecs.OpDelete},
		{http.MethodPost, "/pause", codecs.OpPause},
		{http.MethodPost, "/resume", codecs.OpResume},
	}
	for _, tc := range tests {
		t.Run(tc.op, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			// An empty body or {} on these ops is no body.
			for i, body := range []string{"", "{}"} {
				resp, b := f.do(t, request{method: tc.method, path: "/v1/jobs/job%201" + tc.suffix, body: body})
				a := decodeAccepted(t, resp, b)
				require.Equal(t, api.Accepted{ID: "job 1", Op: tc.op, Partition: 3, Offset: int64(i)}, a)
			}
			recs := f.prod.records()
			require.Len(t, recs, 2)
			for _, r := range recs {
				c := decodeRecord(t, r, "job 1")
				require.Equal(t, codecs.Command{Op: tc.op, ID: "job 1"}, c)
			}
		})
	}
}

// TestPauseNote: a pause's note reaches the command on chronos-jobs.
func TestPauseNote(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	resp, b := f.do(t, request{method: http.MethodPost, path: "/v1/jobs/j/pause", body: `{"note":"billing down ä"}`})
	a := decodeAccepted(t, resp, b)
	require.Equal(t, codecs.OpPause, a.Op)
	recs := f.prod.records()
	require.Len(t, recs, 1)
	require.Equal(t, codecs.Command{Op: codecs.OpPause, ID: "j", Note: "billing down ä"}, decodeRecord(t, recs[0], "j"))
}

func TestFire(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, trigger string
		payload             []byte
	}{
		{name: "empty body"},
		{name: "empty object", body: `{}`},
		{name: "trigger and payload", body: `{"trigger_id":"x","payload":{"a": 1}}`, trigger: "x", payload: []byte(`{"a":1}`)},
		{name: "payload only", body: `{"payload":[1, 2]}`, payload: []byte(`[1,2]`)},
		{name: "null payload", body: `{"trigger_id":"y","payload":null}`, trigger: "y"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			resp, b := f.do(t, request{method: http.MethodPost, path: "/v1/jobs/j/fire", body: tc.body})
			a := decodeAccepted(t, resp, b)
			require.Equal(t, "j", a.ID)
			require.Equal(t, codecs.OpFire, a.Op)
			if tc.trigger == "" {
				require.Regexp(t, `^t-[0-9a-f]{16}$`, a.TriggerID)
			} else {
				require.Equal(t, tc.trigger, a.TriggerID)
			}
			require.Equal(t, "j@"+a.TriggerID, a.FireID)
			require.Equal(t, codecs.TriggeredFireID("j", a.TriggerID), a.FireID)

			recs := f.prod.records()
			require.Len(t, recs, 1)
			c := decodeRecord(t, recs[0], "j")
			require.Equal(t, codecs.OpFire, c.Op)
			require.Equal(t, a.TriggerID, c.TriggerID)
			require.Equal(t, tc.payload, c.Payload)
		})
	}
}

func TestNewTriggerIDUnique(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 1000 {
		id := api.NewTriggerID()
		require.Regexp(t, `^t-[0-9a-f]{16}$`, id)
		require.False(t, seen[id], "duplicate %s", id)
		seen[id] = true
	}
}

func TestToken(t *testing.T) {
	t.Parallel()
	routes := []request{
		{method: "PUT", path: "/v1/jobs/x", body: `{"every":"1m"}`},
		{method: "DELETE", path: "/v1/jobs/x"},
		{method: "POST", path: "/v1/jobs/x/pause"},
		{method: "POST", path: "/v1/jobs/x/resume"},
		{method: "POST", path: "/v1/jobs/x/fire"},
	}
	auths := []struct {
		name, header string
		ok           bool
	}{
		{"none", "", false},
		{"wrong token", "Bearer nope", false},
		{"token prefix", "Bearer s3cre", false},
		{"token with suffix", "Bearer s3cret2", false},
		{"no scheme", "s3cret", false},
		{"basic scheme", "Basic s3cret", false},
		{"right token", "Bearer s3cret", true},
	}
	for _, rt := range routes {
		for _, au := range auths {
			t.Run(rt.method+" "+rt.path+" "+au.name, func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, func(s *api.Server) { s.Token = "s3cret" })
				rq := rt
				if au.header != "" {
					rq.header = map[string]string{"Authorization": au.header}
				}
				resp, b := f.do(t, rq)
				if au.ok {
					decodeAccepted(t, resp, b)
					require.Len(t, f.prod.records(), 1)
					return
				}
				require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "body: %s", b)
				p := decodeProblem(t, resp, b)
				require.Equal(t, "unauthorized", p.Code)
				require.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")
				require.Empty(t, f.prod.records())
			})
		}
	}

	t.Run("operational routes need no token", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, func(s *api.Server) {
			s.Token = "s3cret"
			s.Gatherer = prometheus.NewRegistry()
		})
		for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
			resp, b := f.do(t, request{method: "GET", path: p})
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", p, b)
		}
	})
}

func TestProducerFailure(t *testing.T) {
	t.Parallel()
	for _, rq := range []request{
		{method: "PUT", path: "/v1/jobs/x", body: `{"every":"1m"}`},
		{method: "DELETE", path: "/v1/jobs/x"},
		{method: "POST", path: "/v1/jobs/x/fire"},
	} {
		t.Run(rq.method+" "+rq.path, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			f.prod.err = errors.New("broker on fire")
			resp, b := f.do(t, rq)
			require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "body: %s", b)
			p := decodeProblem(t, resp, b)
			require.Equal(t, "kafka_unavailable", p.Code)
			require.Contains(t, p.Detail, "broker on fire")
			require.Empty(t, f.prod.records())
		})
	}
}

func TestCustomLimits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(s *api.Server) { s.Limits = codecs.Limits{MaxPayload: 8} })
	resp, b := f.do(t, request{method: "PUT", path: "/v1/jobs/x", body: `{"every":"1m","payload":"1234567"}`})
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "body: %s", b)
	p := decodeProblem(t, resp, b)
	require.Equal(t, codecs.CodePayloadTooLarge, p.Code)
	require.Empty(t, f.prod.records())

	resp, b = f.do(t, request{method: "PUT", path: "/v1/jobs/x", body: `{"every":"1m","payload":"12345"}`})
	decodeAccepted(t, resp, b)
	require.Len(t, f.prod.records(), 1)
}

func TestHealth(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		ready  func() error
		status int
		want   string
	}{
		{"ready nil func", nil, 200, "ready"},
		{"ready", func() error { return nil }, 200, "ready"},
		{"not ready", func() error { return errors.New("partitions still restoring") }, 503, "partitions still restoring"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, func(s *api.Server) { s.Ready = tc.ready })
			resp, b := f.do(t, request{method: "GET", path: "/readyz"})
			require.Equal(t, tc.status, resp.StatusCode, "body: %s", b)
			if tc.status == 200 {
				require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
				require.JSONEq(t, `{"status":"ready"}`, string(b))
			} else {
				p := decodeProblem(t, resp, b)
				require.Equal(t, "not_ready", p.Code)
				require.Contains(t, p.Detail, tc.want)
			}

			resp, b = f.do(t, request{method: "GET", path: "/healthz"})
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.JSONEq(t, `{"status":"ok"}`, string(b))
		})
	}
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	t.Run("served with a gatherer", func(t *testing.T) {
		t.Parallel()
		reg := prometheus.NewRegistry()
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: "chronos_views_test_total", Help: "a test counter"})
		reg.MustRegister(c)
		c.Add(7)
		f := newFixture(t, func(s *api.Server) { s.Gatherer = reg })
		resp, b := f.do(t, request{method: "GET", path: "/metrics"})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Contains(t, string(b), "chronos_views_test_total 7")
	})
	t.Run("404 without a gatherer", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, nil)
		resp, b := f.do(t, request{method: "GET", path: "/metrics"})
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		require.Equal(t, "not_found", decodeProblem(t, resp, b).Code)
	})
}

func TestContentTypeIsParsed(t *testing.T) {
	t.Parallel()
	for ct, want := range map[string]int{
		"application/json":                http.StatusAccepted,
		"APPLICATION/JSON":                http.StatusAccepted,
		"application/json; charset=utf-8": http.StatusAccepted,
		"application/jsonp":               http.StatusUnsupportedMediaType,
		"application/json-seq":            http.StatusUnsupportedMediaType,
		"text/plain":                      http.StatusUnsupportedMediaType,
	} {
		require.Equal(t, want, isJSONStatus(t, ct), ct)
	}
}

func isJSONStatus(t *testing.T, ct string) int {
	f := newFixture(t, nil)
	resp, _ := f.do(t, request{method: "PUT", path: "/v1/jobs/ct", body: `{"every":"1m"}`, header: map[string]string{"Content-Type": ct}})
	return resp.StatusCode
}
