//go:build adversary18b

package api_test

import (
	"fmt"
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/api"
)

// TestAdv18bImportHoldsManyTimesItsBody measures the heap one
// POST /v1/import of the largest body (16 MiB) holds, with the shortest
// lines: valid deletes, and invalid lines. docs/api.md ("Import") says an
// import "holds its body"; docs/configuration.md ("Memory") lists no row
// for it. The promise: every stage that holds records works under
// a byte budget, documented. Fails when the peak heap growth is over 4
// times the body.
//
// Run: go test -tags adversary18b -count=1 -run TestAdv18bImportHoldsManyTimesItsBody -v ./api/
func TestAdv18bImportHoldsManyTimesItsBody(t *testing.T) {
	// The heap is collected at 10% growth, so its peak is close to what
	// the import holds live (garbage aside). The fake producer keeps the records, as
	// franz-go's ProduceSync does until all are acknowledged.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	deletes := func(i int) string { return fmt.Sprintf(`{"v":1,"op":"delete","id":"%x"}`, i) }
	cases := []struct {
		name, query string
		line        func(i int) string
	}{
		{"valid deletes, dry run", "?dry_run=true", deletes},
		{"valid deletes, written", "", deletes},
		{"invalid lines", "", func(i int) string { return fmt.Sprintf(`{"id":"%x"}`, i) }},
	}
	for _, c := range cases {
		name, line := c.name, c.line
		var body strings.Builder
		lines := 0
		for i := 0; ; i++ {
			l := line(i)
			if body.Len()+len(l)+1 > api.MaxImportBytes {
				break
			}
			body.WriteString(l)
			body.WriteByte('\n')
			lines++
		}
		f := newFixture(t, nil)
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		var peak atomic.Uint64
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			var m runtime.MemStats
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peak.Load() {
					peak.Store(m.HeapInuse)
				}
			}
		}()
		resp, answer := f.do(t, request{method: http.MethodPost, path: api.ImportPath + c.query, body: body.String(),
			header: map[string]string{"Content-Type": "application/x-ndjson"}})
		close(stop)
		<-done
		require.Contains(t, []int{http.StatusOK, http.StatusBadRequest}, resp.StatusCode, "%s", answer[:min(len(answer), 300)])
		grew := int64(peak.Load()) - int64(before.HeapInuse)
		t.Logf("%s: %d lines, body %.1f MiB, heap grew %.1f MiB at its peak (%.1f× the body); answer %d bytes",
			name, lines, float64(body.Len())/(1<<20), float64(grew)/(1<<20), float64(grew)/float64(body.Len()), len(answer))
		assert.LessOrEqual(t, grew, int64(4*body.Len()), "%s: an import holds more than 4 times its body", name)
	}
}
