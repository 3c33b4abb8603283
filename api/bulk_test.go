package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/views"
)

// bulkJobs is a JobReader with the counts of bulk operations.
type bulkJobs struct {
	*fakeJobs
	ops map[string]views.BulkStatus
}

func (b bulkJobs) Bulk(id string) (views.BulkStatus, error) {
	st, ok := b.ops[id]
	if !ok {
		return views.BulkStatus{}, views.ErrNotFound
	}
	return st, nil
}

func TestBulkRoutes(t *testing.T) {
	t.Parallel()
	secret, line, err := api.NewToken("tenant", api.RoleWrite, "acme.")
	require.NoError(t, err)
	rootSecret, rootLine, err := api.NewToken("root", api.RoleAdmin, "")
	require.NoError(t, err)
	tokens, err := api.ParseTokens(strings.NewReader(line + "\n" + rootLine))
	require.NoError(t, err)
	jobs := bulkJobs{newFakeJobs(), map[string]views.BulkStatus{
		"acme.op":  {TriggerID: "acme.op", Op: "pause", Bucket: "b", Prefix: "acme.", Shards: 4, Finished: 4, Done: true, Matched: 9, Changed: 7},
		"other-op": {TriggerID: "other-op", Op: "delete", Prefix: "globex.", Shards: 4, Finished: 1, Queued: 3, Matched: 2, Changed: 2},
	}}
	f := newFixture(t, func(s *api.Server) { s.Tokens, s.Jobs = tokens, jobs })
	auth := map[string]string{"Authorization": "Bearer " + secret}
	rootAuth := map[string]string{"Authorization": "Bearer " + rootSecret}

	decode := func(i int) codecs.BucketTrigger {
		recs := f.prod.records()
		require.Greater(t, len(recs), i)
		require.Equal(t, "test-chronos-bucket-triggers", recs[i].Topic)
		bt, err := codecs.DecodeBucketTrigger(recs[i].Value, 0, 0, codecs.DefaultLimits())
		require.NoError(t, err)
		return bt
	}
	accepted := func(resp *http.Response, b []byte) api.BulkAccepted {
		require.Equal(t, http.StatusAccepted, resp.StatusCode, "%s", b)
		var a api.BulkAccepted
		require.NoError(t, json.Unmarshal(b, &a))
		require.Equal(t, "/v1/bulk/"+a.TriggerID, a.Status)
		return a
	}

	// A confined token pausing a bucket: its prefix goes with it, the
	// generated trigger id starts with it, the note and the actor too.
	resp, b := f.do(t, request{method: "POST", path: "/v1/buckets/acme.b/pause", body: `{"note":"INC-9"}`, header: auth})
	a := accepted(resp, b)
	require.Regexp(t, `^acme\.t-[0-9a-f]{16}$`, a.TriggerID)
	require.Equal(t, codecs.BucketTrigger{V: 1, Op: "pause", Bucket: "acme.b", Prefix: "acme.", Note: "INC-9", TriggerID: a.TriggerID}, decode(0))
	require.Equal(t, "tenant", string(f.prod.records()[0].Headers[0].Value))

	// An unconfined token deleting a prefix with %2F, with its own id.
	resp, b = f.do(t, request{method: "POST", path: "/v1/prefixes/t%2F42%2F/delete", body: `{"trigger_id":"clean-42"}`, header: rootAuth})
	a = accepted(resp, b)
	require.Equal(t, codecs.BucketTrigger{V: 1, Op: "delete", Prefix: "t/42/", TriggerID: "clean-42"}, decode(1))
	// Every bulk operation has one key, so they apply in the order written.
	require.Equal(t, codecs.BulkKey, string(f.prod.records()[0].Key))
	require.Equal(t, codecs.BulkKey, string(f.prod.records()[1].Key))

	// Refusals: nothing more is written.
	for _, c := range []struct {
		rq     request
		status int
		code   string
	}{
		{request{method: "POST", path: "/v1/prefixes/acme.x/resume", body: `{"note":"x"}`, header: auth}, 400, codecs.CodeUnknownField},
		{request{method: "POST", path: "/v1/prefixes/acme.x/resume", body: `{"payload":1}`, header: auth}, 400, codecs.CodeUnknownField},
		{request{method: "POST", path: "/v1/prefixes/acme.x/resume", body: `{"trigger_id":"a@b"}`, header: rootAuth}, 400, codecs.CodeInvalidField},
		{request{method: "POST", path: "/v1/prefixes/acme.x/resume", body: `{"trigger_id":"mine"}`, header: auth}, 403, "forbidden"},
		{request{method: "POST", path: "/v1/prefixes/globex./delete", header: auth}, 403, "forbidden"},
		{request{method: "POST", path: "/v1/buckets/globex.b/delete", header: auth}, 403, "forbidden"},
		{request{method: "POST", path: "/v1/prefixes/a%01/delete", header: rootAuth}, 400, codecs.CodeInvalidField},
		{request{method: "POST", path: "/v1/prefixes/__chronos%2F/delete", header: rootAuth}, 400, codecs.CodeReservedID},
		{request{method: "POST", path: "/v1/prefixes/__chronos%2Fshard%2F0/pause", header: rootAuth}, 400, codecs.CodeReservedID},
		{request{method: "GET", path: "/v1/bulk/other-op", header: auth}, 403, "forbidden"},
		{request{method: "GET", path: "/v1/bulk/nope", header: rootAuth}, 404, "not_found"},
	} {
		resp, b := f.do(t, c.rq)
		require.Equal(t, c.status, resp.StatusCode, "%s %s: %s", c.rq.method, c.rq.path, b)
		require.Equal(t, c.code, decodeProblem(t, resp, b).Code, c.rq.path)
	}
	require.Len(t, f.prod.records(), 2)

	// The counts, as the view sums them.
	for _, c := range []struct {
		id   string
		hdr  map[string]string
		want views.BulkStatus
	}{{"acme.op", auth, jobs.ops["acme.op"]}, {"other-op", rootAuth, jobs.ops["other-op"]}} {
		resp, b := f.do(t, request{method: "GET", path: "/v1/bulk/" + c.id, header: c.hdr})
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
		var st views.BulkStatus
		require.NoError(t, json.Unmarshal(b, &st))
		require.Equal(t, c.want, st)
	}
}
