package codecs_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

func TestDecodeResult(t *testing.T) {
	t.Parallel()
	const sched = `"scheduled_at":"2026-03-01T09:00:00Z"`
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, key, value string
		code, field      string // "" when valid
		want             codecs.Result
	}{
		{name: "succeeded", key: "j", value: `{"v":1,"fire_id":"j@2026-03-01T09:00:00Z",` + sched + `,"status":"succeeded","started_at":"2026-03-01T09:00:01Z","finished_at":"2026-03-01T09:00:03Z"}`,
			want: codecs.Result{JobID: "j", Suffix: "2026-03-01T09:00:00Z", ScheduledAt: at, Status: "succeeded", Attempt: 1,
				StartedAt: at.Add(time.Second), FinishedAt: at.Add(3 * time.Second)}},
		{name: "failed with error and attempt", key: "j", value: `{"v":1,"fire_id":"j@t1","job_id":"j",` + sched + `,"status":"failed","attempt":3,"finished_at":"2026-03-01T09:00:03+01:00","error":"boom"}`,
			want: codecs.Result{JobID: "j", Suffix: "t1", ScheduledAt: at, Status: "failed", Attempt: 3, FinishedAt: at.Add(3*time.Second - time.Hour), Error: "boom"}},
		{name: "derived trigger id", key: "j", value: `{"v":1,"fire_id":"j@m-3-17",` + sched + `,"status":"started","started_at":"2026-03-01T09:00:01Z"}`,
			want: codecs.Result{JobID: "j", Suffix: "m-3-17", ScheduledAt: at, Status: "started", Attempt: 1, StartedAt: at.Add(time.Second)}},
		{name: "job id with @", key: "a@b", value: `{"v":1,"fire_id":"a@b@t",` + sched + `,"status":"skipped","finished_at":"2026-03-01T09:00:01Z"}`,
			want: codecs.Result{JobID: "a@b", Suffix: "t", ScheduledAt: at, Status: "skipped", Attempt: 1, FinishedAt: at.Add(time.Second)}},
		{name: "not json", key: "j", value: `{`, code: codecs.CodeMalformed},
		{name: "trailing", key: "j", value: `{"v":1} {}`, code: codecs.CodeMalformed},
		{name: "unknown field", key: "j", value: `{"v":1,"x":1}`, code: codecs.CodeUnknownField, field: "x"},
		{name: "case", key: "j", value: `{"v":1,"Status":"failed"}`, code: codecs.CodeUnknownField, field: "Status"},
		{name: "twice", key: "j", value: `{"v":1,"fire_id":"j@t","fire_id":"j@u",` + sched + `,"status":"skipped","finished_at":"2026-03-01T09:00:01Z"}`, code: codecs.CodeMalformed, field: "fire_id"},
		{name: "version", key: "j", value: `{"v":2}`, code: codecs.CodeUnknownVersion, field: "v"},
		{name: "bad key", key: "", value: `{"v":1,"fire_id":"@t",` + sched + `,"status":"skipped","finished_at":"2026-03-01T09:00:01Z"}`, code: codecs.CodeInvalidID},
		{name: "job_id differs", key: "j", value: `{"v":1,"job_id":"k","fire_id":"j@t",` + sched + `,"status":"skipped","finished_at":"2026-03-01T09:00:01Z"}`, code: codecs.CodeInvalidID, field: "job_id"},
		{name: "fire_id of another job", key: "j", value: `{"v":1,"fire_id":"k@t",` + sched + `,"status":"skipped","finished_at":"2026-03-01T09:00:01Z"}`, code: codecs.CodeInvalidField, field: "fire_id"},
		{name: "fire_id without @", key: "j", value: `{"v":1,"fire_id":"j",` + sched + `,"status":"skipped","finished_at":"2026-03-01T09:00:01Z"}`, code: codecs.CodeInvalidField, field: "fire_id"},
		{name: "bad trigger id", key: "j", value: `{"v":1,"fire_id":"j@a\u0001",` + sched + `,"status":"skipped","finished_at":"2026-03-01T09:00:01Z"}`, code: codecs.CodeInvalidField, field: "fire_id"},
		{name: "scheduled_at differs", key: "j", value: `{"v":1,"fire_id":"j@2026-03-01T09:00:01Z",` + sched + `,"status":"skipped","finished_at":"2026-03-01T09:00:01Z"}`, code: codecs.CodeInvalidField, field: "scheduled_at"},
		{name: "no scheduled_at", key: "j", value: `{"v":1,"fire_id":"j@t","status":"skipped","finished_at":"2026-03-01T09:00:01Z"}`, code: codecs.CodeInvalidField, field: "scheduled_at"},
		{name: "unknown status", key: "j", value: `{"v":1,"fire_id":"j@t",` + sched + `,"status":"done","finished_at":"2026-03-01T09:00:01Z"}`, code: codecs.CodeInvalidField, field: "status"},
		{name: "started without start", key: "j", value: `{"v":1,"fire_id":"j@t",` + sched + `,"status":"started"}`, code: codecs.CodeInvalidField, field: "started_at"},
		{name: "started with finish", key: "j", value: `{"v":1,"fire_id":"j@t",` + sched + `,"status":"started","started_at":"2026-03-01T09:00:01Z","finished_at":"2026-03-01T09:00:01Z"}`, code: codecs.CodeInvalidField, field: "started_at"},
		{name: "terminal without finish", key: "j", value: `{"v":1,"fire_id":"j@t",` + sched + `,"status":"succeeded"}`, code: codecs.CodeInvalidField, field: "finished_at"},
		{name: "finish before start", key: "j", value: `{"v":1,"fire_id":"j@t",` + sched + `,"status":"succeeded","started_at":"2026-03-01T09:00:02Z","finished_at":"2026-03-01T09:00:01Z"}`, code: codecs.CodeInvalidField, field: "finished_at"},
		{name: "negative attempt", key: "j", value: `{"v":1,"fire_id":"j@t",` + sched + `,"status":"skipped","attempt":-1,"finished_at":"2026-03-01T09:00:01Z"}`, code: codecs.CodeInvalidField, field: "attempt"},
		{name: "huge attempt", key: "j", value: `{"v":1,"fire_id":"j@t",` + sched + `,"status":"skipped","attempt":1000001,"finished_at":"2026-03-01T09:00:01Z"}`, code: codecs.CodeInvalidField, field: "attempt"},
		{name: "error on success", key: "j", value: `{"v":1,"fire_id":"j@t",` + sched + `,"status":"succeeded","finished_at":"2026-03-01T09:00:01Z","error":"x"}`, code: codecs.CodeInvalidField, field: "error"},
		{name: "error too long", key: "j", value: `{"v":1,"fire_id":"j@t",` + sched + `,"status":"failed","finished_at":"2026-03-01T09:00:01Z","error":"` + strings.Repeat("x", 4097) + `"}`, code: codecs.CodeInvalidField, field: "error"},
		{name: "record too large", key: "j", value: `{"v":1,"error":"` + strings.Repeat("x", 17<<10) + `"}`, code: codecs.CodePayloadTooLarge},
		{name: "time before 1970", key: "j", value: `{"v":1,"fire_id":"j@t",` + sched + `,"status":"skipped","finished_at":"1969-12-31T23:59:59Z"}`, code: codecs.CodeInvalidField, field: "finished_at"},
		{name: "wrong type", key: "j", value: `{"v":1,"fire_id":"j@t",` + sched + `,"status":"skipped","attempt":"1","finished_at":"2026-03-01T09:00:01Z"}`, code: codecs.CodeMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := codecs.DecodeResult([]byte(tc.key), []byte(tc.value))
			if tc.code == "" {
				require.NoError(t, err)
				require.Equal(t, tc.want, r)
				return
			}
			var ce *codecs.Error
			require.True(t, errors.As(err, &ce), "%v", err)
			require.Equal(t, tc.code, ce.Code, "%v", err)
			if tc.field != "" {
				require.Equal(t, tc.field, ce.Field, "%v", err)
			}
		})
	}
}

// FuzzDecodeResult decodes arbitrary records: it never panics, errors are
// *codecs.Error, and a decoded result re-encoded decodes to the same.
func FuzzDecodeResult(f *testing.F) {
	for _, s := range [][2]string{
		{"j", `{"v":1,"fire_id":"j@2026-03-01T09:00:00Z","scheduled_at":"2026-03-01T09:00:00Z","status":"succeeded","started_at":"2026-03-01T09:00:01Z","finished_at":"2026-03-01T09:00:03Z"}`},
		{"j", `{"v":1,"fire_id":"j@t1","job_id":"j","scheduled_at":"2026-03-01T09:00:00Z","status":"failed","attempt":3,"finished_at":"2026-03-01T09:00:03+01:00","error":"boom"}`},
		{"a@b", `{"v":1,"fire_id":"a@b@m-1-2","scheduled_at":"2026-03-01T09:00:00Z","status":"started","started_at":"2026-03-01T09:00:01Z"}`},
		{"j", `{"v":1,"fire_id":"j@t","fire_id":"j@t"}`},
		{"j", `{"v":1,"Fire_id":"j@t"}`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		r, err := codecs.DecodeResult(key, value)
		if err != nil {
			var e *codecs.Error
			require.True(t, errors.As(err, &e), "%T %v", err, err)
			require.NotEmpty(t, e.Code)
			return
		}
		m := codecs.ResultMsg{FireID: r.FireID(), ScheduledAt: r.ScheduledAt, Status: r.Status, Attempt: r.Attempt, Error: r.Error}
		if !r.StartedAt.IsZero() {
			m.StartedAt = &r.StartedAt
		}
		if !r.FinishedAt.IsZero() {
			m.FinishedAt = &r.FinishedAt
		}
		b, err := codecs.EncodeResult(m)
		require.NoError(t, err)
		r2, err := codecs.DecodeResult(key, b)
		require.NoError(t, err, "re-encoded %s", b)
		require.Equal(t, r, r2)
	})
}

// TestResultFireIDSpellings checks that every RFC 3339 spelling of a
// scheduled fire's instant names the dispatch event's canonical fire_id
// (the history keys a fire by it: two spellings were two fires).
func TestResultFireIDSpellings(t *testing.T) {
	at := time.Date(2026, 6, 1, 0, 0, 1, 500_000_000, time.UTC)
	want := codecs.ScheduledFireID("j", at)
	for _, spelled := range []string{"2026-06-01T00:00:01.5Z", "2026-06-01T00:00:01.500Z", "2026-06-01T02:00:01.5+02:00", "2026-05-31T19:00:01.50-05:00"} {
		v := `{"v":1,"fire_id":"j@` + spelled + `","scheduled_at":"2026-06-01T00:00:01.5Z","status":"succeeded","finished_at":"2026-06-01T00:00:02Z"}`
		r, err := codecs.DecodeResult([]byte("j"), []byte(v))
		if err != nil {
			t.Fatalf("%s: %v", spelled, err)
		}
		if r.FireID() != want {
			t.Errorf("%s: fire_id %q, want %q", spelled, r.FireID(), want)
		}
	}
}

// TestCheckResultTime checks the bound of a result's scheduled_at against
// the reading group's clock, and of a dispatch event's against its
// fired_at, at and around the edge.
func TestCheckResultTime(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		at time.Time
		ok bool
	}{
		{now.Add(-48 * time.Hour), true},
		{now, true},
		{now.Add(codecs.HistoryMaxAhead), true},
		{now.Add(codecs.HistoryMaxAhead + time.Nanosecond), false},
		{time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), false},
	} {
		for name, err := range map[string]error{
			"result":   codecs.CheckResultTime(codecs.Result{ScheduledAt: c.at}, now),
			"dispatch": codecs.CheckDispatchTime(codecs.Dispatch{ScheduledAt: c.at, FiredAt: now}),
		} {
			if (err == nil) != c.ok {
				t.Errorf("%s: scheduled_at %s, now %s: error %v, want ok=%v", name, c.at, now, err, c.ok)
			}
			var ce *codecs.Error
			if err != nil && (!errors.As(err, &ce) || ce.Field != "scheduled_at") {
				t.Errorf("%s: error %v is not a codecs.Error on scheduled_at", name, err)
			}
		}
	}
}
