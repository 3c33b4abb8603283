package codecs_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

func TestDecodeBucketTrigger(t *testing.T) {
	t.Parallel()
	lim := codecs.Limits{MaxPayload: 32}
	b, err := codecs.DecodeBucketTrigger([]byte(`{"v":1,"bucket":"reports","payload":{ "a" : 1 }}`), 3, 42, lim)
	require.NoError(t, err)
	require.Equal(t, "b-3-42", b.TriggerID, "derived from the record's position")
	require.Equal(t, `{"a":1}`, string(b.Payload))
	b, err = codecs.DecodeBucketTrigger([]byte(`{"v":1,"bucket":"reports","trigger_id":"nightly"}`), 0, 0, lim)
	require.NoError(t, err)
	require.Equal(t, "nightly", b.TriggerID)

	for value, code := range map[string]string{
		`nope`:                            codecs.CodeMalformed,
		`{"v":2,"bucket":"b"}`:            codecs.CodeUnknownVersion,
		`{"v":1}`:                         codecs.CodeInvalidField,
		`{"v":1,"bucket":"a\u0001"}`:      codecs.CodeInvalidField,
		`{"v":1,"bucket":"b","colour":1}`: codecs.CodeUnknownField,
		`{"v":1,"bucket":"b","trigger_id":"` + strings.Repeat("t", 300) + `"}`: codecs.CodeInvalidField,
		`{"v":1,"bucket":"b","payload":"` + strings.Repeat("p", 40) + `"}`:     codecs.CodePayloadTooLarge,
	} {
		_, err := codecs.DecodeBucketTrigger([]byte(value), 0, 0, lim)
		var e *codecs.Error
		require.True(t, errors.As(err, &e), "%s: %v", value, err)
		require.Equal(t, code, e.Code, value)
	}
}

func FuzzDecodeBucketTrigger(f *testing.F) {
	for _, s := range []string{
		`{"v":1,"bucket":"reports"}`,
		`{"v":1,"bucket":"reports","trigger_id":"t-1","payload":{"a":[1,2,{"b":null}]}}`,
		`{"v":1,"bucket":"ü","payload":"x"}`,
		`{"v":2,"bucket":"b"}`,
		`{"v":1,"bucket":""}`,
		`[]`,
		`{"v":1,"op":"pause","bucket":"b","note":"why"}`,
		`{"v":1,"op":"resume","prefix":"acme."}`,
		`{"v":1,"op":"delete","prefix":"a b ","trigger_id":"t1"}`,
		`{"v":1,"op":"delete","bucket":"b","prefix":"p"}`,
		`{"v":1,"op":"fire","prefix":"p"}`,
		`{"v":1,"op":"pause","prefix":""}`,
	} {
		f.Add([]byte(s), int32(0), int64(7))
	}
	f.Fuzz(func(t *testing.T, b []byte, partition int32, offset int64) {
		bt, err := codecs.DecodeBucketTrigger(b, partition, offset, codecs.DefaultLimits())
		if err != nil {
			var e *codecs.Error
			require.True(t, errors.As(err, &e), "%T %v", err, err)
			return
		}
		require.NotEmpty(t, bt.TriggerID)
		require.True(t, bt.Op == "" || codecs.IsBulkOp(bt.Op), bt.Op)
		require.True(t, bt.Bucket != "" || bt.Prefix != "", "a target")
		require.True(t, bt.Prefix == "" || bt.Op != "", "a fire names a bucket")
		require.NoError(t, codecs.ValidateBucket(bt.Bucket), "a decoded bucket follows the name rules")
		if bt.TriggerID == fmt.Sprintf("b-%d-%d", partition, offset) {
			// A derived id is reserved: re-encoded without it, the same
			// position derives it again.
			bt.TriggerID = ""
		} else {
			require.NoError(t, codecs.ValidateTriggerID(bt.TriggerID))
		}
		enc, err := codecs.EncodeBucketTrigger(bt)
		require.NoError(t, err)
		again, err := codecs.DecodeBucketTrigger(enc, partition, offset, codecs.DefaultLimits())
		require.NoError(t, err, "%s", enc)
		require.Equal(t, bt.Bucket, again.Bucket)
		require.Equal(t, [3]string{bt.Op, bt.Prefix, bt.Note}, [3]string{again.Op, again.Prefix, again.Note})
		if bt.TriggerID == "" {
			bt.TriggerID = fmt.Sprintf("b-%d-%d", partition, offset)
		}
		require.Equal(t, bt.TriggerID, again.TriggerID)
		requireJSONEqual(t, bt.Payload, again.Payload)
	})
}
