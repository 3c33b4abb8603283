package processors_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestBadCommandsAreRejectedAndValidJobsKeepFiring sends one invalid command
// of every kind between valid ones: each lands in chronos-rejects with its
// reason and original bytes, and every valid job fires.
func TestBadCommandsAreRejectedAndValidJobsKeepFiring(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 4)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	rejects := env.Collect(string(env.Layout.Rejects()))
	env.Start(env.Config())
	t0 := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)

	bad := []struct {
		key, value, code string
	}{
		{"m1", `{not json`, codecs.CodeMalformed},
		{"m2", `{"v":1,"op":"put","id":"m2","job":{"every":"1s"}} trailing`, codecs.CodeMalformed},
		{"m3", `{"v":1,"op":7}`, codecs.CodeMalformed},
		{"v2", `{"v":2,"op":"put","job":{"every":"1s"}}`, codecs.CodeUnknownVersion},
		{"op", `{"v":1,"op":"explode"}`, codecs.CodeUnknownOp},
		{"uf", `{"v":1,"op":"put","job":{"every":"1s","colour":"red"}}`, codecs.CodeUnknownField},
		{"cron", `{"v":1,"op":"put","job":{"cron":"61 * * * *"}}`, codecs.CodeInvalidSchedule},
		{"zone", `{"v":1,"op":"put","job":{"cron":"* * * * *","tz":"Mars/Olympus"}}`, codecs.CodeInvalidSchedule},
		{"", `{"v":1,"op":"put","job":{"every":"1s"}}`, codecs.CodeInvalidID},
		{strings.Repeat("x", 300), `{"v":1,"op":"put","job":{"every":"1s"}}`, codecs.CodeInvalidID},
		{"__chronos/shard/0/0", `{"v":1,"op":"put","job":{"every":"1s"}}`, codecs.CodeReservedID},
		{"big", `{"v":1,"op":"put","job":{"every":"1s","payload":"` + strings.Repeat("a", 70<<10) + `"}}`, codecs.CodePayloadTooLarge},
		{"ghost", `{"v":1,"op":"pause"}`, codecs.CodeUnknownJob},
		{"binary\x00key", "\x00\x01\x02\xff", codecs.CodeMalformed},
	}
	for i, b := range bad {
		env.Produce(string(env.Layout.Jobs()), b.key, []byte(b.value), t0)
		env.Put("good-"+string(rune('a'+i)), codecs.JobDef{Every: "10s"}, t0)
	}
	// A delete of an unknown job is a no-op, not a reject.
	env.Produce(string(env.Layout.Jobs()), "never-existed", []byte(`{"v":1,"op":"delete"}`), t0)
	env.WaitApplied()
	env.Tick(t0.Add(10 * time.Second))

	rejects.WaitLen(t, len(bad), 30*time.Second)
	byKey := map[string]codecs.Reject{}
	for _, r := range rejects.Records() {
		rj, err := codecs.DecodeReject(r.Value)
		require.NoError(t, err)
		require.NotEmpty(t, rj.Reason)
		byKey[string(rj.Key)] = rj
	}
	for _, b := range bad {
		rj, ok := byKey[b.key]
		require.True(t, ok, "no reject for key %q", b.key)
		require.Equal(t, b.code, rj.Code, "key %q: %s", b.key, rj.Reason)
		require.Equal(t, b.value[:min(len(b.value), codecs.RejectSampleBytes)], string(rj.Value), "original bytes kept up to the sample size (base64 %s)", base64.StdEncoding.EncodeToString(rj.Value))
		require.Equal(t, len(b.value), rj.ValueSize)
		require.Equal(t, string(env.Layout.Jobs()), rj.Topic)
	}
	dispatch.WaitLen(t, len(bad), 30*time.Second)
	require.Len(t, rejects.Records(), len(bad), "exactly one reject per bad command, none for the unknown delete")
	fired := map[string]bool{}
	for _, d := range dispatch.Dispatches(t) {
		fired[d.FireID] = true
	}
	for i := range bad {
		require.Contains(t, fired, "good-"+string(rune('a'+i))+"@2026-04-01T00:00:10Z")
	}
	require.Len(t, fired, len(bad))
}

// TestRestartCatchesUpPerMisfirePolicy stops an instance, lets the clock
// jump 10 s while it is down, and restarts it on the same data dir: a job
// with the default grace gets every missed fire late; a job with a 2 s grace
// gets one catch-up fire carrying the missed count (fire_once), then its
// on-time fires; a skip job gets only the on-time ones.
func TestRestartCatchesUpPerMisfirePolicy(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 4)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	cfg := env.Config()
	inst := env.Start(cfg)
	t0 := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	env.Put("default", codecs.JobDef{Every: "1s"}, t0)
	env.Put("grace2", codecs.JobDef{Every: "1s", MisfireGrace: "2s"}, t0)
	env.Put("skip", codecs.JobDef{Every: "1s", MisfireGrace: "2s", MisfirePolicy: codecs.MisfireSkip}, t0)
	env.WaitApplied()
	env.Tick(t0.Add(time.Second))
	dispatch.WaitLen(t, 3, 30*time.Second)
	inst.Stop()

	env.Tick(t0.Add(11 * time.Second)) // one jump while down
	env.Start(cfg)
	want := map[string]int64{}
	for s := 1; s <= 11; s++ {
		want["default@"+t0.Add(time.Duration(s)*time.Second).Format(time.RFC3339)] = 0
	}
	// 2..8 are late by more than 2 s at T=11: fire_once fires 8 with 6 missed.
	want["grace2@2026-04-01T00:00:01Z"] = 0
	want["grace2@2026-04-01T00:00:08Z"] = 6
	want["skip@2026-04-01T00:00:01Z"] = 0
	want["skip@2026-04-01T00:00:09Z"] = 7
	for _, s := range []int{9, 10, 11} {
		want["grace2@"+t0.Add(time.Duration(s)*time.Second).Format(time.RFC3339)] = 0
		if s > 9 {
			want["skip@"+t0.Add(time.Duration(s)*time.Second).Format(time.RFC3339)] = 0
		}
	}
	dispatch.WaitLen(t, len(want), 30*time.Second)
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.ShardTriggers()), 30*time.Second)
	got := map[string]int64{}
	for _, d := range dispatch.Dispatches(t) {
		_, dup := got[d.FireID]
		require.False(t, dup, "duplicate %s after a clean restart", d.FireID)
		got[d.FireID] = d.Missed
	}
	require.Equal(t, want, got)
}
