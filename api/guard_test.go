package api_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/views"
)

// pagedJobs is a JobReader over a fixed set of ids, listed in id order; its
// cursor is the last id of the page.
type pagedJobs struct{ ids []string }

func (p pagedJobs) Get(id string) (*views.Job, error) {
	if !slices.Contains(p.ids, id) {
		return nil, views.ErrNotFound
	}
	return &views.Job{ID: id, Version: 1, Status: "active"}, nil
}

func (p pagedJobs) Version(id string) (uint64, error) {
	if slices.Contains(p.ids, id) {
		return 1, nil
	}
	return 0, nil
}

func (p pagedJobs) List(_, cursor string, limit int) ([]views.Summary, string, error) {
	i, _ := slices.BinarySearch(p.ids, cursor)
	if i < len(p.ids) && p.ids[i] == cursor {
		i++
	}
	var out []views.Summary
	for ; i < len(p.ids) && len(out) < limit; i++ {
		out = append(out, views.Summary{ID: p.ids[i], Version: 1, Status: "active"})
	}
	if i < len(p.ids) {
		return out, out[len(out)-1].ID, nil
	}
	return out, "", nil
}

// authFixture is a server with five tokens: two confined to "acme.".
type authFixture struct {
	*fixture
	secrets map[string]string // name -> secret
	tokens  map[string]api.Principal
	ids     []string
}

func newAuthFixture(t *testing.T, configure func(*api.Server)) *authFixture {
	t.Helper()
	a := &authFixture{secrets: map[string]string{}, tokens: map[string]api.Principal{}}
	var lines []string
	for _, p := range []api.Principal{
		{Name: "reader", Role: api.RoleRead},
		{Name: "writer", Role: api.RoleWrite},
		{Name: "admin", Role: api.RoleAdmin},
		{Name: "acme-rw", Role: api.RoleWrite, Prefix: "acme."},
		{Name: "acme-ro", Role: api.RoleRead, Prefix: "acme."},
	} {
		secret, line, err := api.NewToken(p.Name, p.Role, p.Prefix)
		require.NoError(t, err)
		a.secrets[p.Name], a.tokens[p.Name] = secret, p
		lines = append(lines, line)
	}
	tok, err := api.ParseTokens(strings.NewReader(strings.Join(lines, "\n")))
	require.NoError(t, err)
	for i := range 30 {
		a.ids = append(a.ids, fmt.Sprintf("acme.%02d", i), fmt.Sprintf("globex.%02d", i))
	}
	slices.Sort(a.ids)
	a.fixture = newFixture(t, func(s *api.Server) {
		s.Tokens = tok
		s.Jobs = pagedJobs{ids: a.ids}
		s.ReadYourWrites = 1 // do not wait for the fake view
		if configure != nil {
			configure(s)
		}
	})
	return a
}

// apiCall is one generated request and what the oracle expects of it.
type apiCall struct {
	rq     request
	role   api.Role // the role it needs
	id     string   // the job id or bucket it names ("" for a list)
	bucket string   // a put's bucket
	write  bool     // produces a record when accepted
	ok     int      // status when allowed
}

func genCall(rng *rand.Rand) apiCall {
	owner := []string{"acme.", "globex."}[rng.IntN(2)]
	id := fmt.Sprintf("%s%02d", owner, rng.IntN(35)) // some do not exist
	path := "/v1/jobs/" + id
	switch rng.IntN(8) {
	case 0:
		ok := http.StatusOK
		if !slices.Contains([]int{30, 31, 32, 33, 34}, idNumber(id)) {
			return apiCall{rq: request{method: "GET", path: path}, role: api.RoleRead, id: id, ok: ok}
		}
		return apiCall{rq: request{method: "GET", path: path}, role: api.RoleRead, id: id, ok: http.StatusNotFound}
	case 1:
		return apiCall{rq: request{method: "GET", path: fmt.Sprintf("/v1/jobs?limit=%d", 1+rng.IntN(70))}, role: api.RoleRead, ok: http.StatusOK}
	case 2:
		bucket := []string{"", "acme.b", "globex.b"}[rng.IntN(3)]
		body := `{"every":"1m"}`
		if bucket != "" {
			body = `{"every":"1m","bucket":"` + bucket + `"}`
		}
		return apiCall{rq: request{method: "PUT", path: path, body: body}, role: api.RoleWrite, id: id, bucket: bucket, write: true, ok: http.StatusAccepted}
	case 3:
		return apiCall{rq: request{method: "DELETE", path: path}, role: api.RoleWrite, id: id, write: true, ok: http.StatusAccepted}
	case 4:
		return apiCall{rq: request{method: "POST", path: path + "/pause"}, role: api.RoleWrite, id: id, write: true, ok: http.StatusAccepted}
	case 5:
		return apiCall{rq: request{method: "POST", path: path + "/resume"}, role: api.RoleWrite, id: id, write: true, ok: http.StatusAccepted}
	case 6:
		return apiCall{rq: request{method: "POST", path: path + "/fire", body: `{"trigger_id":"t1"}`}, role: api.RoleWrite, id: id, write: true, ok: http.StatusAccepted}
	default:
		b := owner + "b"
		return apiCall{rq: request{method: "POST", path: "/v1/buckets/" + b + "/trigger"}, role: api.RoleWrite, id: b, write: true, ok: http.StatusAccepted}
	}
}

func idNumber(id string) int {
	var n int
	_, _ = fmt.Sscanf(id[strings.IndexByte(id, '.')+1:], "%d", &n)
	return n
}

// TestAuthorizationOracle sends seeded random requests with random tokens
// (none, unknown, or one of five with roles and tenant prefixes) and checks
// each answer against an oracle: 401 without a valid token, 403 for a role
// too low or a job id, bucket or put bucket outside the token's prefix,
// else the route's own answer. Accepted writes carry the token's name in
// the chronos-actor header; refused ones produce nothing; a confined
// token's list shows only its own jobs and, paged to the end, all of them.
func TestAuthorizationOracle(t *testing.T) {
	t.Parallel()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	f := newAuthFixture(t, nil)
	names := []string{"", "unknown", "reader", "writer", "admin", "acme-rw", "acme-ro"}
	for i := range 400 {
		c := genCall(rng)
		name := names[rng.IntN(len(names))]
		c.rq.header = map[string]string{}
		switch name {
		case "":
		case "unknown":
			c.rq.header["Authorization"] = "Bearer chronos_" + strings.Repeat("A", 43)
		default:
			c.rq.header["Authorization"] = "Bearer " + f.secrets[name]
		}
		p, known := f.tokens[name]
		want := c.ok
		switch {
		case !known:
			want = http.StatusUnauthorized
		case p.Role < c.role,
			c.id != "" && !strings.HasPrefix(c.id, p.Prefix),
			c.bucket != "" && !strings.HasPrefix(c.bucket, p.Prefix):
			want = http.StatusForbidden
		}
		before := len(f.prod.records())
		resp, b := f.do(t, c.rq)
		msg := fmt.Sprintf("request %d: %s %s as %q: %s", i, c.rq.method, c.rq.path, name, b)
		require.Equal(t, want, resp.StatusCode, msg)
		if c.rq.method == "GET" && want == http.StatusOK && c.id == "" {
			var l api.JobList
			require.NoError(t, json.Unmarshal(b, &l))
			for _, j := range l.Jobs {
				require.True(t, strings.HasPrefix(j.ID, p.Prefix), msg)
			}
		}
		recs := f.prod.records()
		if want != c.ok || !c.write {
			require.Len(t, recs, before, msg)
			continue
		}
		require.Len(t, recs, before+1, msg)
		h := recs[len(recs)-1].Headers
		require.Len(t, h, 1, msg)
		require.Equal(t, api.ActorHeader, h[0].Key)
		require.Equal(t, name, string(h[0].Value), msg)
	}

	// Paged to the end, a tenant sees exactly its own jobs.
	for name, p := range map[string]api.Principal{"acme-ro": f.tokens["acme-ro"], "reader": f.tokens["reader"]} {
		var got []string
		cursor := ""
		for pages := 0; ; pages++ {
			require.Less(t, pages, 100)
			path := "/v1/jobs?limit=7"
			if cursor != "" {
				path += "&cursor=" + cursor
			}
			resp, b := f.do(t, request{method: "GET", path: path, header: map[string]string{"Authorization": "Bearer " + f.secrets[name]}})
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
			var l api.JobList
			require.NoError(t, json.Unmarshal(b, &l))
			require.LessOrEqual(t, len(l.Jobs), 7)
			for _, j := range l.Jobs {
				got = append(got, j.ID)
			}
			if cursor = l.NextCursor; cursor == "" {
				break
			}
		}
		var want []string
		for _, id := range f.ids {
			if strings.HasPrefix(id, p.Prefix) {
				want = append(want, id)
			}
		}
		require.Equal(t, want, got, name)
	}
}

// TestBrowserSafety sends what a page in a browser can send.
func TestBrowserSafety(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(s *api.Server) {
		s.AllowedOrigins = []string{"https://ops.example.com"}
		s.AllowedHosts = api.LoopbackHosts("127.0.0.1:8080")
		s.Gatherer = prometheus.NewRegistry()
	})
	local := map[string]string{"Host": "127.0.0.1:8080"}
	with := func(kv ...string) map[string]string {
		h := map[string]string{}
		for k, v := range local {
			h[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			h[kv[i]] = kv[i+1]
		}
		return h
	}
	tests := []struct {
		name   string
		rq     request
		status int
		code   string
	}{
		{"cross-origin text/plain pause", request{method: "POST", path: "/v1/jobs/x/pause", body: "{}",
			header: with("Origin", "https://evil.example", "Content-Type", "text/plain")}, 403, "origin_not_allowed"},
		{"cross-origin form trigger", request{method: "POST", path: "/v1/buckets/b/trigger", body: "a=b",
			header: with("Origin", "https://evil.example", "Content-Type", "application/x-www-form-urlencoded")}, 403, "origin_not_allowed"},
		{"cross-origin read", request{method: "GET", path: "/v1/jobs",
			header: with("Origin", "null")}, 403, "origin_not_allowed"},
		{"cross-origin preflight", request{method: "OPTIONS", path: "/v1/jobs/x",
			header: with("Origin", "https://evil.example", "Access-Control-Request-Method", "DELETE")}, 403, "origin_not_allowed"},
		{"same-origin text/plain pause", request{method: "POST", path: "/v1/jobs/x/pause", body: "{}",
			header: with("Origin", "http://127.0.0.1:8080", "Content-Type", "text/plain")}, 415, "malformed"},
		{"form-encoded trigger without origin", request{method: "POST", path: "/v1/buckets/b/trigger", body: "a=b",
			header: with("Content-Type", "application/x-www-form-urlencoded")}, 415, "malformed"},
		{"rebound DNS name", request{method: "POST", path: "/v1/jobs/x/pause",
			header: map[string]string{"Host": "attacker.example:8080"}}, 403, "host_not_allowed"},
		{"rebound DNS name on metrics", request{method: "GET", path: "/metrics",
			header: map[string]string{"Host": "attacker.example:8080"}}, 403, "host_not_allowed"},
		{"loopback on another port", request{method: "GET", path: "/healthz",
			header: map[string]string{"Host": "127.0.0.1:9999"}}, 403, "host_not_allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := f.do(t, tc.rq)
			require.Equal(t, tc.status, resp.StatusCode, "%s", b)
			require.Equal(t, tc.code, decodeProblem(t, resp, b).Code)
			require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
			require.Empty(t, f.prod.records())
		})
	}

	for _, host := range []string{"localhost:8080", "127.0.0.1:8080", "[::1]:8080", "LOCALHOST:8080"} {
		resp, b := f.do(t, request{method: "GET", path: "/healthz", header: map[string]string{"Host": host}})
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", host, b)
	}
	// An allowed origin: the preflight is granted, the request answered
	// with CORS headers.
	resp, _ := f.do(t, request{method: "OPTIONS", path: "/v1/jobs/x",
		header: with("Origin", "https://ops.example.com", "Access-Control-Request-Method", "DELETE")})
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Equal(t, "https://ops.example.com", resp.Header.Get("Access-Control-Allow-Origin"))
	require.Contains(t, resp.Header.Get("Access-Control-Allow-Methods"), "DELETE")
	resp, b := f.do(t, request{method: "DELETE", path: "/v1/jobs/x", header: with("Origin", "https://ops.example.com")})
	decodeAccepted(t, resp, b)
	require.Equal(t, "https://ops.example.com", resp.Header.Get("Access-Control-Allow-Origin"))
	// Same origin needs no list entry.
	resp, b = f.do(t, request{method: "POST", path: "/v1/jobs/x/pause", header: with("Origin", "http://127.0.0.1:8080")})
	decodeAccepted(t, resp, b)
	require.Len(t, f.prod.records(), 2)
}

func TestLoopbackHosts(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"localhost:80", "127.0.0.1:80", "[::1]:80"}, api.LoopbackHosts("127.0.0.1:80"))
	require.Equal(t, []string{"localhost:80", "127.0.0.1:80", "[::1]:80"}, api.LoopbackHosts("localhost:80"))
	require.Equal(t, []string{"localhost:80", "127.0.0.1:80", "[::1]:80", "127.0.0.2:80"}, api.LoopbackHosts("127.0.0.2:80"))
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "10.0.0.1:8080", "[::]:8080", "example.com:80", "nonsense"} {
		require.Nil(t, api.LoopbackHosts(addr), addr)
	}
}

// TestSecurityHeaders checks the headers on every kind of answer.
func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(s *api.Server) { s.Token = "s3cret" })
	for _, rq := range []request{
		{method: "GET", path: "/healthz"},
		{method: "GET", path: "/readyz"},
		{method: "GET", path: "/v1/jobs/x"},
		{method: "DELETE", path: "/v1/jobs/x", header: map[string]string{"Authorization": "Bearer s3cret"}},
		{method: "GET", path: "/nowhere"},
	} {
		resp, _ := f.do(t, rq)
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), rq.path)
		require.Equal(t, "no-store", resp.Header.Get("Cache-Control"), rq.path)
		require.Equal(t, "default-src 'none'; frame-ancestors 'none'", resp.Header.Get("Content-Security-Policy"), rq.path)
	}
}

func TestAllowedHostsWithoutPort(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(s *api.Server) { s.AllowedHosts = []string{"chronos.example.com", "10.0.0.5:8080"} })
	for host, want := range map[string]int{
		"chronos.example.com":      http.StatusOK,
		"chronos.example.com:8080": http.StatusOK,
		"CHRONOS.example.com:443":  http.StatusOK,
		"10.0.0.5:8080":            http.StatusOK,
		"10.0.0.5:9090":            http.StatusForbidden,
		"10.0.0.5":                 http.StatusForbidden,
		"rebound.example:8080":     http.StatusForbidden,
	} {
		resp, b := f.do(t, request{method: "GET", path: "/healthz", header: map[string]string{"Host": host}})
		require.Equal(t, want, resp.StatusCode, "%q: %s", host, b)
	}
}
