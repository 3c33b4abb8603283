package codecs_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

func TestNameRules(t *testing.T) {
	t.Parallel()
	valid := []string{"a", "invoice-42", "tenant-42/report-daily", "user@example.com", "a b", "é", "ä😀", "日本語", "x.y", "...", "a/../b", "%2F", "?#&", strings.Repeat("a", codecs.MaxIDLen)}
	invalid := map[string]string{
		"":                       "empty",
		".":                      "URL path segment",
		"..":                     "URL path segment",
		" ":                      "starts with a space",
		"   ":                    "starts with a space",
		" a":                     "starts with a space",
		"a ":                     "ends with a space",
		"a\tb":                   "control character",
		"a\x00b":                 "control character",
		"a\x7fb":                 "control character",
		"a\u0085b":               "control character",
		"a\u009fb":               "control character",
		"invoice\u202efdp.exe":   "format character",
		"a\u2066b\u2069":         "format character",
		"a\u200bb":               "format character",
		"a\u200db":               "format character",
		"\ufeffa":                "format character",
		"a\u00a0b":               "space other than U+0020",
		"a\u3000b":               "space other than U+0020",
		"a\u2028b":               "space other than U+0020",
		"\u3164":                 "invisible character",
		"a\u2800":                "invisible character",
		"a\ue000":                "private-use",
		"a\U000e0001":            "format character",
		"a\U0010fffe":            "non-graphic",
		"e\u0301":                "NFC",
		"\xff":                   "UTF-8",
		strings.Repeat("a", 257): "limit",
		strings.Repeat("é", 129): "limit",
		"\u212b":                 "NFC", // ANGSTROM SIGN, NFC is U+00C5
	}
	for _, s := range valid {
		require.NoError(t, codecs.ValidateID(s), "%q", s)
		require.NoError(t, codecs.ValidateBucket(s), "%q", s)
	}
	for s, why := range invalid {
		err := codecs.ValidateID(s)
		requireCode(t, err, codecs.CodeInvalidID, "id")
		require.ErrorContains(t, err, why, "%q", s)
		if s != "" { // "" is "no bucket" and "derive the trigger id"
			requireCode(t, codecs.ValidateBucket(s), codecs.CodeInvalidField, "bucket")
			requireCode(t, codecs.ValidateTriggerID(s), codecs.CodeInvalidField, "trigger_id")
		}
	}
	require.NoError(t, codecs.ValidateBucket(""), "no bucket")
	requireCode(t, codecs.ValidateID("__chronos/x"), codecs.CodeReservedID, "id")

	// Trigger ids: the name rules plus what keeps fire_ids apart.
	for _, s := range []string{"t-0123456789abcdef", "close-2026-05", "nightly", "m-1", "b-1-x", "2026-12-01"} {
		require.NoError(t, codecs.ValidateTriggerID(s), "%q", s)
	}
	for _, s := range []string{"example.com@2026-12-01T09:00:00Z", "a@b", "2026-12-01T09:00:00Z", "2026-12-01T09:00:00.5+01:00", "m-3-17", "b-0-0"} {
		requireCode(t, codecs.ValidateTriggerID(s), codecs.CodeInvalidField, "trigger_id")
	}
}

// TestNameRulesAtEveryEntrance: the same rules hold for the key of a
// command, its "id", a put's bucket, a fire's and a bucket trigger's
// trigger id, and a bucket trigger's bucket (the HTTP API validates
// through these decoders too).
func TestNameRulesAtEveryEntrance(t *testing.T) {
	t.Parallel()
	lim := codecs.DefaultLimits()
	for _, bad := range []string{".", "..", " ", "a\u202eb", "a\u0085b", "e\u0301", "a\u200b"} {
		q := fmt.Sprintf("%q", bad) // a JSON string for these
		_, err := codecs.DecodeCommand([]byte(bad), []byte(`{"v":1,"op":"put","job":{"every":"1m"}}`), lim)
		requireCode(t, err, codecs.CodeInvalidID, "id")
		_, err = codecs.DecodeCommand([]byte("j"), []byte(`{"v":1,"op":"put","job":{"every":"1m","bucket":`+q+`}}`), lim)
		requireCode(t, err, codecs.CodeInvalidField, "bucket")
		_, err = codecs.DecodeCommand([]byte("j"), []byte(`{"v":1,"op":"fire","trigger_id":`+q+`}`), lim)
		requireCode(t, err, codecs.CodeInvalidField, "trigger_id")
		_, err = codecs.DecodeBucketTrigger([]byte(`{"v":1,"bucket":`+q+`}`), 0, 0, lim)
		requireCode(t, err, codecs.CodeInvalidField, "bucket")
		_, err = codecs.DecodeBucketTrigger([]byte(`{"v":1,"bucket":"b","trigger_id":`+q+`}`), 0, 0, lim)
		requireCode(t, err, codecs.CodeInvalidField, "trigger_id")
	}
	// A delete still takes ids stored under the earlier, looser rules.
	for _, legacy := range []string{".", "..", " ", "a\u202eb", "e\u0301"} {
		c, err := codecs.DecodeCommand([]byte(legacy), []byte(`{"v":1,"op":"delete"}`), lim)
		require.NoError(t, err, "%q", legacy)
		require.Equal(t, legacy, c.ID)
		_, err = codecs.DecodeCommand([]byte(legacy), []byte(`{"v":1,"op":"pause"}`), lim)
		requireCode(t, err, codecs.CodeInvalidID, "id")
	}
	_, err := codecs.DecodeCommand([]byte("a\x01"), []byte(`{"v":1,"op":"delete"}`), lim)
	requireCode(t, err, codecs.CodeInvalidID, "id")
}

func TestStrictWireFormat(t *testing.T) {
	t.Parallel()
	lim := codecs.DefaultLimits()
	for _, tc := range []struct{ value, code, field string }{
		{`{"v":1,"op":"put","job":{"Cron":"* * * * *"}}`, codecs.CodeUnknownField, "job.Cron"},
		{`{"v":1,"OP":"delete"}`, codecs.CodeUnknownField, "OP"},
		{`{"V":1,"op":"delete"}`, codecs.CodeUnknownField, "V"},
		{`{"v":1,"op":"put","job":{"every":"1m","Bucket":"b"}}`, codecs.CodeUnknownField, "job.Bucket"},
		{`{"v":1,"op":"delete","op":"put"}`, codecs.CodeMalformed, "op"},
		{`{"v":1,"op":"put","job":{"every":"1m","every":"1h"}}`, codecs.CodeMalformed, "job.every"},
		{`{"v":1,"op":"put","job":{"every":"1m","payload":{"a":1,"b":{"c":1,"c":2}}}}`, codecs.CodeMalformed, "job.payload.b.c"},
		{`{"v":1,"op":"fire","payload":[{"x":1,"x":1}]}`, codecs.CodeMalformed, "payload.x"},
		{`{"v":1,"op":"put","job":{"every":"1m","colour":"red"}}`, codecs.CodeUnknownField, "colour"},
		{`{"v":1,"op":"put","job":{"at":"0001-01-01T00:00:00Z"}}`, codecs.CodeInvalidSchedule, "at"},
		{`{"v":1,"op":"put","job":{"every":"1m","start":"0001-01-01T00:00:00Z"}}`, codecs.CodeInvalidSchedule, "start"},
		{`{"v":1,"op":"put","job":{"every":"1m","end":"0001-01-01T00:00:00Z"}}`, codecs.CodeInvalidSchedule, "end"},
		{`{"v":1,"op":"put","job":{"every":"1m","start":"0001-01-01T01:00:00+01:00"}}`, codecs.CodeInvalidSchedule, "start"},
	} {
		_, err := codecs.DecodeCommand([]byte("j"), []byte(tc.value), lim)
		requireCode(t, err, tc.code, tc.field)
	}
	for _, tc := range []struct{ value, code, field string }{
		{`{"v":1,"Bucket":"b"}`, codecs.CodeUnknownField, "Bucket"},
		{`{"v":1,"bucket":"b","bucket":"c"}`, codecs.CodeMalformed, "bucket"},
		{`{"v":1,"bucket":"b","payload":{"k":1,"k":2}}`, codecs.CodeMalformed, "payload.k"},
	} {
		_, err := codecs.DecodeBucketTrigger([]byte(tc.value), 0, 0, lim)
		requireCode(t, err, tc.code, tc.field)
	}
	// Same keys in different objects are not duplicates.
	_, err := codecs.DecodeCommand([]byte("j"), []byte(`{"v":1,"op":"put","job":{"every":"1m","payload":{"a":{"v":1},"b":{"v":1},"v":[{"v":1},{"v":2}]}}}`), lim)
	require.NoError(t, err)
	_, err = codecs.DecodeCommand([]byte("j"), []byte(`{"v":1,"op":"put","job":{"every":"1m","start":"0001-01-01T00:00:01Z"}}`), lim)
	require.NoError(t, err, "the first second after the zero time is a time")
}

// fireKey is one fire: its kind and job, and its time or trigger id.
type fireKey struct {
	scheduled bool
	job       string
	at        time.Time
	trigger   string
}

// TestFireIDIsInjective generates fires from pieces chosen to collide
// ('@', times, the ids of the example) and checks that every valid
// fire has its own fire_id and that ParseFireID gives the fire back. It also
// checks that the generator finds collisions among the fires the rules
// refuse, so the property is not vacuous.
func TestFireIDIsInjective(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(2026, 18))
	times := []time.Time{
		time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 9, 0, 0, 500_000_000, time.UTC),
		time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(2026, 3, 29, 1, 30, 0, 0, time.FixedZone("x", 3600)),
	}
	pieces := []string{"user", "@", "example.com", "2026-12-01T09:00:00Z", "2026-12-01T09:00:00.5Z", "T", "Z", "-", ":", "m-1-2", "b", "0", "é", "\u200b", " ", "."}
	gen := func() string {
		var b strings.Builder
		for range 1 + rng.IntN(4) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	owner := map[string]fireKey{}
	refused := map[string]fireKey{}
	var refusedCollisions, checked int
	for range 200_000 {
		k := fireKey{scheduled: rng.IntN(2) == 0, job: gen()}
		var id string
		if k.scheduled {
			k.at = times[rng.IntN(len(times))].UTC()
			id = codecs.ScheduledFireID(k.job, k.at)
		} else {
			k.trigger = gen()
			id = codecs.TriggeredFireID(k.job, k.trigger)
		}
		valid := codecs.ValidateID(k.job) == nil && (k.scheduled || codecs.ValidateTriggerID(k.trigger) == nil)
		if !valid {
			if o, ok := owner[id]; ok && o != k {
				refusedCollisions++
			}
			refused[id] = k
			continue
		}
		if o, ok := refused[id]; ok && o != k {
			refusedCollisions++
		}
		checked++
		if o, ok := owner[id]; ok {
			require.Equal(t, o, k, "fire_id %q names two fires", id)
		}
		owner[id] = k
		job, at, trigger, ok := codecs.ParseFireID(id)
		require.True(t, ok)
		require.Equal(t, k, fireKey{scheduled: !at.IsZero(), job: job, at: at, trigger: trigger}, "ParseFireID(%q)", id)
	}
	require.Greater(t, checked, 10_000)
	require.Positive(t, refusedCollisions, "the generator must reach the collisions the rules prevent")
	// The example.
	require.Equal(t, codecs.ScheduledFireID("user@example.com", times[0]), codecs.TriggeredFireID("user", "example.com@2026-12-01T09:00:00Z"))
	require.Error(t, codecs.ValidateTriggerID("example.com@2026-12-01T09:00:00Z"))
	var e *codecs.Error
	require.True(t, errors.As(codecs.ValidateTriggerID("2026-12-01T09:00:00Z"), &e))
}

// FuzzParseFireID: for any valid job id and trigger id, and any time, the
// fire_ids parse back to their parts, and a scheduled and a triggered
// fire_id never coincide.
func FuzzParseFireID(f *testing.F) {
	f.Add("user@example.com", "example.com@2026-12-01T09:00:00Z", int64(1796115600), int64(0))
	f.Add("a", "t-1", int64(0), int64(1))
	f.Fuzz(func(t *testing.T, job, trigger string, sec, nsec int64) {
		if codecs.ValidateID(job) != nil {
			return
		}
		at := time.Unix(sec%253402300799, (nsec%1e9+1e9)%1e9).UTC()
		if at.Year() < 1 || at.IsZero() {
			return
		}
		s := codecs.ScheduledFireID(job, at)
		j, got, tr, ok := codecs.ParseFireID(s)
		require.True(t, ok)
		require.Equal(t, job, j)
		require.True(t, at.Equal(got), "%s vs %s", at, got)
		require.Empty(t, tr)
		if codecs.ValidateTriggerID(trigger) != nil || trigger == "" {
			return
		}
		f := codecs.TriggeredFireID(job, trigger)
		require.NotEqual(t, s, f)
		j, got, tr, ok = codecs.ParseFireID(f)
		require.True(t, ok)
		require.Equal(t, job, j)
		require.True(t, got.IsZero())
		require.Equal(t, trigger, tr)
	})
}

func TestDecodeJobDefIsStrict(t *testing.T) {
	t.Parallel()
	d, err := codecs.DecodeJobDef([]byte(`{"every":"1m","payload":{"a":[1]}}`))
	require.NoError(t, err)
	require.Equal(t, "1m", d.Every)
	for value, code := range map[string]string{
		`{"Every":"1m"}`:                         codecs.CodeUnknownField,
		`{"every":"1m","every":"2m"}`:            codecs.CodeMalformed,
		`{"every":"1m","retries":3}`:             codecs.CodeUnknownField,
		`{"every":"1m"} {}`:                      codecs.CodeMalformed,
		`{"every":"1m","payload":{"a":1,"a":1}}`: codecs.CodeMalformed,
	} {
		_, err := codecs.DecodeJobDef([]byte(value))
		var e *codecs.Error
		require.True(t, errors.As(err, &e), value)
		require.Equal(t, code, e.Code, value)
	}
}
