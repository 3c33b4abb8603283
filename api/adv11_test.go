package api_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/codecs"
)

// adv11Field is a "key":value pair a client may send.
type adv11Field struct{ key, value string }

var (
	adv11JobFields = []adv11Field{
		{"every", `"1s"`}, {"every", `"0s"`}, {"every", `1`}, {"EVERY", `"1s"`},
		{"cron", `"* * * * *"`}, {"Cron", `"* * * * *"`}, {"cron", `"0 0 30 2 *"`},
		{"tz", `"UTC"`}, {"tz", `"../../etc/passwd"`}, {"TZ", `"UTC"`},
		{"at", `"0001-01-01T00:00:00Z"`}, {"at", `"2030-01-01T00:00:00Z"`},
		{"payload", `{"a":1}`}, {"payload", `{"a":1,"a":2}`}, {"payload", "\"\xff\""}, {"payload", `[1,{"b":[{"c":1,"c":1}]}]`},
		{"payload", `null`}, {"Payload", `1`},
		{"bucket", `"b"`}, {"bucket", `"."`}, {"Bucket", `"b"`},
		{"misfire_policy", `"skip"`}, {"misfire_policy", `"SKIP"`}, {"Misfire_Policy", `"skip"`},
		{"misfire_grace", `"1m"`}, {"unknown", `1`}, {"", `1`},
	}
	adv11TriggerFields = []adv11Field{
		{"trigger_id", `"t1"`}, {"trigger_id", `"m-1-2"`}, {"trigger_id", `"a@b"`}, {"trigger_id", `""`},
		{"Trigger_ID", `"t2"`}, {"TriggerID", `"t3"`},
		{"payload", `{"a":1}`}, {"payload", `{"a":1,"a":2}`}, {"payload", "\"\xff\""}, {"PAYLOAD", `1`},
		{"extra", `true`},
	}
)

// adv11Body returns a JSON object of 1 to 4 fields drawn from fields (a
// key may come twice), sometimes followed by trailing data, its inside
// (without the braces, for splicing into a command) and the trailing data.
func adv11Body(rng *rand.Rand, fields []adv11Field) (body, inner, trailing string) {
	n := 1 + rng.IntN(4)
	parts := make([]string, n)
	for i := range parts {
		f := fields[rng.IntN(len(fields))]
		parts[i] = fmt.Sprintf("%q:%s", f.key, f.value)
	}
	inner = strings.Join(parts, ",")
	body = "{" + inner + "}"
	if rng.IntN(8) == 0 {
		trailing = ` {}`
	}
	return body + trailing, inner, trailing
}

// adv11Code is the reject code of err ("" for nil).
func adv11Code(err error) string {
	var ce *codecs.Error
	if errors.As(err, &ce) {
		return ce.Code
	}
	if err != nil {
		return "not a codecs error: " + err.Error()
	}
	return ""
}

// TestAdv11EntrancesAgree sends generated bodies (exact, Go-style and
// upper-case field names, duplicate keys at any depth, unknown fields,
// invalid UTF-8 in payloads, trailing data) to PUT /v1/jobs/{id},
// POST /v1/jobs/{id}/fire and POST /v1/buckets/{bucket}/trigger, and the
// same fields as a record on chronos-jobs or chronos-bucket-triggers
// (decoded by codecs, as the processors do). Promise (issue 11, "Strict,
// documented wire format": the rules are "enforced the same way at every
// entrance"; docs/topics.md: "Cron" is an unknown_field, a key given twice
// is malformed): HTTP accepts exactly what Kafka accepts, and refuses the
// rest with the same code. On main the API decoded with encoding/json,
// which takes {"Cron":…}, {"EVERY":…} and duplicate keys (the last one
// wins), so the API wrote commands the docs say are refused.
func TestAdv11EntrancesAgree(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	for i := range 400 {
		var (
			rq          request
			want        error
			inner, tail string
		)
		switch i % 3 {
		case 0:
			rq.body, inner, tail = adv11Body(rng, adv11JobFields)
			rq.method, rq.path = http.MethodPut, "/v1/jobs/k"
			_, want = codecs.DecodeCommand([]byte("k"), []byte(`{"v":1,"op":"put","job":{`+inner+`}}`+tail), codecs.DefaultLimits())
		case 1:
			rq.body, inner, tail = adv11Body(rng, adv11TriggerFields)
			rq.method, rq.path = http.MethodPost, "/v1/jobs/k/fire"
			_, want = codecs.DecodeCommand([]byte("k"), []byte(`{"v":1,"op":"fire",`+inner+`}`+tail), codecs.DefaultLimits())
		default:
			rq.body, inner, tail = adv11Body(rng, adv11TriggerFields)
			rq.method, rq.path = http.MethodPost, "/v1/buckets/b/trigger"
			_, want = codecs.DecodeBucketTrigger([]byte(`{"v":1,"bucket":"b",`+inner+`}`+tail), 0, 0, codecs.DefaultLimits())
		}
		resp, b := f.do(t, rq)
		what := fmt.Sprintf("%s %s %s: Kafka says %v", rq.method, rq.path, rq.body, want)
		if want == nil {
			require.Less(t, resp.StatusCode, 300, "%s; HTTP: %d %s", what, resp.StatusCode, b)
			continue
		}
		require.GreaterOrEqual(t, resp.StatusCode, 400, "%s; HTTP: %d %s", what, resp.StatusCode, b)
		p := decodeProblem(t, resp, b)
		require.Equal(t, adv11Code(want), p.Code, "%s; HTTP: %s", what, b)
	}
	// Every record the API wrote is one the scheduler accepts.
	for _, r := range f.prod.records() {
		if strings.HasSuffix(r.Topic, "chronos-jobs") {
			_, err := codecs.DecodeCommand(r.Key, r.Value, codecs.DefaultLimits())
			require.NoError(t, err, "%s", r.Value)
		}
	}
}

// TestAdv11GetJobWithUnwritableTime reads a job whose times JSON cannot
// write: a command stamped after 9999 (a producer on chronos-jobs may set
// any timestamp) gives the job such a created_at. Promise (issue 11: bad
// input gets a clear error): the answer is a problem document. On main it
// was "200 OK" with an empty body, which clients read as a broken job.
func TestAdv11GetJobWithUnwritableTime(t *testing.T) {
	t.Parallel()
	j := sampleJob()
	j.CreatedAt = time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC)
	f := newFixture(t, func(s *api.Server) { s.Jobs = newFakeJobs(j) })
	resp, b := f.do(t, request{method: http.MethodGet, path: "/v1/jobs/" + j.ID})
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode, "body: %s", b)
	p := decodeProblem(t, resp, b)
	require.Equal(t, "unencodable", p.Code)
	require.Contains(t, p.Detail, "year outside of range")
}

// TestAdv11TenantPrefixesDoNotOverlap builds tokens files from seeded
// pairs of tenant prefixes and, for each file the server accepts, asks with
// every token for a job of every other tenant. Promise (issue 11: "a tenant
// token cannot read or change another tenant's jobs"): a token reaches
// another token's ids only as a parent tenant, whose prefix ends in a
// separator ("acme." over "acme.ci."). On main the file with "acme" and
// "acme2." was accepted and the "acme" token read and changed every job
// of "acme2.".
func TestAdv11TenantPrefixesDoNotOverlap(t *testing.T) {
	t.Parallel()
	prefixes := []string{"acme", "acme2.", "acme.", "acme.ci.", "ac", "globex-", "globex-2", "a/", "a/b", "ü", "üb."}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	for range 40 {
		pa, pb := prefixes[rng.IntN(len(prefixes))], prefixes[rng.IntN(len(prefixes))]
		sa, la, err := api.NewToken("a", api.RoleWrite, pa)
		require.NoError(t, err)
		sb, lb, err := api.NewToken("b", api.RoleWrite, pb)
		require.NoError(t, err)
		tok, err := api.ParseTokens(strings.NewReader(la + "\n" + lb))
		if err != nil {
			require.ErrorIs(t, err, api.ErrBadTokens)
			require.ErrorContains(t, err, "end tenant prefixes with a separator")
			continue
		}
		ids := []string{pa + "job", pb + "job"}
		slices.Sort(ids)
		f := newFixture(t, func(s *api.Server) { s.Tokens = tok; s.Jobs = pagedJobs{ids: slices.Compact(ids)} })
		for _, c := range []struct{ secret, own, other string }{{sa, pa, pb}, {sb, pb, pa}} {
			if c.own == c.other {
				continue
			}
			id := c.other + "job"
			resp, b := f.do(t, request{method: http.MethodGet, path: "/v1/jobs/" + url.PathEscape(id),
				header: map[string]string{"Authorization": "Bearer " + c.secret}})
			reaches := resp.StatusCode == http.StatusOK
			require.Equal(t, strings.HasPrefix(id, c.own), reaches, "%q reading %q: %d %s", c.own, id, resp.StatusCode, b)
			if reaches {
				last, _ := utf8.DecodeLastRuneInString(c.own)
				require.False(t, unicode.IsLetter(last) || unicode.IsDigit(last),
					"tenant %q reaches the jobs of tenant %q", c.own, c.other)
			}
		}
	}
}
