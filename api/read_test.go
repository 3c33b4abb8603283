package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/views"
)

// fakeJobs is a JobReader over a map; err, when set, fails every call.
type fakeJobs struct {
	mu    sync.Mutex
	jobs  map[string]views.Job
	err   error
	gets  int
	lists []listArgs
	page  []views.Summary
	next  string
	// listErr is what List returns (nil: page and next).
	listErr error
}

type listArgs struct {
	bucket, cursor string
	limit          int
}

var _ api.JobReader = (*fakeJobs)(nil)

func newFakeJobs(jobs ...views.Job) *fakeJobs {
	f := &fakeJobs{jobs: map[string]views.Job{}}
	for _, j := range jobs {
		f.jobs[j.ID] = j
	}
	return f
}

func (f *fakeJobs) Get(id string) (*views.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets++
	if f.err != nil {
		return nil, f.err
	}
	j, ok := f.jobs[id]
	if !ok {
		return nil, views.ErrNotFound
	}
	return &j, nil
}

func (f *fakeJobs) Version(id string) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return 0, f.err
	}
	return f.jobs[id].Version, nil
}

func (f *fakeJobs) List(bucket, cursor string, limit int) ([]views.Summary, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists = append(f.lists, listArgs{bucket, cursor, limit})
	if f.err != nil {
		return nil, "", f.err
	}
	if f.listErr != nil {
		return nil, "", f.listErr
	}
	return f.page, f.next, nil
}

func (f *fakeJobs) set(j views.Job) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.jobs[j.ID] = j
}

func (f *fakeJobs) listCalls() []listArgs {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]listArgs(nil), f.lists...)
}

// hookProducer runs after on every successfully produced record, like the
// scheduler applying it and the view catching up.
type hookProducer struct {
	api.Producer
	after func(*kgo.Record)
}

func (p hookProducer) ProduceSync(ctx context.Context, rs ...*kgo.Record) kgo.ProduceResults {
	res := p.Producer.ProduceSync(ctx, rs...)
	for _, r := range res {
		if r.Err == nil {
			p.after(r.Record)
		}
	}
	return res
}

// applyPuts makes jobs show every produced put as the scheduler would:
// version + 1, the normalized definition.
func applyPuts(t *testing.T, jobs *fakeJobs) func(*kgo.Record) {
	return func(r *kgo.Record) {
		c, err := codecs.DecodeCommand(r.Key, r.Value, codecs.DefaultLimits())
		if err != nil || c.Op != codecs.OpPut {
			t.Errorf("unexpected record %s: %v", r.Value, err)
			return
		}
		old, _ := jobs.Version(c.ID)
		now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
		jobs.set(views.Job{ID: c.ID, Version: old + 1, Status: "active", Job: c.Job.Def(),
			CreatedAt: now, UpdatedAt: now, NextFires: []time.Time{}})
	}
}

func sampleJob() views.Job {
	at := time.Date(2026, 5, 1, 3, 0, 0, 0, time.UTC)
	return views.Job{
		ID: "nightly", Version: 7, Status: "active",
		Job:       codecs.JobDef{Cron: "0 3 * * *", TZ: "UTC", Bucket: "reports", MisfirePolicy: "fire_once", MisfireGrace: "1m0s", Payload: json.RawMessage(`{"a":1}`)},
		CreatedAt: at.Add(-48 * time.Hour), UpdatedAt: at.Add(-time.Hour),
		NextFires: []time.Time{at.Add(24 * time.Hour), at.Add(48 * time.Hour)},
		LastFire:  &views.LastFire{ScheduledAt: at, FireID: codecs.ScheduledFireID("nightly", at)},
	}
}

func decodeJob(t *testing.T, resp *http.Response, b []byte) views.Job {
	t.Helper()
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var j views.Job
	require.NoError(t, json.Unmarshal(b, &j), "body: %s", b)
	return j
}

func TestGetJob(t *testing.T) {
	t.Parallel()
	want := sampleJob()
	jobs := newFakeJobs(want)
	f := newFixture(t, func(s *api.Server) { s.Jobs = jobs })

	t.Run("found", func(t *testing.T) {
		t.Parallel()
		resp, b := f.do(t, request{method: "GET", path: "/v1/jobs/nightly"})
		require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", b)
		require.Equal(t, `"7"`, resp.Header.Get("ETag"))
		got := decodeJob(t, resp, b)
		require.Equal(t, want.ID, got.ID)
		require.Equal(t, want.Version, got.Version)
		require.Equal(t, want.Job, got.Job)
		require.True(t, want.UpdatedAt.Equal(got.UpdatedAt))
		require.Len(t, got.NextFires, 2)
		require.Equal(t, want.LastFire.FireID, got.LastFire.FireID)
		// Field names on the wire.
		var raw map[string]any
		require.NoError(t, json.Unmarshal(b, &raw))
		require.Contains(t, raw, "next_fires")
		require.Contains(t, raw, "last_fire")
	})
	t.Run("unknown", func(t *testing.T) {
		t.Parallel()
		resp, b := f.do(t, request{method: "GET", path: "/v1/jobs/nope"})
		require.Equal(t, http.StatusNotFound, resp.StatusCode, "body: %s", b)
		p := decodeProblem(t, resp, b)
		require.Equal(t, "not_found", p.Code)
		require.Equal(t, "id", p.Field)
	})
	t.Run("view error", func(t *testing.T) {
		t.Parallel()
		broken := newFakeJobs()
		broken.err = errors.New("store closed")
		g := newFixture(t, func(s *api.Server) { s.Jobs = broken })
		resp, b := g.do(t, request{method: "GET", path: "/v1/jobs/nightly"})
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "body: %s", b)
		p := decodeProblem(t, resp, b)
		require.Equal(t, "view_unavailable", p.Code)
		require.Contains(t, p.Detail, "store closed")
	})
}

func TestReadsWithoutView(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil) // Jobs nil
	for _, path := range []string{"/v1/jobs/nightly", "/v1/jobs", "/v1/jobs?limit=5"} {
		resp, b := f.do(t, request{method: "GET", path: path})
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s: %s", path, b)
		require.Equal(t, "view_unavailable", decodeProblem(t, resp, b).Code)
	}
}

func TestListJobs(t *testing.T) {
	t.Parallel()
	page := []views.Summary{{ID: "a", Version: 1, Status: "active", Bucket: "reports"}, {ID: "b", Version: 3, Status: "paused"}}

	t.Run("pass through", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			query string
			want  listArgs
		}{
			{"", listArgs{limit: 100}},
			{"?limit=1", listArgs{limit: 1}},
			{"?limit=1000", listArgs{limit: 1000}},
			{"?bucket=reports&limit=2&cursor=MC9h", listArgs{bucket: "reports", cursor: "MC9h", limit: 2}},
			{"?bucket=a%20b%2Fc", listArgs{bucket: "a b/c", limit: 100}},
		}
		for _, tc := range tests {
			jobs := newFakeJobs()
			jobs.page, jobs.next = page, "MS9i"
			f := newFixture(t, func(s *api.Server) { s.Jobs = jobs })
			resp, b := f.do(t, request{method: "GET", path: "/v1/jobs" + tc.query})
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", tc.query, b)
			require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			require.Equal(t, []listArgs{tc.want}, jobs.listCalls(), tc.query)
			var got api.JobList
			require.NoError(t, json.Unmarshal(b, &got))
			require.Equal(t, api.JobList{Jobs: page, NextCursor: "MS9i"}, got)
		}
	})
	t.Run("last page", func(t *testing.T) {
		t.Parallel()
		jobs := newFakeJobs()
		jobs.page = []views.Summary{}
		f := newFixture(t, func(s *api.Server) { s.Jobs = jobs })
		resp, b := f.do(t, request{method: "GET", path: "/v1/jobs"})
		require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", b)
		require.JSONEq(t, `{"jobs":[]}`, string(b))
	})

	bad := []struct {
		name, query, code, field string
	}{
		{"limit zero", "?limit=0", codecs.CodeInvalidField, "limit"},
		{"limit over", "?limit=1001", codecs.CodeInvalidField, "limit"},
		{"limit negative", "?limit=-1", codecs.CodeInvalidField, "limit"},
		{"limit not a number", "?limit=abc", codecs.CodeInvalidField, "limit"},
		{"unknown parameter", "?bukket=reports", codecs.CodeUnknownField, "bukket"},
		{"unknown parameter with known ones", "?limit=5&offset=10", codecs.CodeUnknownField, "offset"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			jobs := newFakeJobs()
			f := newFixture(t, func(s *api.Server) { s.Jobs = jobs })
			resp, b := f.do(t, request{method: "GET", path: "/v1/jobs" + tc.query})
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, "body: %s", b)
			p := decodeProblem(t, resp, b)
			require.Equal(t, tc.code, p.Code)
			require.Equal(t, tc.field, p.Field)
			require.Empty(t, jobs.listCalls(), "the view must not be asked")
		})
	}

	t.Run("bad cursor", func(t *testing.T) {
		t.Parallel()
		jobs := newFakeJobs()
		jobs.listErr = fmt.Errorf("decoding: %w", views.ErrBadCursor)
		f := newFixture(t, func(s *api.Server) { s.Jobs = jobs })
		resp, b := f.do(t, request{method: "GET", path: "/v1/jobs?cursor=garbage"})
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "body: %s", b)
		p := decodeProblem(t, resp, b)
		require.Equal(t, codecs.CodeInvalidField, p.Code)
		require.Equal(t, "cursor", p.Field)
		require.Equal(t, []listArgs{{cursor: "garbage", limit: 100}}, jobs.listCalls())
	})
	t.Run("view error", func(t *testing.T) {
		t.Parallel()
		jobs := newFakeJobs()
		jobs.listErr = errors.New("partition 3 is not open")
		f := newFixture(t, func(s *api.Server) { s.Jobs = jobs })
		resp, b := f.do(t, request{method: "GET", path: "/v1/jobs"})
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "body: %s", b)
		require.Equal(t, "view_unavailable", decodeProblem(t, resp, b).Code)
	})
}

func TestPutReadYourWrites(t *testing.T) {
	t.Parallel()
	const body = `{"cron":"0 3 * * *","payload":{"b": 2},"bucket":"reports"}`

	t.Run("view catches up: 200 with the job", func(t *testing.T) {
		t.Parallel()
		jobs := newFakeJobs(views.Job{ID: "nightly", Version: 4, Status: "paused"})
		f := newFixture(t, func(s *api.Server) {
			s.Jobs = jobs
			s.Producer = hookProducer{Producer: s.Producer, after: applyPuts(t, jobs)}
		})
		resp, b := f.do(t, request{method: "PUT", path: "/v1/jobs/nightly", body: body})
		require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", b)
		require.Equal(t, `"5"`, resp.Header.Get("ETag"))
		got := decodeJob(t, resp, b)
		require.Equal(t, uint64(5), got.Version)
		require.Equal(t, "active", got.Status)
		require.Equal(t, "reports", got.Job.Bucket)
		require.JSONEq(t, `{"b":2}`, string(got.Job.Payload))
		require.Len(t, f.prod.records(), 1)
	})
	t.Run("view catches up on a new job: 200 with version 1", func(t *testing.T) {
		t.Parallel()
		jobs := newFakeJobs()
		f := newFixture(t, func(s *api.Server) {
			s.Jobs = jobs
			s.Producer = hookProducer{Producer: s.Producer, after: applyPuts(t, jobs)}
		})
		resp, b := f.do(t, request{method: "PUT", path: "/v1/jobs/fresh", body: `{"every":"1m"}`})
		require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", b)
		require.Equal(t, `"1"`, resp.Header.Get("ETag"))
	})
	t.Run("view catches up later: 200", func(t *testing.T) {
		t.Parallel()
		jobs := newFakeJobs(views.Job{ID: "nightly", Version: 4})
		apply := applyPuts(t, jobs)
		f := newFixture(t, func(s *api.Server) {
			s.Jobs = jobs
			s.ReadYourWrites = 5 * time.Second
			s.Producer = hookProducer{Producer: s.Producer, after: func(r *kgo.Record) {
				time.AfterFunc(50*time.Millisecond, func() { apply(r) })
			}}
		})
		resp, b := f.do(t, request{method: "PUT", path: "/v1/jobs/nightly", body: body})
		require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", b)
		require.Equal(t, `"5"`, resp.Header.Get("ETag"))
	})
	t.Run("view never catches up: 202", func(t *testing.T) {
		t.Parallel()
		jobs := newFakeJobs(views.Job{ID: "nightly", Version: 4})
		f := newFixture(t, func(s *api.Server) {
			s.Jobs = jobs
			s.ReadYourWrites = 50 * time.Millisecond
		})
		start := time.Now()
		resp, b := f.do(t, request{method: "PUT", path: "/v1/jobs/nightly", body: body})
		a := decodeAccepted(t, resp, b)
		require.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
		require.Equal(t, api.Accepted{ID: "nightly", Op: codecs.OpPut, Partition: 3, Offset: 0}, a)
		require.Empty(t, resp.Header.Get("ETag"))
		recs := f.prod.records()
		require.Len(t, recs, 1)
		require.Nil(t, decodeRecord(t, recs[0], "nightly").IfVersion)
	})
	t.Run("another writer's version is not ours: 202", func(t *testing.T) {
		t.Parallel()
		// A concurrent put of a different definition lands first; ours is
		// not (yet) visible, so the answer must not claim it is.
		jobs := newFakeJobs(views.Job{ID: "nightly", Version: 4})
		f := newFixture(t, func(s *api.Server) {
			s.Jobs = jobs
			s.ReadYourWrites = 100 * time.Millisecond
			s.Producer = hookProducer{Producer: s.Producer, after: func(*kgo.Record) {
				jobs.set(views.Job{ID: "nightly", Version: 5, Status: "active", Job: codecs.JobDef{Every: "1h0m0s", MisfirePolicy: "fire_once", MisfireGrace: "1m0s"}})
			}}
		})
		resp, b := f.do(t, request{method: "PUT", path: "/v1/jobs/nightly", body: body})
		decodeAccepted(t, resp, b)
	})
	// Since adversary round 58 a plain put does not need the view: an
	// instance that is starting recovers its scheduling groups before its
	// job view, and refused every put until then. It is written and
	// answers 202 at once (no read-your-writes wait); a conditional put
	// still answers 503 and writes nothing (the API's check needs the
	// view).
	t.Run("view unavailable: written, 202 at once; with If-Match 503, nothing produced", func(t *testing.T) {
		t.Parallel()
		jobs := newFakeJobs()
		jobs.err = errors.New("store closed")
		f := newFixture(t, func(s *api.Server) { s.Jobs = jobs; s.ReadYourWrites = time.Hour })
		resp, b := f.do(t, request{method: "PUT", path: "/v1/jobs/nightly", body: body, header: map[string]string{"If-Match": `"0"`}})
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "body: %s", b)
		require.Equal(t, "view_unavailable", decodeProblem(t, resp, b).Code)
		require.Empty(t, f.prod.records())
		resp, b = f.do(t, request{method: "PUT", path: "/v1/jobs/nightly", body: body})
		require.Equal(t, codecs.OpPut, decodeAccepted(t, resp, b).Op)
		require.Len(t, f.prod.records(), 1)
	})
}

func TestPutIfMatch(t *testing.T) {
	t.Parallel()
	const body = `{"every":"1m"}`
	t.Run("matching", func(t *testing.T) {
		t.Parallel()
		for _, im := range []string{`"4"`} {
			jobs := newFakeJobs(views.Job{ID: "j", Version: 4})
			f := newFixture(t, func(s *api.Server) {
				s.Jobs = jobs
				s.ReadYourWrites = 20 * time.Millisecond
			})
			resp, b := f.do(t, request{method: "PUT", path: "/v1/jobs/j", body: body, header: map[string]string{"If-Match": im}})
			decodeAccepted(t, resp, b)
			recs := f.prod.records()
			require.Len(t, recs, 1, im)
			c := decodeRecord(t, recs[0], "j")
			require.NotNil(t, c.IfVersion, im)
			require.Equal(t, uint64(4), *c.IfVersion, im)
		}
	})
	t.Run("matching and applied: 200", func(t *testing.T) {
		t.Parallel()
		jobs := newFakeJobs(views.Job{ID: "j", Version: 4})
		f := newFixture(t, func(s *api.Server) {
			s.Jobs = jobs
			s.Producer = hookProducer{Producer: s.Producer, after: applyPuts(t, jobs)}
		})
		resp, b := f.do(t, request{method: "PUT", path: "/v1/jobs/j", body: body, header: map[string]string{"If-Match": `"4"`}})
		require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", b)
		require.Equal(t, `"5"`, resp.Header.Get("ETag"))
	})
	t.Run("zero: the job must not exist", func(t *testing.T) {
		t.Parallel()
		jobs := newFakeJobs()
		f := newFixture(t, func(s *api.Server) {
			s.Jobs = jobs
			s.ReadYourWrites = 20 * time.Millisecond
		})
		resp, b := f.do(t, request{method: "PUT", path: "/v1/jobs/new", body: body, header: map[string]string{"If-Match": `"0"`}})
		decodeAccepted(t, resp, b)
		c := decodeRecord(t, f.prod.records()[0], "new")
		require.Equal(t, uint64(0), *c.IfVersion)
	})
	t.Run("not matching: 412, nothing produced", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			id, im string
		}{{"j", `"3"`}, {"j", `"5"`}, {"unknown", `"1"`}} {
			jobs := newFakeJobs(views.Job{ID: "j", Version: 4})
			f := newFixture(t, func(s *api.Server) { s.Jobs = jobs })
			resp, b := f.do(t, request{method: "PUT", path: "/v1/jobs/" + tc.id, body: body, header: map[string]string{"If-Match": tc.im}})
			require.Equal(t, http.StatusPreconditionFailed, resp.StatusCode, "%v: %s", tc, b)
			p := decodeProblem(t, resp, b)
			require.Equal(t, codecs.CodeVersionConflict, p.Code)
			require.Equal(t, "If-Match", p.Field)
			require.Empty(t, f.prod.records())
		}
	})
	t.Run("not a version: 400, nothing produced", func(t *testing.T) {
		t.Parallel()
		for _, im := range []string{`"abc"`, "abc", `"-1"`, `"1.5"`} {
			jobs := newFakeJobs(views.Job{ID: "j", Version: 4})
			f := newFixture(t, func(s *api.Server) { s.Jobs = jobs })
			resp, b := f.do(t, request{method: "PUT", path: "/v1/jobs/j", body: body, header: map[string]string{"If-Match": im}})
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", im, b)
			p := decodeProblem(t, resp, b)
			require.Equal(t, codecs.CodeMalformed, p.Code)
			require.Equal(t, "If-Match", p.Field)
			require.Empty(t, f.prod.records())
		}
	})
	t.Run("without a view: sent as if_version for the scheduler to check", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, nil)
		resp, b := f.do(t, request{method: "PUT", path: "/v1/jobs/j", body: body, header: map[string]string{"If-Match": `"9"`}})
		decodeAccepted(t, resp, b)
		c := decodeRecord(t, f.prod.records()[0], "j")
		require.Equal(t, uint64(9), *c.IfVersion)
	})
}

func TestTriggerBucket(t *testing.T) {
	t.Parallel()
	decodeTrigger := func(t *testing.T, r *kgo.Record, bucket string) codecs.BucketTrigger {
		t.Helper()
		require.Equal(t, "test-chronos-bucket-triggers", r.Topic)
		require.Equal(t, bucket, string(r.Key))
		bt, err := codecs.DecodeBucketTrigger(r.Value, r.Partition, r.Offset, codecs.DefaultLimits())
		require.NoError(t, err, "value: %s", r.Value)
		return bt
	}
	accepted := func(t *testing.T, resp *http.Response, b []byte) api.TriggerAccepted {
		t.Helper()
		require.Equal(t, http.StatusAccepted, resp.StatusCode, "body: %s", b)
		require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		var a api.TriggerAccepted
		require.NoError(t, json.Unmarshal(b, &a), "body: %s", b)
		return a
	}

	t.Run("no body: generated trigger id", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, nil)
		resp, b := f.do(t, request{method: "POST", path: "/v1/buckets/reports/trigger"})
		a := accepted(t, resp, b)
		require.Equal(t, "reports", a.Bucket)
		require.Regexp(t, `^t-[0-9a-f]{16}$`, a.TriggerID)
		require.Equal(t, int32(3), a.Partition)
		recs := f.prod.records()
		require.Len(t, recs, 1)
		bt := decodeTrigger(t, recs[0], "reports")
		require.Equal(t, codecs.BucketTrigger{V: 1, Bucket: "reports", TriggerID: a.TriggerID}, bt)
	})
	t.Run("empty object and escaped bucket", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, nil)
		resp, b := f.do(t, request{method: "POST", path: "/v1/buckets/month%20end%2Feu/trigger", body: `{}`})
		a := accepted(t, resp, b)
		require.Equal(t, "month end/eu", a.Bucket)
		bt := decodeTrigger(t, f.prod.records()[0], "month end/eu")
		require.Equal(t, a.TriggerID, bt.TriggerID)
	})
	t.Run("trigger id and payload as given", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, nil)
		resp, b := f.do(t, request{method: "POST", path: "/v1/buckets/reports/trigger", body: `{"trigger_id":"x","payload":{"a": 1}}`})
		a := accepted(t, resp, b)
		require.Equal(t, api.TriggerAccepted{Bucket: "reports", TriggerID: "x", Partition: 3, Offset: 0}, a)
		bt := decodeTrigger(t, f.prod.records()[0], "reports")
		require.Equal(t, "x", bt.TriggerID)
		require.JSONEq(t, `{"a":1}`, string(bt.Payload))
	})

	bad := []struct {
		name   string
		rq     request
		status int
		code   string
		field  string
	}{
		{"bad json", request{method: "POST", path: "/v1/buckets/reports/trigger", body: `{"trigger_id":`}, 400, codecs.CodeMalformed, ""},
		{"unknown field", request{method: "POST", path: "/v1/buckets/reports/trigger", body: `{"bucket":"other"}`}, 400, codecs.CodeUnknownField, "bucket"},
		{"wrong type", request{method: "POST", path: "/v1/buckets/reports/trigger", body: `{"trigger_id":1}`}, 400, codecs.CodeMalformed, "trigger_id"},
		{"trailing data", request{method: "POST", path: "/v1/buckets/reports/trigger", body: `{} {}`}, 400, codecs.CodeMalformed, ""},
		{"control character in bucket", request{method: "POST", path: "/v1/buckets/a%01b/trigger"}, 400, codecs.CodeInvalidField, "bucket"},
		{"control character in trigger id", request{method: "POST", path: "/v1/buckets/reports/trigger", body: `{"trigger_id":"a\u0001"}`},
			400, codecs.CodeInvalidField, "trigger_id"},
		{"wrong content type", request{method: "POST", path: "/v1/buckets/reports/trigger", body: `{}`,
			header: map[string]string{"Content-Type": "text/plain"}}, 415, codecs.CodeMalformed, "Content-Type"},
		{"wrong method", request{method: "GET", path: "/v1/buckets/reports/trigger"}, 405, "method_not_allowed", ""},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			resp, b := f.do(t, tc.rq)
			require.Equal(t, tc.status, resp.StatusCode, "body: %s", b)
			p := decodeProblem(t, resp, b)
			require.Equal(t, tc.code, p.Code, "detail: %s", p.Detail)
			require.Equal(t, tc.field, p.Field, "detail: %s", p.Detail)
			require.Empty(t, f.prod.records())
		})
	}
	t.Run("producer failure", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, nil)
		f.prod.err = errors.New("broker on fire")
		resp, b := f.do(t, request{method: "POST", path: "/v1/buckets/reports/trigger"})
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "body: %s", b)
		require.Equal(t, "kafka_unavailable", decodeProblem(t, resp, b).Code)
	})
	t.Run("token required", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, func(s *api.Server) { s.Token = "s3cret" })
		resp, b := f.do(t, request{method: "POST", path: "/v1/buckets/reports/trigger"})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "body: %s", b)
		require.Empty(t, f.prod.records())
		resp, b = f.do(t, request{method: "POST", path: "/v1/buckets/reports/trigger", header: map[string]string{"Authorization": "Bearer s3cret"}})
		accepted(t, resp, b)
	})
}

func TestReadsNeedToken(t *testing.T) {
	t.Parallel()
	jobs := newFakeJobs(sampleJob())
	f := newFixture(t, func(s *api.Server) {
		s.Token = "s3cret"
		s.Jobs = jobs
	})
	for _, path := range []string{"/v1/jobs", "/v1/jobs/nightly"} {
		resp, b := f.do(t, request{method: "GET", path: path})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s: %s", path, b)
		require.Equal(t, "unauthorized", decodeProblem(t, resp, b).Code)
		resp, b = f.do(t, request{method: "GET", path: path, header: map[string]string{"Authorization": "Bearer s3cret"}})
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, b)
	}
	require.Len(t, jobs.listCalls(), 1)
}

// TestPutRecognizesItsOwnDefinition guards read-your-writes against the real
// pipeline: a definition validated by PUT and the same definition stored in
// the scheduler's table and read back by the view compare equal, so the PUT
// answers 200 (the view compares them to tell its write from another's).
func TestPutRecognizesItsOwnDefinition(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"every":"90s"}`,
		`{"cron":"0 3 * * *","tz":"Europe/Berlin","payload":{"a": [1, 2]},"bucket":"b1","misfire_policy":"skip","misfire_grace":"5m"}`,
		`{"at":"2030-01-02T15:04:05.123+02:00","payload":null}`,
		`{"every":"1h","start":"2026-01-02T15:04:05Z","end":"2027-01-02T15:04:05-05:00","misfire_grace":"0s","misfire_policy":"fire_all"}`,
	} {
		var def codecs.JobDef
		require.NoError(t, json.Unmarshal([]byte(body), &def))
		job, err := def.Validate(codecs.DefaultLimits())
		require.NoError(t, err)
		rec, err := codecs.DecodeJobRecord(codecs.EncodeJobRecord(&codecs.JobRecord{Version: 2, Status: codecs.StatusActive, Job: job}))
		require.NoError(t, err)
		stored := rec.Job.Def()

		jobs := newFakeJobs(views.Job{ID: "j", Version: 1})
		f := newFixture(t, func(s *api.Server) {
			s.Jobs = jobs
			s.Producer = hookProducer{Producer: s.Producer, after: func(*kgo.Record) {
				jobs.set(views.Job{ID: "j", Version: 2, Status: "active", Job: stored})
			}}
		})
		resp, b := f.do(t, request{method: "PUT", path: "/v1/jobs/j", body: body})
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", body, b)
	}
}
