package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/views"
)

// htmlPayload returns a random JSON value whose strings are drawn mostly
// from the characters encoding/json escapes for HTML (<, >, &, U+2028,
// U+2029), as in a payload carrying a URL query (?a=1&b=2).
func htmlPayload(rng *rand.Rand, depth int) string {
	alphabet := []string{"<", ">", "&", "\u2028", "\u2029", "?a=1&b=2", `\"`, `\u0026`, "x", "ä", " "}
	str := func() string {
		var b strings.Builder
		b.WriteByte('"')
		for range 1 + rng.IntN(6) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		b.WriteByte('"')
		return b.String()
	}
	switch k := rng.IntN(3); {
	case depth > 1 || k == 0:
		return str()
	case k == 1:
		return "[" + htmlPayload(rng, depth+1) + ", " + strconv.Itoa(rng.IntN(9)) + "]"
	default:
		return "{" + str() + ": " + htmlPayload(rng, depth+1) + "}"
	}
}

// TestPutPayloadAsSent puts jobs whose generated payloads hold <, >, & and
// U+2028 (issue 20, bug 1). Promise: the job is stored with the payload as
// sent (compacted) and the PUT answers 200 with the job, not 202 after the
// read-your-writes wait. The wait is long (a minute), so 200 means the
// view's job was recognized; on the bug the command encoder HTML-escaped
// the payload ("\u003c"), the stored bytes never equalled the sent ones
// and the PUT answered 202 when the wait ran out.
func TestPutPayloadAsSent(t *testing.T) {
	t.Parallel()
	jobs := newFakeJobs()
	f := newFixture(t, func(s *api.Server) {
		s.Jobs = jobs
		s.ReadYourWrites = time.Minute
		s.Producer = hookProducer{Producer: s.Producer, after: applyPuts(t, jobs)}
	})
	rng := rand.New(rand.NewPCG(20, 1))
	for i := range 60 {
		payload := htmlPayload(rng, 0)
		body := `{"every":"1h","payload":` + payload + `}`
		resp, b := f.do(t, request{method: http.MethodPut, path: "/v1/jobs/j" + strconv.Itoa(i), body: body})
		require.Equal(t, http.StatusOK, resp.StatusCode, "case %d %s: %s", i, body, b)
		require.NotEmpty(t, resp.Header.Get("ETag"))
		j := decodeJob(t, resp, b)
		var compact bytes.Buffer
		require.NoError(t, json.Compact(&compact, []byte(payload)))
		// The answer is JSON-encoded again (HTML-escaped): equal as JSON.
		require.JSONEq(t, payload, string(j.Job.Payload), "case %d: the answer's payload", i)
		recs := f.prod.records()
		c := decodeRecord(t, recs[len(recs)-1], "j"+strconv.Itoa(i))
		require.Equal(t, compact.String(), string(c.Job.Payload), "case %d: the command's payload", i)
	}
}

// TestValidationBeforeIfMatch sends requests the scheduler would refuse
// with and without If-Match (issue 20, bug 2). Promise: the answer is the
// same 400 either way; on the bug a mismatching If-Match answered 412
// first, hiding what is wrong with the request.
func TestValidationBeforeIfMatch(t *testing.T) {
	t.Parallel()
	jobs := newFakeJobs(views.Job{ID: "j", Version: 4})
	f := newFixture(t, func(s *api.Server) { s.Jobs = jobs })
	bad := []struct{ id, body string }{
		{strings.Repeat("i", codecs.MaxIDLen+1), `{"every":"1m"}`},
		{"__chronos/x", `{"every":"1m"}`},
		{"j", `{}`},
		{"j", `{"every":"soon"}`},
		{"j", `{"every":"1m","cron":"* * * * *"}`},
		{"j", `{"cron":"61 * * * *"}`},
		{"j", `{"every":"1m","tz":"Mars/Olympus"}`},
		{"j", `{"every":"1m","bucket":" b"}`},
		{"j", `{"every":"1m","misfire_policy":"later"}`},
		{"j", `{"every":"1m","misfire_grace":"-1s"}`},
		{"j", `{"at":"0001-01-01T00:00:00Z"}`},
		{"j", `{"every":"1m","dst":{"gap":"skip"}}`},
		{"j", `{"every":"1m","payload":"` + strings.Repeat("p", codecs.DefaultMaxPayload) + `"}`},
		{"a\u200bb", `{"every":"1m"}`},
	}
	for _, tc := range bad {
		path := "/v1/jobs/" + url.PathEscape(tc.id)
		resp, b := f.do(t, request{method: http.MethodPut, path: path, body: tc.body})
		require.GreaterOrEqual(t, resp.StatusCode, 400, "%+v: %s", tc, b)
		want := decodeProblem(t, resp, b)
		for _, im := range []string{`"0"`, `"3"`, `"4"`, `"99"`} {
			resp, b := f.do(t, request{method: http.MethodPut, path: path, body: tc.body, header: map[string]string{"If-Match": im}})
			require.Equal(t, want.Status, resp.StatusCode, "%+v If-Match %s: %s", tc, im, b)
			got := decodeProblem(t, resp, b)
			require.Equal(t, want.Code, got.Code, "%+v If-Match %s", tc, im)
			require.Equal(t, want.Field, got.Field, "%+v If-Match %s", tc, im)
		}
	}
	require.Empty(t, f.prod.records())
}

// TestIfMatchFormat checks the documented If-Match format: a version as
// its ETag ("3"), also weak (W/"3") or unquoted, at most 19 digits.
func TestIfMatchFormat(t *testing.T) {
	t.Parallel()
	jobs := newFakeJobs(views.Job{ID: "j", Version: 3})
	f := newFixture(t, func(s *api.Server) { s.Jobs = jobs; s.ReadYourWrites = time.Millisecond })
	for im, ok := range map[string]bool{
		`"3"`: true, `W/"3"`: true, `3`: true, `"03"`: true,
		`"3`: false, `3"`: false, `W3`: false, `W/3W`: false, `"W/3"`: false, `*`: false, `"3", "4"`: false,
		`""`: false, `"-3"`: false, `" 3"`: false, `"` + strings.Repeat("0", 20) + `"`: false,
	} {
		resp, b := f.do(t, request{method: http.MethodPut, path: "/v1/jobs/j", body: `{"every":"1m"}`, header: map[string]string{"If-Match": im}})
		if ok {
			require.Equal(t, http.StatusAccepted, resp.StatusCode, "If-Match %s: %s", im, b)
			continue
		}
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "If-Match %s: %s", im, b)
		require.Equal(t, "If-Match", decodeProblem(t, resp, b).Field)
	}
	// Present but empty, or given twice: not a version either.
	for _, ims := range [][]string{{""}, {`"3"`, `"3"`}} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, f.ts.URL+"/v1/jobs/j", strings.NewReader(`{"every":"1m"}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header["If-Match"] = ims
		resp, err := f.ts.Client().Do(req)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "If-Match %q: %s", ims, b)
		require.Equal(t, "If-Match", decodeProblem(t, resp, b).Field)
	}
}

// TestListBucketQueryValidated: ?bucket= follows the bucket name rules
// (issue 20: a bucket over the limit answered 200 with an empty list).
func TestListBucketQueryValidated(t *testing.T) {
	t.Parallel()
	jobs := newFakeJobs()
	f := newFixture(t, func(s *api.Server) { s.Jobs = jobs })
	for _, b := range []string{strings.Repeat("b", codecs.MaxBucketLen+1), "a\x01", " b", "b ", ".", "a\u00a0b"} {
		resp, body := f.do(t, request{method: http.MethodGet, path: "/v1/jobs?bucket=" + url.QueryEscape(b)})
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%q: %s", b, body)
		p := decodeProblem(t, resp, body)
		require.Equal(t, codecs.CodeInvalidField, p.Code)
		require.Equal(t, "bucket", p.Field)
	}
	for _, b := range []string{"", "b", strings.Repeat("b", codecs.MaxBucketLen), "ä b"} {
		resp, body := f.do(t, request{method: http.MethodGet, path: "/v1/jobs?bucket=" + url.QueryEscape(b)})
		require.Equal(t, http.StatusOK, resp.StatusCode, "%q: %s", b, body)
	}
}
