package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/topology"
	"github.com/chronos-scheduler/chronos/views"
)

// Producer produces one command and waits for its acknowledgement.
type Producer interface {
	ProduceSync(ctx context.Context, rs ...*kgo.Record) kgo.ProduceResults
}

// Server is the HTTP API of one instance. Safe for concurrent use.
type Server struct {
	// Names are the topic names commands go to.
	Names topology.Names
	// Limits are the command limits (default codecs.DefaultLimits()).
	Limits codecs.Limits
	// Producer sends commands (required).
	Producer Producer
	// Ready reports readiness for /readyz (nil: always ready).
	Ready func() error
	// Gatherer serves /metrics (nil: no /metrics).
	Gatherer prometheus.Gatherer
	// Token, when set, is a legacy (--api-token) secret accepted as
	// "Authorization: Bearer <token>" on /v1 with role admin, named
	// LegacyTokenName. Deprecated: use Tokens.
	Token string
	// Tokens are the named, hashed tokens accepted on /v1 (with Token).
	// With neither, /v1 is open to everyone as Anonymous.
	Tokens *Tokens
	// AllowedOrigins are the browser origins ("https://ops.example.com")
	// besides the API's own that may call /v1 (default: none). A request
	// with another Origin is refused (403) and so is its preflight.
	AllowedOrigins []string
	// AllowedHosts, when set, are the only Host header values answered
	// (else 403), each "host:port" or "host" (any port): set it to
	// LoopbackHosts(addr) on loopback against DNS rebinding. Empty: any Host.
	AllowedHosts []string
	// Timeout bounds producing one command (default 10s).
	Timeout time.Duration
	// Jobs serves the read API and read-your-writes (nil: reads answer 503).
	Jobs JobReader
	// History serves each job's fires and changes (nil: those routes answer 503).
	History HistoryReader
	// Calendars serves GET /v1/calendars/{name} (nil: it answers 503).
	Calendars CalendarReader
	// ReadYourWrites bounds how long PUT waits for the view to show the new
	// version before answering 202 (default 3s).
	ReadYourWrites time.Duration
	// Console, when set, answers GET and HEAD of "/" and "/console/…" (the
	// web console's page and assets) behind the same Host check; it sets
	// its own Content-Security-Policy. Nil: those paths answer 404.
	Console http.Handler

	importOnce sync.Once
	imports    chan struct{} // one import at a time (importSlot)
}

// JobReader is the read side of the API (implemented by *Jobs).
type JobReader interface {
	Get(id string) (*views.Job, error)
	Version(id string) (uint64, error)
	List(bucket, cursor string, limit int) ([]views.Summary, string, error)
}

// maxBody is the largest request body: the payload limit plus room for the
// rest of the definition.
func (s *Server) maxBody() int64 { return int64(s.limits().MaxPayload) + 16<<10 }

func (s *Server) limits() codecs.Limits {
	if s.Limits == (codecs.Limits{}) {
		return codecs.DefaultLimits()
	}
	return s.Limits
}

// route is one registered pattern; handler returns nil when this server
// does not serve it (GET /metrics without a Gatherer).
type route struct {
	pattern string
	handler func(s *Server) http.Handler
}

// v1 is a /v1 route's handler behind the api checks with the role it needs.
func v1(role Role, h func(s *Server) http.HandlerFunc) func(s *Server) http.Handler {
	return func(s *Server) http.Handler { return s.api(role, h(s)) }
}

// routeTable is the single list of routes: Handler registers it and Routes
// reports it (docs/openapi.json must document each one).
var routeTable = append([]route{
	{"GET /v1/jobs", v1(RoleRead, func(s *Server) http.HandlerFunc { return s.listJobs })},
	{"GET /v1/jobs/{id}", v1(RoleRead, func(s *Server) http.HandlerFunc { return s.getJob })},
	{"GET /v1/jobs/{id}/fires", v1(RoleRead, func(s *Server) http.HandlerFunc { return s.jobFires })},
	{"GET /v1/jobs/{id}/history", v1(RoleRead, func(s *Server) http.HandlerFunc { return s.jobChanges })},
	{"PUT /v1/jobs/{id}", v1(RoleWrite, func(s *Server) http.HandlerFunc { return s.putJob })},
	{"POST /v1/buckets/{bucket}/trigger", v1(RoleWrite, func(s *Server) http.HandlerFunc { return s.triggerBucket })},
	{"DELETE /v1/jobs/{id}", v1(RoleWrite, func(s *Server) http.HandlerFunc { return s.deleteJob })},
	{"POST /v1/jobs/{id}/pause", v1(RoleWrite, func(s *Server) http.HandlerFunc { return s.pause })},
	{"POST /v1/jobs/{id}/resume", v1(RoleWrite, func(s *Server) http.HandlerFunc { return s.op(codecs.OpResume) })},
	{"POST /v1/jobs/{id}/fire", v1(RoleWrite, func(s *Server) http.HandlerFunc { return s.fire })},
	{"POST /v1/jobs/{id}/backfill", v1(RoleWrite, func(s *Server) http.HandlerFunc { return s.backfill })},
	{"DELETE /v1/jobs/{id}/backfill", v1(RoleWrite, func(s *Server) http.HandlerFunc { return s.cancelBackfill })},
	{"GET /v1/whoami", v1(RoleRead, func(*Server) http.HandlerFunc { return whoami })},
	{"POST " + ImportPath, v1(RoleWrite, func(s *Server) http.HandlerFunc { return s.importJobs })},
	{"GET /healthz", func(*Server) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, map[string]string{"status": "ok"}) })
	}},
	{"GET /readyz", func(s *Server) http.Handler { return http.HandlerFunc(s.readyz) }},
	{"GET /metrics", func(s *Server) http.Handler {
		if s.Gatherer == nil {
			return nil
		}
		return promhttp.HandlerFor(s.Gatherer, promhttp.HandlerOpts{})
	}},
}, append(bulkRoutes(), calendarRoutes()...)...)

// Routes returns the patterns Handler registers, like "GET /v1/jobs/{id}"
// ("GET /metrics" only when the server has a Gatherer).
func Routes() []string {
	out := make([]string, len(routeTable))
	for i, rt := range routeTable {
		out[i] = rt.pattern
	}
	return out
}

// Handler returns the routes.
func (s *Server) Handler() http.Handler { return s.handler(routeTable, s.AllowedHosts) }

// ProbeHandler returns only GET /healthz, /readyz and /metrics, for a
// listener of their own (--probe-addr) that answers while the API's is
// saturated; hosts, when set, are the Host values it answers (see
// LoopbackHosts).
func (s *Server) ProbeHandler(hosts []string) http.Handler {
	var probes []route
	for _, rt := range routeTable {
		if !strings.Contains(rt.pattern, " /v1/") {
			probes = append(probes, rt)
		}
	}
	return s.handler(probes, hosts)
}

func (s *Server) handler(routes []route, hosts []string) http.Handler {
	mux := http.NewServeMux()
	for _, rt := range routes {
		if h := rt.handler(s); h != nil {
			mux.Handle(rt.pattern, h)
		}
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// This catch-all also matches known paths with the wrong method,
		// which deserve a 405 with Allow rather than a 404.
		if allow := allowed(mux, r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeProblem(w, http.StatusMethodNotAllowed, "method_not_allowed", "",
				r.Method+" "+r.URL.Path+" is not allowed; use "+strings.Join(allow, " or "))
			return
		}
		if s.Console != nil && (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
			(r.URL.Path == "/" || strings.HasPrefix(r.URL.Path, "/console/")) {
			s.Console.ServeHTTP(w, r)
			return
		}
		writeProblem(w, http.StatusNotFound, "not_found", "", "no route "+r.Method+" "+r.URL.Path)
	})
	return s.guard(mux, hosts)
}

// allowed lists the methods with a route (other than the catch-all) for r's path.
func allowed(mux *http.ServeMux, r *http.Request) []string {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		r2 := r.Clone(r.Context())
		r2.Method = m
		if _, pattern := mux.Handler(r2); pattern != "" && pattern != "/" {
			allow = append(allow, m)
		}
	}
	return allow
}

// Whoami is the answer of GET /v1/whoami: the principal of the request's
// token (the web console shows write buttons only for role write or admin).
type Whoami struct {
	Name   string `json:"name"`
	Role   string `json:"role"`
	Prefix string `json:"prefix,omitempty"`
}

func whoami(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	writeJSON(w, http.StatusOK, Whoami{Name: p.Name, Role: p.Role.String(), Prefix: p.Prefix})
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	if s.Ready != nil {
		if err := s.Ready(); err != nil {
			writeProblem(w, http.StatusServiceUnavailable, "not_ready", "", err.Error())
			return
		}
	}
	writeJSON(w, 200, map[string]string{"status": "ready"})
}

// readBody reads a JSON body within the size limit; empty is allowed when optional.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, optional bool) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody()))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		writeProblem(w, http.StatusRequestEntityTooLarge, codecs.CodePayloadTooLarge, "", "request body over the limit")
		return nil, false
	case err != nil:
		writeProblem(w, http.StatusBadRequest, codecs.CodeMalformed, "", "reading body: "+err.Error())
		return nil, false
	case len(bytes.TrimSpace(body)) == 0 && !optional:
		writeProblem(w, http.StatusBadRequest, codecs.CodeMalformed, "", "empty body: send the job definition as JSON")
		return nil, false
	}
	return body, true
}

func (s *Server) putJob(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	body, ok := s.readBody(w, r, false)
	if !ok {
		return
	}
	// The same strict decoder as a put's "job" on chronos-jobs: exact
	// field names, no unknown fields, no key twice.
	def, err := codecs.DecodeJobDef(body)
	if err != nil {
		writeError(w, err)
		return
	}
	if p := principal(r); def.Bucket != "" && !p.owns(def.Bucket) {
		writeProblem(w, http.StatusForbidden, "forbidden", "bucket",
			fmt.Sprintf("token %q is confined to buckets starting with %q", p.Name, p.Prefix))
		return
	}
	m := codecs.CommandMsg{Op: codecs.OpPut, ID: id, Job: &def}
	if ims := r.Header.Values("If-Match"); len(ims) > 0 {
		// Present but empty, or given twice, is not a version either.
		want, ok := parseIfMatch(strings.Join(ims, ", "))
		if !ok {
			writeProblem(w, http.StatusBadRequest, codecs.CodeMalformed, "If-Match", `If-Match must be a job version as its ETag, like "3"`)
			return
		}
		m.IfVersion = &want
	}
	// Validate before the precondition: a request the scheduler would
	// refuse is a 400 whatever the job's version.
	value, ok := s.encode(w, m)
	if !ok {
		return
	}
	var before uint64
	var viewErr error
	if s.Jobs != nil {
		before, viewErr = s.Jobs.Version(id)
		// A conditional put needs the view for the API's check; a plain
		// one only for its read-your-writes wait, which it then skips
		// (an instance that is starting recovers its scheduling groups
		// before its job view: adversary round 58).
		if viewErr != nil && m.IfVersion != nil {
			writeProblem(w, http.StatusServiceUnavailable, "view_unavailable", "", viewErr.Error())
			return
		}
	}
	if m.IfVersion != nil && s.Jobs != nil && *m.IfVersion != before {
		writeProblem(w, http.StatusPreconditionFailed, codecs.CodeVersionConflict, "If-Match",
			fmt.Sprintf("job %q is at version %d", id, before))
		return
	}
	a, ok := s.produceEncoded(w, r, m, value)
	if !ok {
		return
	}
	if viewErr != nil {
		writeJSON(w, http.StatusAccepted, a)
		return
	}
	// produce validated def, so this cannot fail: it is what the view will
	// show once this put is applied.
	norm, _ := def.Validate(s.limits())
	if job := s.awaitVersion(r.Context(), id, before, norm.Def()); job != nil {
		w.Header().Set("ETag", etag(job.Version))
		writeJSON(w, http.StatusOK, job)
		return
	}
	writeJSON(w, http.StatusAccepted, a)
}

// awaitVersion waits (bounded) until the view shows a version of id newer
// than before with the definition want, and returns it; nil when the wait
// runs out. A newer version with another definition is a concurrent
// writer's, not this put's.
func (s *Server) awaitVersion(ctx context.Context, id string, before uint64, want codecs.JobDef) *views.Job {
	if s.Jobs == nil {
		return nil
	}
	deadline := time.Now().Add(s.readYourWrites())
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if job, err := s.Jobs.Get(id); err == nil && job.Version > before && sameDef(job.Job, want) {
			return job
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// sameDef reports whether two normalized definitions are equal.
func sameDef(a, b codecs.JobDef) bool {
	if !bytes.Equal(a.Payload, b.Payload) {
		return false
	}
	a.Payload, b.Payload = nil, nil
	return reflect.DeepEqual(a, b)
}

func etag(v uint64) string { return `"` + strconv.FormatUint(v, 10) + `"` }

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	if s.Jobs == nil {
		writeProblem(w, http.StatusServiceUnavailable, "view_unavailable", "", "this instance serves no job view")
		return
	}
	id := r.PathValue("id")
	nq, ok := getJobNext(w, r)
	if !ok {
		return
	}
	job, err := s.Jobs.Get(id)
	switch {
	case errors.Is(err, views.ErrNotFound):
		writeProblem(w, http.StatusNotFound, "not_found", "id", fmt.Sprintf("no job %q", id))
	case err != nil:
		writeProblem(w, http.StatusServiceUnavailable, "view_unavailable", "", err.Error())
	default:
		s.nextFires(job, nq)
		w.Header().Set("ETag", etag(job.Version))
		writeJSON(w, http.StatusOK, job)
	}
}

// JobList is the answer of GET /v1/jobs.
type JobList struct {
	Jobs       []views.Summary `json:"jobs"`
	NextCursor string          `json:"next_cursor,omitempty"`
}

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) {
	if s.Jobs == nil {
		writeProblem(w, http.StatusServiceUnavailable, "view_unavailable", "", "this instance serves no job view")
		return
	}
	q := r.URL.Query()
	for k := range q {
		if k != "bucket" && k != "limit" && k != "cursor" && k != "prefix" && k != "status" {
			writeProblem(w, http.StatusBadRequest, codecs.CodeUnknownField, k, "unknown query parameter "+strconv.Quote(k)+"; use bucket, prefix, status, limit, cursor")
			return
		}
	}
	f := views.Filter{Bucket: q.Get("bucket"), Prefix: q.Get("prefix"), Status: q.Get("status")}
	if len(f.Prefix) > codecs.MaxIDLen || !utf8.ValidString(f.Prefix) {
		writeProblem(w, http.StatusBadRequest, codecs.CodeInvalidField, "prefix", fmt.Sprintf("prefix must be UTF-8 of at most %d bytes", codecs.MaxIDLen))
		return
	}
	switch f.Status {
	case "", "active", "paused", "completed":
	default:
		writeProblem(w, http.StatusBadRequest, codecs.CodeInvalidField, "status", "status must be active, paused or completed")
		return
	}
	limit, ok := intParam(q, "limit", 100, 1, 1000)
	if !ok {
		writeProblem(w, http.StatusBadRequest, codecs.CodeInvalidField, "limit", "limit must be 1..1000")
		return
	}
	if err := codecs.ValidateBucket(f.Bucket); err != nil {
		writeError(w, err)
		return
	}
	jobs, next, err := s.listFor(principal(r), f, q.Get("cursor"), limit)
	switch {
	case errors.Is(err, views.ErrBadCursor):
		writeProblem(w, http.StatusBadRequest, codecs.CodeInvalidField, "cursor", "invalid cursor; pass back next_cursor unchanged")
	case errors.Is(err, errNoFilters):
		writeProblem(w, http.StatusBadRequest, codecs.CodeInvalidField, "prefix", err.Error())
	case err != nil:
		writeProblem(w, http.StatusServiceUnavailable, "view_unavailable", "", err.Error())
	default:
		writeJSON(w, http.StatusOK, JobList{Jobs: jobs, NextCursor: next})
	}
}

// intParam returns the query parameter name as an integer from lo to hi,
// def when absent; false when given empty, twice or out of range.
func intParam(q url.Values, name string, def, lo, hi int) (int, bool) {
	vs, ok := q[name]
	if !ok {
		return def, true
	}
	if len(vs) != 1 {
		return 0, false
	}
	n, err := strconv.Atoi(vs[0])
	return n, err == nil && n >= lo && n <= hi
}

// TriggerAccepted is the answer of POST /v1/buckets/{bucket}/trigger.
type TriggerAccepted struct {
	Bucket    string `json:"bucket"`
	TriggerID string `json:"trigger_id"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// encodeBucketTrigger encodes bt and checks it as the router will decode
// it, answering the error itself (ok false) when it would be rejected.
func (s *Server) encodeBucketTrigger(w http.ResponseWriter, bt codecs.BucketTrigger) (value []byte, ok bool) {
	value, err := codecs.EncodeBucketTrigger(bt)
	if err == nil {
		_, err = codecs.DecodeBucketTrigger(value, 0, 0, s.limits())
	}
	if err != nil {
		writeError(w, err)
		return nil, false
	}
	return value, true
}

func (s *Server) triggerBucket(w http.ResponseWriter, r *http.Request) {
	fb, ok := s.readTrigger(w, r)
	if !ok {
		return
	}
	bt := codecs.BucketTrigger{Bucket: r.PathValue("bucket"), TriggerID: fb.TriggerID, Payload: fb.Payload}
	value, ok := s.encodeBucketTrigger(w, bt)
	if !ok {
		return
	}
	rec := &kgo.Record{Topic: string(s.Names.BucketTriggers()), Key: []byte(bt.Bucket), Value: value, Headers: actor(r)}
	if !s.produceRecord(w, r, rec) {
		return
	}
	writeJSON(w, http.StatusAccepted, TriggerAccepted{Bucket: bt.Bucket, TriggerID: bt.TriggerID, Partition: rec.Partition, Offset: rec.Offset})
}

// deleteJob writes a delete command and, when the view showed the job,
// waits (bounded, like a put's read-your-writes) until it no longer does,
// so that a GET on this instance after the 202 answers 404.
func (s *Server) deleteJob(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	m := codecs.CommandMsg{Op: codecs.OpDelete, ID: id}
	value, ok := s.encode(w, m)
	if !ok {
		return
	}
	var before uint64
	if s.Jobs != nil {
		// A view error only skips the wait: the delete does not need it.
		before, _ = s.Jobs.Version(id)
	}
	a, ok := s.produceEncoded(w, r, m, value)
	if !ok {
		return
	}
	if before > 0 {
		s.awaitGone(r.Context(), id, before)
	}
	writeJSON(w, http.StatusAccepted, a)
}

// awaitGone waits (bounded by ReadYourWrites) until the view no longer
// shows version before of id: deleted, or replaced by a newer write.
func (s *Server) awaitGone(ctx context.Context, id string, before uint64) {
	deadline := time.Now().Add(s.readYourWrites())
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if v, err := s.Jobs.Version(id); err == nil && v != before {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *Server) readYourWrites() time.Duration {
	if s.ReadYourWrites == 0 {
		return 3 * time.Second
	}
	return s.ReadYourWrites
}

func (s *Server) op(op string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.send(w, r, codecs.CommandMsg{Op: op, ID: r.PathValue("id")})
	}
}

// decodeTriggerBody decodes the optional body of a fire or bucket trigger
// (empty: none) with codecs' strict rules, answering a problem when it
// cannot.
func decodeTriggerBody(w http.ResponseWriter, body []byte) (codecs.TriggerBody, bool) {
	if len(bytes.TrimSpace(body)) == 0 {
		return codecs.TriggerBody{}, true
	}
	fb, err := codecs.DecodeTriggerBody(body)
	if err != nil {
		writeError(w, err)
		return codecs.TriggerBody{}, false
	}
	return fb, true
}

// readTrigger reads the body of a manual fire or a bucket trigger, with a
// new trigger id if it names none; on a bad body it has answered.
func (s *Server) readTrigger(w http.ResponseWriter, r *http.Request) (codecs.TriggerBody, bool) {
	body, ok := s.readBody(w, r, true)
	if !ok {
		return codecs.TriggerBody{}, false
	}
	fb, ok := decodeTriggerBody(w, body)
	if !ok {
		return codecs.TriggerBody{}, false
	}
	if fb.TriggerID == "" {
		fb.TriggerID = NewTriggerID()
	}
	return fb, true
}

func (s *Server) fire(w http.ResponseWriter, r *http.Request) {
	fb, ok := s.readTrigger(w, r)
	if !ok {
		return
	}
	s.send(w, r, codecs.CommandMsg{Op: codecs.OpFire, ID: r.PathValue("id"), TriggerID: fb.TriggerID, Payload: fb.Payload})
}

// NewTriggerID returns a random trigger id ("t-" and 16 hex digits).
func NewTriggerID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "t-" + hex.EncodeToString(b)
}

// Accepted is the answer to a command: it was validated and written to
// chronos-jobs; the scheduler applies it asynchronously.
type Accepted struct {
	ID        string `json:"id"`
	Op        string `json:"op"`
	TriggerID string `json:"trigger_id,omitempty"`
	FireID    string `json:"fire_id,omitempty"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// send validates and produces a command and answers 202.
func (s *Server) send(w http.ResponseWriter, r *http.Request, m codecs.CommandMsg) {
	if a, ok := s.produce(w, r, m); ok {
		writeJSON(w, http.StatusAccepted, a)
	}
}

// produce validates a command exactly as the scheduler will, then produces
// it; on failure it has answered with a problem.
func (s *Server) produce(w http.ResponseWriter, r *http.Request, m codecs.CommandMsg) (Accepted, bool) {
	value, ok := s.encode(w, m)
	if !ok {
		return Accepted{}, false
	}
	return s.produceEncoded(w, r, m, value)
}

// encode encodes a command and validates it exactly as the scheduler will;
// on failure it has answered with a problem.
func (s *Server) encode(w http.ResponseWriter, m codecs.CommandMsg) ([]byte, bool) {
	value, err := codecs.EncodeCommand(m)
	if err == nil {
		_, err = codecs.DecodeCommand([]byte(m.ID), value, s.limits())
	}
	if err != nil {
		writeError(w, err)
		return nil, false
	}
	return value, true
}

// produceEncoded produces the command m encoded (and validated) as value.
func (s *Server) produceEncoded(w http.ResponseWriter, r *http.Request, m codecs.CommandMsg, value []byte) (Accepted, bool) {
	rec := &kgo.Record{Topic: string(s.Names.Jobs()), Key: []byte(m.ID), Value: value, Headers: actor(r)}
	if !s.produceRecord(w, r, rec) {
		return Accepted{}, false
	}
	a := Accepted{ID: m.ID, Op: m.Op, TriggerID: m.TriggerID, Partition: rec.Partition, Offset: rec.Offset}
	if m.Op == codecs.OpFire {
		a.FireID = codecs.TriggeredFireID(m.ID, m.TriggerID)
	}
	return a, true
}

// ifMatch is the If-Match format: a job version as its ETag ("3"), weak
// (W/"3") or unquoted (3) also taken; 19 digits at most, so it fits a
// uint64.
var ifMatch = regexp.MustCompile(`^(?:W/)?(?:"([0-9]{1,19})"|([0-9]{1,19}))$`)

// parseIfMatch returns the version of an If-Match header (false: not one).
func parseIfMatch(h string) (uint64, bool) {
	m := ifMatch.FindStringSubmatch(h)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseUint(m[1]+m[2], 10, 64)
	return v, err == nil
}

// actor is the ActorHeader of a record produced for r.
func actor(r *http.Request) []kgo.RecordHeader {
	return []kgo.RecordHeader{{Key: ActorHeader, Value: []byte(principal(r).Name)}}
}

// produceRecord produces one record within the timeout.
func (s *Server) produceRecord(w http.ResponseWriter, r *http.Request, rec *kgo.Record) bool {
	timeout := s.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	if err := s.Producer.ProduceSync(ctx, rec).FirstErr(); err != nil {
		writeProblem(w, http.StatusServiceUnavailable, "kafka_unavailable", "", "producing: "+err.Error())
		return false
	}
	return true
}

// isJSON reports whether a Content-Type is application/json (any case, any
// parameters such as charset).
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}
