package history

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestAdversary13bJitteredDispatchDecodesThePayload: a jittered job's
// dispatch event carries due_at between scheduled_at and fired_at
// (codecs.AppendDispatch); codecs.DispatchHead expects fired_at right after
// scheduled_at, so every fire of a jittered job falls back to
// codecs.DecodeDispatch, which decodes the whole payload.
//
// Promise (docs/configuration.md, Memory, History group): "It reads a
// dispatch event up to its payload and folds the fire into the job's
// record in place: no payload is decoded or kept"; processors/history:
// "a dispatch event is read only up to its payload (codecs.DispatchHead), which
// the history never needs".
//
// Reproduction: the scheduler's encoding of a fire of a job with jitter
// (DueAt set) and a 512 KiB payload, folded by decodeDispatch.
//
// Observed: codecs.DispatchHead refuses it (ok false) and decodeDispatch
// allocates about the payload's size again per fire (json.Unmarshal of the
// payload), where a job without jitter allocates almost nothing.
func TestAdversary13bJitteredDispatchDecodesThePayload(t *testing.T) {
	at := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	payload := []byte(`{"blob":"` + strings.Repeat("x", 512<<10) + `"}`)
	d := codecs.Dispatch{FireID: codecs.ScheduledFireID("j", at), JobID: "j", Trigger: codecs.TriggerSchedule,
		ScheduledAt: at, DueAt: at.Add(7 * time.Second), FiredAt: at.Add(7 * time.Second), Payload: payload}
	raw := codecs.AppendDispatch(nil, &d)
	_, ok := codecs.DispatchHead(raw)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 10 {
		_, _, err := decodeDispatch("j", raw)
		require.NoError(t, err)
	}
	runtime.ReadMemStats(&after)
	perFire := (after.TotalAlloc - before.TotalAlloc) / 10
	t.Logf("DispatchHead ok=%v; decodeDispatch allocates %d bytes per fire (payload %d bytes)", ok, perFire, len(payload))
	require.True(t, ok, "a jittered job's dispatch event (due_at set) is not read by codecs.DispatchHead: its %d-byte payload is decoded, %d bytes allocated per fire", len(payload), perFire)
}
