package api_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/api"
)

// importLine returns a generated command line and whether the API must
// accept it for a token confined to prefix "acme." (prefix "" : any).
func importLine(rng *rand.Rand, n int, confined bool) (string, bool) {
	id := fmt.Sprintf("acme.job-%d", n)
	valid := []string{
		`{"v":1,"op":"put","id":%q,"job":{"every":"1m","payload":{"n":%d,"q":"?a=1&b=<2>"}}}`,
		`{"v":1,"op":"put","id":%q,"job":{"cron":"0 6 * * 1-5","tz":"Europe/Berlin","bucket":"acme.reports"}}`,
		`{"v":1,"op":"delete","id":%q}`,
		`{"v":1,"op":"pause","id":%q}`,
		`{"v":1,"op":"fire","id":%q,"trigger_id":"t-%d"}`,
	}
	invalid := []string{
		`{"v":1,"op":"put","id":%q,"job":{"cron":"61 * * * *"}}`,
		`{"v":1,"op":"put","id":%q,"job":{"every":"1m","bogus":%d}}`,
		`{"v":2,"op":"put","id":%q,"job":{"every":"1m"}}`,
		`{"v":1,"op":"nap","id":%q}`,
		`{"v":1,"op":"put","id":%q,"job":{"every":"1m"}`,
		`{"v":1,"op":"put","job":{"every":"1m"}}`,
		`{"v":1,"op":"put","id":"\u0000%s","job":{"every":"1m"}}`,
		`not json %q`,
	}
	if confined && rng.IntN(8) == 0 {
		return fmt.Sprintf(`{"v":1,"op":"put","id":"other-%d","job":{"every":"1m"}}`, n), false
	}
	if confined && rng.IntN(8) == 0 {
		return fmt.Sprintf(`{"v":1,"op":"put","id":%q,"job":{"every":"1m","bucket":"other"}}`, id), false
	}
	if rng.IntN(6) == 0 {
		f := invalid[rng.IntN(len(invalid))]
		if strings.Count(f, "%") == 2 {
			return fmt.Sprintf(f, id, n), false
		}
		return fmt.Sprintf(f, id), false
	}
	f := valid[rng.IntN(len(valid))]
	if strings.Count(f, "%") == 2 {
		return fmt.Sprintf(f, id, n), true
	}
	return fmt.Sprintf(f, id), true
}

// TestImportAllOrNothing sends generated NDJSON bodies of valid and invalid
// commands (blank lines between), with an admin token and one confined to
// "acme.". Promise (docs/api.md, "Import"): with any invalid line nothing
// is written and the answer (400) lists exactly the invalid lines by
// number; otherwise every line is written in order, byte for byte, keyed by
// its id; ?dry_run=true writes nothing either way.
func TestImportAllOrNothing(t *testing.T) {
	t.Parallel()
	hash := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	tokens, err := api.ParseTokens(strings.NewReader("name=root role=admin sha256=" + hash("root") + "\nname=acme role=write prefix=acme. sha256=" + hash("acme")))
	require.NoError(t, err)
	f := newFixture(t, func(s *api.Server) { s.Tokens = tokens })
	rng := rand.New(rand.NewPCG(15, 5))
	for round := range 300 {
		confined := rng.IntN(2) == 0
		dryRun := rng.IntN(5) == 0
		var (
			body      strings.Builder
			wantLines []string
			badLines  []int
		)
		count := 1 + rng.IntN(40)
		if rng.IntN(3) == 0 {
			count = 1 // single lines, where a bug in the first or last line shows
		}
		for i, n := 0, 1; i < count; i, n = i+1, n+1 {
			if rng.IntN(10) == 0 {
				body.WriteString("  \n")
				n++
			}
			line, ok := importLine(rng, round*100+i, confined)
			body.WriteString(line)
			if i < count-1 || rng.IntN(2) == 0 {
				body.WriteString("\n")
			}
			if ok {
				wantLines = append(wantLines, line)
			} else {
				badLines = append(badLines, n)
			}
		}
		token := "root"
		if confined {
			token = "acme"
		}
		before := len(f.prod.records())
		path := api.ImportPath
		if dryRun {
			path += "?dry_run=true"
		}
		resp, answer := f.do(t, request{method: http.MethodPost, path: path, body: body.String(),
			header: map[string]string{"Content-Type": "application/x-ndjson", "Authorization": "Bearer " + token}})
		var res api.ImportResult
		require.NoError(t, json.Unmarshal(answer, &res), "round %d: %s", round, answer)
		require.Equal(t, count, res.Lines, "round %d", round)
		written := f.prod.records()[before:]
		if len(badLines) > 0 {
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, "round %d: %s", round, answer)
			require.Empty(t, written, "round %d: an invalid line and something was written", round)
			var got []int
			for _, e := range res.Errors {
				got = append(got, e.Line)
			}
			require.Equal(t, badLines, got, "round %d: the invalid lines, by number\n%s", round, body.String())
			require.Equal(t, len(badLines), res.ErrorCount)
			continue
		}
		require.Equal(t, http.StatusOK, resp.StatusCode, "round %d: %s", round, answer)
		if dryRun {
			require.Empty(t, written, "round %d: dry run wrote", round)
			require.Zero(t, res.Written)
			continue
		}
		require.Equal(t, len(wantLines), res.Written)
		require.Len(t, written, len(wantLines))
		for i, r := range written {
			require.Equal(t, wantLines[i], string(r.Value), "round %d line %d: written as sent, in order", round, i)
			var head struct{ ID string }
			require.NoError(t, json.Unmarshal(r.Value, &head))
			require.Equal(t, head.ID, string(r.Key))
			require.Equal(t, "test-chronos-jobs", r.Topic)
		}
	}
}

// failingProducer fails the records whose key is in fail, acknowledging
// them in reverse order (as a broker may).
type failingProducer struct {
	fakeProducer
	fail map[string]bool
}

func (p *failingProducer) ProduceSync(ctx context.Context, rs ...*kgo.Record) kgo.ProduceResults {
	var res kgo.ProduceResults
	for i := len(rs) - 1; i >= 0; i-- {
		if p.fail[string(rs[i].Key)] {
			res = append(res, kgo.ProduceResult{Record: rs[i], Err: errors.New("broker down")})
			continue
		}
		res = append(res, p.fakeProducer.ProduceSync(ctx, rs[i])...)
	}
	return res
}

// TestImportListsLinesNotWritten: records the broker refuses are listed by
// line (503), the others are written; none is silently lost.
func TestImportListsLinesNotWritten(t *testing.T) {
	t.Parallel()
	prod := &failingProducer{fail: map[string]bool{"b": true, "d": true}}
	f := newFixture(t, func(s *api.Server) { s.Producer = prod })
	var body strings.Builder
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		fmt.Fprintf(&body, `{"v":1,"op":"put","id":%q,"job":{"every":"1m"}}`+"\n", id)
	}
	resp, answer := f.do(t, request{method: http.MethodPost, path: api.ImportPath, body: body.String(),
		header: map[string]string{"Content-Type": "application/x-ndjson"}})
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", answer)
	var res api.ImportResult
	require.NoError(t, json.Unmarshal(answer, &res))
	require.Equal(t, 3, res.Written)
	require.Equal(t, 2, res.ErrorCount)
	require.Equal(t, []int{2, 4}, []int{res.Errors[0].Line, res.Errors[1].Line})
	require.Equal(t, []string{"b", "d"}, []string{res.Errors[0].ID, res.Errors[1].ID})
}

// blockingProducer holds every produce until release is closed.
type blockingProducer struct {
	fakeProducer
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

func (p *blockingProducer) ProduceSync(ctx context.Context, rs ...*kgo.Record) kgo.ProduceResults {
	p.once.Do(func() { close(p.started) })
	<-p.release
	return p.fakeProducer.ProduceSync(ctx, rs...)
}

// TestImportOneAtATime: a second import while one is being written gets
// 429 with Retry-After (an import holds up to 16 MiB), and goes through
// once the first is done.
func TestImportOneAtATime(t *testing.T) {
	t.Parallel()
	prod := &blockingProducer{started: make(chan struct{}), release: make(chan struct{})}
	f := newFixture(t, func(s *api.Server) { s.Producer = prod })
	rq := request{method: http.MethodPost, path: api.ImportPath, body: `{"v":1,"op":"put","id":"a","job":{"every":"1m"}}`,
		header: map[string]string{"Content-Type": "application/x-ndjson"}}
	done := make(chan int)
	go func() {
		resp, _ := f.do(t, rq)
		done <- resp.StatusCode
	}()
	<-prod.started
	resp, answer := f.do(t, rq)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%s", answer)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	close(prod.release)
	require.Equal(t, http.StatusOK, <-done)
	resp, answer = f.do(t, rq)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", answer)
}

// TestImportRefusesOtherBodies: only application/x-ndjson (or JSON) bodies
// under the size limit, and no unknown query parameter.
func TestImportRefusesOtherBodies(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	line := `{"v":1,"op":"put","id":"a","job":{"every":"1m"}}` + "\n"
	for _, tc := range []struct {
		name, path, ct, body string
		status               int
	}{
		{"text/plain", api.ImportPath, "text/plain", line, http.StatusUnsupportedMediaType},
		{"ndjson elsewhere", "/v1/jobs/a", "application/x-ndjson", `{"every":"1m"}`, http.StatusUnsupportedMediaType},
		{"unknown parameter", api.ImportPath + "?force=1", "application/x-ndjson", line, http.StatusBadRequest},
		{"dry_run not a bool", api.ImportPath + "?dry_run=yes", "application/x-ndjson", line, http.StatusBadRequest},
		{"too large", api.ImportPath, "application/x-ndjson", strings.Repeat(line, api.MaxImportBytes/len(line)+1), http.StatusRequestEntityTooLarge},
		{"empty", api.ImportPath, "application/x-ndjson", "\n\n", http.StatusOK},
	} {
		method := http.MethodPost
		if strings.HasPrefix(tc.path, "/v1/jobs/") {
			method = http.MethodPut
		}
		resp, answer := f.do(t, request{method: method, path: tc.path, body: tc.body, header: map[string]string{"Content-Type": tc.ct}})
		require.Equal(t, tc.status, resp.StatusCode, "%s: %s", tc.name, answer)
	}
	require.Empty(t, f.prod.records())
}
