package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/views"
)

// ActorHeader is the record header naming the token (Principal.Name) whose
// request produced a command on chronos-jobs or a trigger on
// chronos-bucket-triggers ("anonymous" without credentials).
const ActorHeader = "chronos-actor"

// LegacyTokenName is the principal name of Server.Token (--api-token).
const LegacyTokenName = "api-token"

// LoopbackHosts returns the Host header values a server listening on addr
// (host:port) accepts when addr is a loopback address: localhost,
// 127.0.0.1 and [::1] with its port, plus the address itself. It returns
// nil for any other address (any Host accepted). A page on another site
// that rebinds its DNS name to 127.0.0.1 still sends its own name as Host,
// so checking Host closes DNS rebinding.
func LoopbackHosts(addr string) []string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	ip := net.ParseIP(host)
	if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil
	}
	hosts := []string{"localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port}
	if self := net.JoinHostPort(host, port); !slices.Contains(hosts, self) {
		hosts = append(hosts, self)
	}
	return hosts
}

// hostOnly returns a Host header's host without its port.
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

// guard wraps the whole mux: the Host check and the security headers apply
// to every answer, including probes and problems.
func (s *Server) guard(next http.Handler, hosts []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
		h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
		h.Set("Referrer-Policy", "no-referrer")
		if len(hosts) > 0 && !slices.Contains(hosts, strings.ToLower(r.Host)) && !slices.Contains(hosts, strings.ToLower(hostOnly(r.Host))) {
			writeProblem(w, http.StatusForbidden, "host_not_allowed", "Host",
				fmt.Sprintf("Host %q is not this instance's address (allowed: %s); a page that rebinds its DNS name to loopback cannot reach it",
					r.Host, strings.Join(hosts, ", ")))
			return
		}
		if r.Method == http.MethodOptions && r.Header.Get("Origin") != "" {
			s.preflight(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// originAllowed reports whether a request's Origin may use the API: no
// Origin (not a browser, or a same-origin GET), the same origin as the
// request's Host, or one of AllowedOrigins.
func (s *Server) originAllowed(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	if o == "http://"+r.Host || o == "https://"+r.Host {
		return true
	}
	return slices.Contains(s.AllowedOrigins, o)
}

// preflight answers a CORS preflight: granted (204 with the CORS headers)
// only for an Origin in AllowedOrigins, else 403.
func (s *Server) preflight(w http.ResponseWriter, r *http.Request) {
	o := r.Header.Get("Origin")
	if !slices.Contains(s.AllowedOrigins, o) {
		writeProblem(w, http.StatusForbidden, "origin_not_allowed", "Origin",
			fmt.Sprintf("Origin %q is not allowed to use this API (see --allowed-origins)", o))
		return
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", o)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Allow-Methods", "GET, PUT, POST, DELETE")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, If-Match")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

// authenticate returns the principal of a request: Anonymous on a server
// without credentials, else the token's (false: no valid token).
func (s *Server) authenticate(r *http.Request) (Principal, bool) {
	if s.Token == "" && s.Tokens.Len() == 0 {
		return Anonymous, true
	}
	secret, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || secret == "" {
		return Principal{}, false
	}
	p, found := s.Tokens.Authenticate(secret)
	if s.Token != "" {
		// Hashes first: equal lengths, so the comparison takes the same
		// time whatever the secret's length.
		a, b := sha256.Sum256([]byte(secret)), sha256.Sum256([]byte(s.Token))
		if subtle.ConstantTimeCompare(a[:], b[:]) == 1 {
			p, found = Principal{Name: LegacyTokenName, Role: RoleAdmin}, true
		}
	}
	return p, found
}

// api wraps a /v1 handler: the Origin check, the token, its role and its
// prefix (for routes with {id}, {bucket}, {prefix} or {trigger_id}), then
// Content-Type on writes.
func (s *Server) api(role Role, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.originAllowed(r) {
			writeProblem(w, http.StatusForbidden, "origin_not_allowed", "Origin",
				fmt.Sprintf("Origin %q is not allowed to use this API (see --allowed-origins)", r.Header.Get("Origin")))
			return
		}
		if o := r.Header.Get("Origin"); o != "" && slices.Contains(s.AllowedOrigins, o) {
			w.Header().Set("Access-Control-Allow-Origin", o)
			w.Header().Add("Vary", "Origin")
			w.Header().Set("Access-Control-Expose-Headers", "ETag")
		}
		p, ok := s.authenticate(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="chronos"`)
			writeProblem(w, http.StatusUnauthorized, "unauthorized", "", "a valid bearer token is required (Authorization: Bearer <token>)")
			return
		}
		if p.Role < role {
			writeProblem(w, http.StatusForbidden, "forbidden", "",
				fmt.Sprintf("token %q has role %s; this request needs %s", p.Name, p.Role, role))
			return
		}
		for _, field := range []string{"id", "bucket", "prefix", "trigger_id"} {
			if v := r.PathValue(field); v != "" && !p.owns(v) {
				writeProblem(w, http.StatusForbidden, "forbidden", field,
					fmt.Sprintf("token %q is confined to %ss starting with %s", p.Name, field, strconv.Quote(p.Prefix)))
				return
			}
		}
		if ct := r.Header.Get("Content-Type"); (r.Method == http.MethodPost || r.Method == http.MethodPut) && !isJSON(ct) &&
			(r.URL.Path != ImportPath || !isNDJSON(ct)) {
			// Even without a body: a browser sends a body-less or text/plain
			// POST without asking first (no preflight); application/json it
			// must ask for.
			writeProblem(w, http.StatusUnsupportedMediaType, codecs.CodeMalformed, "Content-Type",
				"Content-Type must be application/json (also for a request without a body; application/x-ndjson for "+ImportPath+")")
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	}
}

// principal returns the request's principal (Anonymous outside api, which
// does not happen for /v1 handlers).
func principal(r *http.Request) Principal {
	if p, ok := PrincipalFrom(r.Context()); ok {
		return p
	}
	return Anonymous
}

// maxListRounds bounds the view pages one list request of a confined token
// reads.
const maxListRounds = 10

// JobFilterer is a JobReader that also filters by id prefix and state
// (*views.Jobs is one); GET /v1/jobs takes prefix and status only from one.
type JobFilterer interface {
	ListWhere(f views.Filter, cursor string, limit int) ([]views.Summary, string, error)
}

// errNoFilters answers prefix or status on a server whose JobReader does
// not filter.
var errNoFilters = errors.New("api: this instance's job view does not filter by prefix or status")

// list lists one page of the jobs f selects.
func (s *Server) list(f views.Filter, cursor string, limit int) ([]views.Summary, string, error) {
	if jf, ok := s.Jobs.(JobFilterer); ok {
		return jf.ListWhere(f, cursor, limit)
	}
	if f.Prefix != "" || f.Status != "" {
		return nil, "", errNoFilters
	}
	return s.Jobs.List(f.Bucket, cursor, limit)
}

// listFor lists like list, keeping only the jobs p owns. A confined
// token's page may be short, even empty, with a next_cursor: one request
// reads at most maxListRounds pages of the view, so another tenant's many
// jobs cost each request a bounded amount of work. Where the view filters
// by prefix, a confined token's listing reads only its own ids.
func (s *Server) listFor(p Principal, f views.Filter, cursor string, limit int) ([]views.Summary, string, error) {
	if p.Prefix == "" {
		return s.list(f, cursor, limit)
	}
	out := []views.Summary{}
	switch {
	case strings.HasPrefix(f.Prefix, p.Prefix):
	case strings.HasPrefix(p.Prefix, f.Prefix):
		if _, ok := s.Jobs.(JobFilterer); ok {
			f.Prefix = p.Prefix // the same jobs, without reading the others
		}
	default:
		return out, "", nil // no id has both prefixes
	}
	for range maxListRounds {
		page, next, err := s.list(f, cursor, limit-len(out))
		if err != nil {
			return nil, "", err
		}
		for _, j := range page {
			if p.owns(j.ID) {
				out = append(out, j)
			}
		}
		if cursor = next; cursor == "" || len(out) == limit {
			break
		}
	}
	return out, cursor, nil
}
