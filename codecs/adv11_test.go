package codecs_test

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// FuzzRejectOfAnyTimestamp builds and encodes rejects of records stamped
// with any 64-bit millisecond count (what a producer may send; a consumer
// reads negative ones as the zero time). Promise (docs/topics.md "Input
// policy"): a reject always fits and always encodes. On main EncodeReject
// panicked for a year after 9999, and the panic failed the partition at
// every restart.
func FuzzRejectOfAnyTimestamp(f *testing.F) {
	for _, ms := range []int64{0, -1, math.MaxInt64, math.MinInt64, 253402300800000, 253402300799999, 316516204800000} {
		f.Add(ms, []byte("junk"))
	}
	f.Fuzz(func(t *testing.T, ms int64, value []byte) {
		at := time.UnixMilli(ms)
		if ms < 0 {
			at = time.Time{} // as sarama delivers it
		}
		enc := codecs.EncodeReject(codecs.RejectOf(errors.New("bad"), "chronos-jobs", 0, 1, []byte("k"), value, at))
		require.LessOrEqual(t, len(enc), codecs.MaxRejectBytes)
		r, err := codecs.DecodeReject(enc)
		require.NoError(t, err)
		if codecs.CheckRecordTime(at) == nil {
			require.True(t, r.RejectedAt.Equal(at), "rejected_at %v, record time %v", r.RejectedAt, at)
		} else {
			require.True(t, r.RejectedAt.IsZero(), "an unusable record time is left out: %v", r.RejectedAt)
			var raw map[string]any
			require.NoError(t, json.Unmarshal(enc, &raw))
			require.NotContains(t, raw, "rejected_at")
		}
	})
}

// TestCheckRecordTime checks the bounds of a usable record timestamp
// against its oracle: set, and representable in RFC 3339 from 1970 on.
func TestCheckRecordTime(t *testing.T) {
	for _, tc := range []struct {
		at time.Time
		ok bool
	}{
		{time.Time{}, false},
		{time.UnixMilli(-1), false},
		{time.Unix(0, 0), true},
		{time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), true},
		{time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC), true},
		{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), false},
		{time.UnixMilli(math.MaxInt64), false},
	} {
		err := codecs.CheckRecordTime(tc.at)
		if tc.ok {
			require.NoError(t, err, tc.at)
			_, merr := json.Marshal(tc.at)
			require.NoError(t, merr, "a usable time encodes")
			continue
		}
		var ce *codecs.Error
		require.ErrorAs(t, err, &ce, tc.at)
		require.Equal(t, codecs.CodeInvalidTimestamp, ce.Code)
		require.Equal(t, "timestamp", ce.Field)
	}
}

// FuzzPayloadIsUTF8 decodes puts, fires and bucket triggers whose payload
// is any string of bytes. Promise (docs/topics.md: a payload is "any JSON
// value"; JSON text is UTF-8, RFC 8259 8.1): an accepted payload is valid
// UTF-8, so every consumer's parser can read the events carrying it. On
// main invalid bytes inside a JSON string were stored and dispatched.
func FuzzPayloadIsUTF8(f *testing.F) {
	f.Add([]byte("ok"))
	f.Add([]byte("\xff\xfe"))
	f.Add([]byte("\xc0\xaf"))
	f.Add([]byte("\xed\xa0\x80")) // an encoded surrogate
	f.Fuzz(func(t *testing.T, s []byte) {
		for _, v := range [][]byte{
			append(append([]byte(`{"v":1,"op":"put","job":{"every":"1s","payload":"`), s...), `"}}`...),
			append(append([]byte(`{"v":1,"op":"fire","payload":{"`), s...), `":1}}`...),
		} {
			c, err := codecs.DecodeCommand([]byte("k"), v, codecs.DefaultLimits())
			if err != nil {
				continue
			}
			require.True(t, utf8.Valid(c.Job.Payload) && utf8.Valid(c.Payload), "accepted a payload that is not UTF-8: %q", v)
		}
		bt := append(append([]byte(`{"v":1,"bucket":"b","payload":["`), s...), `"]}`...)
		if b, err := codecs.DecodeBucketTrigger(bt, 0, 0, codecs.DefaultLimits()); err == nil {
			require.True(t, utf8.Valid(b.Payload), "accepted a payload that is not UTF-8: %q", bt)
		}
	})
}
