package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
)

// adv13Instance starts an instance on the embedded broker (simulated
// clock, no credentials) with its HTTP API on a free loopback port, and
// returns the environment and the API's base URL.
func adv13Instance(t *testing.T) (*testenv.Env, string) {
	env := testenv.New(t, 2)
	cfg := env.Config()
	cfg.Registerer = prometheus.NewRegistry()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cfg.HTTP.Addr = ln.Addr().String()
	require.NoError(t, ln.Close())
	env.Start(cfg)
	return env, "http://" + cfg.HTTP.Addr
}

func adv13Get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

// TestAdversary13NextIgnoresMaxFires: GET /v1/jobs/{id}?next=N lists fires
// past the job's max_fires.
//
// Promise (docs/openapi.json, getJob): "`next_fires` holds the next 5 fires
// the job is owed (none unless active); with `next` it holds that many";
// api/next.go: "without from, the next n fires the job is owed".
// docs/schedules.md (max_fires): "`max_fires: N` ... stops a job after `N`
// of its scheduled times ... the scheduler allots it the times it has left
// and records the last one (`LimitEnd`): the schedule ends there."
//
// Reproduction: put {"every":"1h","max_fires":2}; GET the job plainly and
// with ?next=5 (the default count, spelled out).
//
// Observed: the plain GET lists the 2 fires the job is owed
// (remaining_fires 2); ?next=5 lists 5, three of them after the job
// completes. The same request with the default count answers differently.
// Cause: api.nextFires recomputes from schedule.Parse(norm.Spec), the bare
// spec, not the job's schedule with its LimitEnd (codecs.JobSchedule) as
// the view does.
func TestAdversary13NextIgnoresMaxFires(t *testing.T) {
	env, base := adv13Instance(t)
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	env.Put("capped", codecs.JobDef{Every: "1h", MaxFires: 2}, t0)
	env.WaitApplied()
	var plain struct {
		NextFires      []time.Time `json:"next_fires"`
		RemainingFires *uint64     `json:"remaining_fires"`
	}
	testenv.Eventually(t, time.Minute, func() error {
		code, b := adv13Get(t, base+"/v1/jobs/capped")
		if code != http.StatusOK {
			return fmt.Errorf("GET: %d %s", code, b)
		}
		return json.Unmarshal(b, &plain)
	})
	require.NotNil(t, plain.RemainingFires)
	require.EqualValues(t, 2, *plain.RemainingFires)
	require.Len(t, plain.NextFires, 2, "the plain GET lists the owed fires")

	code, b := adv13Get(t, base+"/v1/jobs/capped?next=5")
	require.Equal(t, http.StatusOK, code, string(b))
	var withNext struct {
		NextFires []time.Time `json:"next_fires"`
	}
	require.NoError(t, json.Unmarshal(b, &withNext))
	require.Equal(t, plain.NextFires, withNext.NextFires,
		"?next=5 lists %d fires for a job owed %d (max_fires 2): %v", len(withNext.NextFires), len(plain.NextFires), withNext.NextFires)
}
