package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	httpapi "github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/views"
)

// pagedJobs serves n generated jobs on /v1/jobs in pages of the requested
// limit, with the offset as cursor, like the API does.
func pagedJobs(t *testing.T, n int) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit, err := strconv.Atoi(r.URL.Query().Get("limit"))
		require.NoError(t, err)
		from, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
		page := httpapi.JobList{Jobs: []views.Summary{}}
		for i := from; i < min(from+limit, n); i++ {
			page.Jobs = append(page.Jobs, views.Summary{ID: fmt.Sprintf("job-%05d", i), Version: uint64(i%7 + 1), Status: "active", Bucket: fmt.Sprintf("b%d", i%3)})
		}
		if from+limit < n {
			page.NextCursor = strconv.Itoa(from + limit)
		}
		require.NoError(t, json.NewEncoder(w).Encode(page))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestJobsListStreamsPages lists generated numbers of jobs (0 to several
// pages, with and without --limit) as JSON and as a table: every job once,
// in order, and the JSON is one valid {"jobs":[...]} object.
func TestJobsListStreamsPages(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(18, 7))
	for i := range 12 {
		n := []int{0, 1, 999, 1000, 1001, 2500}[i%6]
		limit := 0
		if i >= 6 {
			limit = 1 + rng.IntN(3000)
		}
		want := n
		if limit > 0 {
			want = min(n, limit)
		}
		srv := pagedJobs(t, n)
		for _, output := range []string{"json", "table"} {
			api := &apiClient{base: srv.URL}
			cmd := newJobsList(api)
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetArgs([]string{"-o", output, "--limit", strconv.Itoa(limit)})
			require.NoError(t, cmd.Execute())
			var ids []string
			if output == "json" {
				var list httpapi.JobList
				require.NoError(t, json.Unmarshal(out.Bytes(), &list), "%s", out.String())
				require.NotNil(t, list.Jobs)
				for _, j := range list.Jobs {
					ids = append(ids, j.ID)
				}
			} else {
				lines := strings.Split(strings.TrimSpace(out.String()), "\n")
				require.True(t, strings.HasPrefix(lines[0], "ID"), "one header first")
				for _, l := range lines[1:] {
					require.False(t, strings.HasPrefix(l, "ID"), "one header only")
					ids = append(ids, strings.Fields(l)[0])
				}
			}
			require.Len(t, ids, want, "n %d limit %d %s", n, limit, output)
			for k, id := range ids {
				require.Equal(t, fmt.Sprintf("job-%05d", k), id)
			}
		}
	}
}
