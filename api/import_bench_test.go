package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chronos-scheduler/chronos/api"
)

// BenchmarkImport measures POST /v1/import?dry_run=true of 10,000 puts (a
// cron in a zone, a small payload): validation only, per line.
func BenchmarkImport(b *testing.B) {
	var body strings.Builder
	const n = 10000
	for i := range n {
		fmt.Fprintf(&body, `{"v":1,"op":"put","id":"bulk-%06d","job":{"cron":"%d %d * * *","tz":"Europe/Berlin","payload":{"n":%d}}}`+"\n", i, i%60, (i/60)%24, i)
	}
	f := newFixture(b, nil)
	b.ResetTimer()
	for range b.N {
		resp, answer := f.do(b, request{method: http.MethodPost, path: api.ImportPath + "?dry_run=true", body: body.String(),
			header: map[string]string{"Content-Type": "application/x-ndjson"}})
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("%d %s", resp.StatusCode, answer)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/line")
}
