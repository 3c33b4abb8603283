package codecs_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// trickyStrings are strings whose JSON encoding needs escaping.
var trickyStrings = []string{
	"",
	"plain",
	`quote " and backslash \ and slash /`,
	"controls \x00\x01\b\t\n\v\f\r\x1b\x1f and del \x7f",
	"<script>alert('&')</script>",
	"line sep \u2028 para sep \u2029",
	"emoji 😀👍🏽 and ä€",
	"invalid \xff utf-8 \xc3 truncated \xe2\x82",
	"surrogate half \xed\xa0\x80",
	"replacement char itself \ufffd",
	strings.Repeat(`"\`, 100),
}

// fixUTF8 is what a JSON round trip makes of s: each invalid byte becomes U+FFFD.
func fixUTF8(s string) string {
	var b strings.Builder
	for _, r := range s { // an invalid byte decodes as utf8.RuneError of width 1
		b.WriteRune(r)
	}
	return b.String()
}

func TestAppendDispatchMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for i, s := range trickyStrings {
		for _, d := range []codecs.Dispatch{
			{FireID: codecs.ScheduledFireID(s, at), JobID: s, Trigger: codecs.TriggerSchedule, ScheduledAt: at, FiredAt: at.Add(1500 * time.Millisecond)},
			{FireID: codecs.TriggeredFireID(s, s), JobID: s, Trigger: codecs.TriggerBucket, ScheduledAt: at, FiredAt: at.Add(time.Nanosecond),
				Missed: -3, Bucket: s, TriggerID: s, Payload: json.RawMessage(`{"a":[1,"x\"y",null],"b":{}}`)},
			{FireID: s, JobID: "j", Trigger: codecs.TriggerManual, ScheduledAt: at, FiredAt: at, Missed: 1 << 62, TriggerID: s, Payload: json.RawMessage(`"` + strings.ReplaceAll(s, `"`, ``) + `"`)},
			{FireID: s, JobID: s, Trigger: s},
		} {
			d.V = codecs.DispatchVersion
			if !json.Valid(d.Payload) {
				d.Payload = nil
			}
			got := codecs.AppendDispatch(nil, &d)
			require.True(t, json.Valid(got), "case %d: %s", i, got)
			want, err := json.Marshal(d)
			require.NoError(t, err)
			if !strings.ContainsAny(string(d.Payload), "<>&\u2028\u2029") {
				require.Equal(t, string(want), string(got), "case %d", i)
			}

			dec, err := codecs.DecodeDispatch(got)
			require.NoError(t, err)
			var viaJSON codecs.Dispatch
			require.NoError(t, json.Unmarshal(want, &viaJSON))
			requireJSONEqual(t, viaJSON.Payload, dec.Payload) // json.Marshal HTML-escapes raw payloads
			require.Equal(t, string(d.Payload), string(dec.Payload))
			viaJSON.Payload, dec.Payload = nil, nil
			require.Equal(t, viaJSON, dec)
			require.Equal(t, fixUTF8(d.JobID), dec.JobID)
			require.Equal(t, fixUTF8(d.FireID), dec.FireID)
			require.Equal(t, fixUTF8(d.Bucket), dec.Bucket)
			require.Equal(t, fixUTF8(d.TriggerID), dec.TriggerID)
			require.Equal(t, fixUTF8(d.Trigger), dec.Trigger)
			require.True(t, d.ScheduledAt.Equal(dec.ScheduledAt))
			require.True(t, d.FiredAt.Equal(dec.FiredAt))
			require.Equal(t, d.Missed, dec.Missed)
		}
	}
}

func TestAppendDispatchAppends(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 4, 5, 6, 7, 890, time.FixedZone("X", 3600))
	d := codecs.Dispatch{FireID: "f", JobID: "j", Trigger: codecs.TriggerSchedule, ScheduledAt: at, FiredAt: at}
	prefix := []byte("prefix")
	out := codecs.AppendDispatch(prefix, &d)
	require.Equal(t, "prefix", string(out[:6]))
	require.Equal(t, `{"v":1,"fire_id":"f","job_id":"j","trigger":"schedule","scheduled_at":"2026-03-04T04:06:07.00000089Z","fired_at":"2026-03-04T04:06:07.00000089Z","missed":0}`, string(out[6:]))
}

// TestAppendDispatchNoAllocs is not parallel: AllocsPerRun forbids it.
func TestAppendDispatchNoAllocs(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 890, time.FixedZone("X", 3600))
	d := codecs.Dispatch{FireID: "j@t<>", JobID: "j\n", Trigger: codecs.TriggerBucket, ScheduledAt: at, FiredAt: at,
		Bucket: "b\u2028", TriggerID: "t\xff", Payload: json.RawMessage(`{"a":1}`)}
	buf := make([]byte, 0, 512)
	allocs := testing.AllocsPerRun(100, func() { buf = codecs.AppendDispatch(buf[:0], &d) })
	require.Zero(t, allocs)
}

func TestDecodeDispatch(t *testing.T) {
	t.Parallel()
	d, err := codecs.DecodeDispatch([]byte(`{"v":1,"fire_id":"j@t","job_id":"j","trigger":"manual","scheduled_at":"2026-01-01T00:00:00Z","fired_at":"2026-01-01T00:00:01Z","missed":0,"trigger_id":"t","payload":{"a":1}}`))
	require.NoError(t, err)
	require.Equal(t, "j@t", d.FireID)
	require.Equal(t, json.RawMessage(`{"a":1}`), d.Payload)

	for _, tc := range []struct {
		in, code, field string
	}{
		{`{"v":2,"fire_id":"x"}`, codecs.CodeUnknownVersion, "v"},
		{`{"fire_id":"x"}`, codecs.CodeUnknownVersion, "v"},
		{`{"v":1,"missed":"x"}`, codecs.CodeMalformed, "missed"},
		{`{"v":1,"scheduled_at":"yesterday"}`, codecs.CodeMalformed, ""},
		{`{"v":1`, codecs.CodeMalformed, ""},
		{``, codecs.CodeMalformed, ""},
	} {
		_, err := codecs.DecodeDispatch([]byte(tc.in))
		requireCode(t, err, tc.code, tc.field)
	}
}

func TestFireIDs(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	for _, tc := range []struct {
		at   time.Time
		want string
	}{
		{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "job@2026-01-02T03:04:05Z"},
		{time.Date(2026, 7, 2, 3, 4, 5, 0, berlin), "job@2026-07-02T01:04:05Z"},
		{time.Date(2026, 1, 2, 3, 4, 5, 500_000_000, time.UTC), "job@2026-01-02T03:04:05.5Z"},
		{time.Date(2026, 1, 2, 3, 4, 5, 1, time.FixedZone("", -5*3600)), "job@2026-01-02T08:04:05.000000001Z"},
		{time.Date(2026, 1, 2, 3, 4, 5, 120_000, time.UTC), "job@2026-01-02T03:04:05.00012Z"},
	} {
		require.Equal(t, tc.want, codecs.ScheduledFireID("job", tc.at))
	}
	// The monotonic clock reading does not leak into the id.
	now := time.Now()
	require.Equal(t, codecs.ScheduledFireID("j", now.Round(0)), codecs.ScheduledFireID("j", now))
	require.Equal(t, "job@run-1", codecs.TriggeredFireID("job", "run-1"))
}

// requireJSONEqual compares two JSON documents by value (nil/empty: absent).
func requireJSONEqual(t *testing.T, want, got []byte) {
	t.Helper()
	if len(want) == 0 || len(got) == 0 {
		require.Equal(t, len(want) == 0, len(got) == 0, "want %s, got %s", want, got)
		return
	}
	decode := func(b []byte) any {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var v any
		require.NoError(t, dec.Decode(&v), "%s", b)
		return v
	}
	require.Equal(t, decode(want), decode(got))
}
