package codecs_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

func TestTick(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, in := range []codecs.Tick{{Time: at}, {Time: at, Instance: "pod-1"}} {
		b := codecs.EncodeInternal(in)
		got, err := codecs.DecodeTick(b)
		require.NoError(t, err)
		require.Equal(t, in, got)
	}
	got, err := codecs.DecodeTick([]byte(`{"t":"2026-01-02T04:04:05+01:00","instance":"i","extra":1}`))
	require.NoError(t, err)
	require.True(t, got.Time.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))

	for _, tc := range []struct{ in, field string }{
		{``, ""},
		{`{`, ""},
		{`{}`, "t"},
		{`{"t":"0001-01-01T00:00:00Z"}`, "t"},
		{`{"instance":"i"}`, "t"},
		{`{"t":"now"}`, ""},
		{`{"t":5}`, ""},
		{`{"t":"2026-01-02T03:04:05Z","instance":5}`, "instance"},
		{`[]`, ""},
	} {
		_, err := codecs.DecodeTick([]byte(tc.in))
		requireCode(t, err, codecs.CodeMalformed, tc.field)
	}
}

func TestShardTrigger(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, in := range []codecs.ShardTrigger{
		{Kind: codecs.KindAdvance, T: at},
		{Kind: codecs.KindAdvance, T: at, AfterAt: at.Add(-time.Minute), AfterKey: "job\n\"x\""},
		{Kind: codecs.KindBucket, T: at, Bucket: "nightly", TriggerID: "run-1", Payload: json.RawMessage(`{"a":1}`), AfterKey: "j"},
		{Kind: codecs.KindComplete, T: at, Version: 1<<64 - 1},
		{Kind: codecs.KindAdvance},
	} {
		b := codecs.EncodeInternal(in)
		got, err := codecs.DecodeShardTrigger(b)
		require.NoError(t, err, "%s", b)
		require.Equal(t, in, got)
		require.Contains(t, got.String(), in.Kind)
	}
	// after_at is omitted when zero.
	require.NotContains(t, string(codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: at})), "after_at")

	for _, tc := range []struct{ in, code, field string }{
		{``, codecs.CodeMalformed, ""},
		{`{"kind":"advance"`, codecs.CodeMalformed, ""},
		{`{"kind":1}`, codecs.CodeMalformed, "kind"},
		{`{"kind":"advance","t":"x"}`, codecs.CodeMalformed, ""},
		{`{"kind":"advance","version":-1}`, codecs.CodeMalformed, "version"},
		{`{"kind":"advance","payload":{]}`, codecs.CodeMalformed, ""},
		{`{}`, codecs.CodeUnknownOp, "kind"},
		{`{"kind":"ADVANCE"}`, codecs.CodeUnknownOp, "kind"},
		{`{"kind":"retreat","t":"2026-01-02T03:04:05Z"}`, codecs.CodeUnknownOp, "kind"},
	} {
		_, err := codecs.DecodeShardTrigger([]byte(tc.in))
		requireCode(t, err, tc.code, tc.field)
	}
}

func TestEncodeInternalPanicsOnUnmarshalable(t *testing.T) {
	t.Parallel()
	require.Panics(t, func() { codecs.EncodeInternal(make(chan int)) })
}
