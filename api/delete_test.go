package api_test

import (
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

// lazyView applies a produced delete only after the view has been asked
// for the job's version once more, as a scheduler that applies it a little
// later: a server that answers without waiting leaves the job readable.
type lazyView struct {
	*fakeJobs
	mu      sync.Mutex
	pending []string
}

func (v *lazyView) Version(id string) (uint64, error) {
	ver, err := v.fakeJobs.Version(id)
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, p := range v.pending {
		v.fakeJobs.mu.Lock()
		delete(v.fakeJobs.jobs, p)
		v.fakeJobs.mu.Unlock()
	}
	v.pending = nil
	return ver, err
}

// produced notes the delete a record carries.
func (v *lazyView) produced(t *testing.T) func(*kgo.Record) {
	return func(r *kgo.Record) {
		c, err := codecs.DecodeCommand(r.Key, r.Value, codecs.DefaultLimits())
		if err != nil || c.Op != codecs.OpDelete {
			t.Errorf("unexpected record %s: %v", r.Value, err)
			return
		}
		v.mu.Lock()
		defer v.mu.Unlock()
		v.pending = append(v.pending, c.ID)
	}
}

// TestDeleteReadYourWrites: a DELETE of a job the view shows answers once
// the view no longer shows it (bounded), so a GET after it answers 404
// (issue 20: schemathesis's use-after-free check found the job still
// readable right after its DELETE).
func TestDeleteReadYourWrites(t *testing.T) {
	t.Parallel()
	t.Run("applied: GET after DELETE is 404", func(t *testing.T) {
		t.Parallel()
		view := &lazyView{fakeJobs: newFakeJobs(views.Job{ID: "j", Version: 4})}
		f := newFixture(t, func(s *api.Server) {
			s.Jobs = view
			s.ReadYourWrites = time.Minute
			s.Producer = hookProducer{Producer: s.Producer, after: view.produced(t)}
		})
		resp, b := f.do(t, request{method: http.MethodDelete, path: "/v1/jobs/j"})
		a := decodeAccepted(t, resp, b)
		require.Equal(t, codecs.OpDelete, a.Op)
		resp, b = f.do(t, request{method: http.MethodGet, path: "/v1/jobs/j"})
		require.Equal(t, http.StatusNotFound, resp.StatusCode, "body: %s", b)
	})
	t.Run("not applied in time: still 202", func(t *testing.T) {
		t.Parallel()
		jobs := newFakeJobs(views.Job{ID: "j", Version: 4})
		f := newFixture(t, func(s *api.Server) { s.Jobs = jobs; s.ReadYourWrites = 20 * time.Millisecond })
		resp, b := f.do(t, request{method: http.MethodDelete, path: "/v1/jobs/j"})
		decodeAccepted(t, resp, b)
		require.Len(t, f.prod.records(), 1)
	})
	t.Run("unknown job: no wait", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, func(s *api.Server) { s.Jobs = newFakeJobs(); s.ReadYourWrites = time.Hour })
		resp, b := f.do(t, request{method: http.MethodDelete, path: "/v1/jobs/nope"})
		decodeAccepted(t, resp, b)
	})
}
