package codecs_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

func TestDecodeBulkOperation(t *testing.T) {
	t.Parallel()
	lim := codecs.Limits{MaxPayload: 32}
	b, err := codecs.DecodeBucketTrigger([]byte(`{"v":1,"op":"pause","bucket":"reports","note":"INC-1"}`), 2, 7, lim)
	require.NoError(t, err)
	require.Equal(t, codecs.BucketTrigger{V: 1, Op: "pause", Bucket: "reports", Note: "INC-1", TriggerID: "b-2-7"}, b)
	b, err = codecs.DecodeBucketTrigger([]byte(`{"v":1,"op":"delete","prefix":"acme. ","trigger_id":"clean"}`), 0, 0, lim)
	require.NoError(t, err)
	require.Equal(t, "acme. ", b.Prefix, "a prefix may end with a space")
	b, err = codecs.DecodeBucketTrigger([]byte(`{"v":1,"op":"resume","bucket":"r","prefix":"acme."}`), 0, 0, lim)
	require.NoError(t, err, "both: the bucket's jobs with the prefix")
	b, err = codecs.DecodeBucketTrigger([]byte(`{"v":1,"bucket":"r"}`), 0, 0, lim)
	require.NoError(t, err)
	require.Equal(t, "", b.Op, "no op: a fire")
	b, err = codecs.DecodeBucketTrigger([]byte(`{"v":1,"op":"fire","bucket":"r"}`), 0, 0, lim)
	require.NoError(t, err)
	require.Equal(t, "", b.Op, "op fire: a fire, decoded as without op")
	enc, err := codecs.EncodeBucketTrigger(b)
	require.NoError(t, err)
	require.NotContains(t, string(enc), `"op"`, "a fire is written as before")

	for value, code := range map[string]string{
		`{"v":1,"op":"stop","bucket":"b"}`:                                             codecs.CodeUnknownOp,
		`{"v":1,"op":"pause"}`:                                                         codecs.CodeInvalidField,
		`{"v":1,"op":"resume","bucket":"b","note":"n"}`:                                codecs.CodeUnknownField,
		`{"v":1,"bucket":"b","note":"n"}`:                                              codecs.CodeUnknownField,
		`{"v":1,"prefix":"p"}`:                                                         codecs.CodeUnknownField,
		`{"v":1,"op":"delete","prefix":"p","payload":1}`:                               codecs.CodeUnknownField,
		`{"v":1,"op":"delete","prefix":"a\u0000"}`:                                     codecs.CodeInvalidField,
		`{"v":1,"op":"delete","prefix":"` + strings.Repeat("p", 257) + `"}`:            codecs.CodeInvalidField,
		`{"v":1,"op":"pause","prefix":"p","note":"` + strings.Repeat("n", 1025) + `"}`: codecs.CodeInvalidField,
		`{"v":1,"op":"pause","prefix":"p","Note":"x"}`:                                 codecs.CodeUnknownField,
		`{"v":1,"op":"pause","prefix":"p","prefix":"q"}`:                               codecs.CodeMalformed,
		`{"v":1,"op":"delete","prefix":"__chronos/"}`:                                  codecs.CodeReservedID,
		`{"v":1,"op":"pause","prefix":"__chronos/shard/0"}`:                            codecs.CodeReservedID,
		`{"v":1,"op":"resume","bucket":"b","prefix":"__chronos/x"}`:                    codecs.CodeReservedID,
	} {
		_, err := codecs.DecodeBucketTrigger([]byte(value), 0, 0, lim)
		var e *codecs.Error
		require.True(t, errors.As(err, &e), "%s: %v", value, err)
		require.Equal(t, code, e.Code, value)
	}
	for _, p := range []string{"_", "__chronos", "__chronos.", "__chronosX/"} {
		_, err := codecs.DecodeBucketTrigger([]byte(`{"v":1,"op":"delete","prefix":"`+p+`"}`), 0, 0, lim)
		require.NoError(t, err, "%q is not the reserved prefix", p)
	}
	_, err = codecs.DecodeBulkBody([]byte(`{"note":"x","trigger_id":"t"}`))
	require.NoError(t, err)
	_, err = codecs.DecodeBulkBody([]byte(`{"note":"x","payload":1}`))
	require.Error(t, err)
}

// TestBulkStateFinish runs a queue through Finish: operations finish in
// the order they were queued, each with its counts, and only the last
// BulkResultsKept results are remembered. The shard record keeps the
// state across an encoding, with and without backfills.
func TestBulkStateFinish(t *testing.T) {
	t.Parallel()
	var s codecs.BulkState
	ids := []string{}
	for i := 0; i < codecs.BulkResultsKept+5; i++ {
		id := "op-" + strings.Repeat("x", i)
		ids = append(ids, id)
		s.Queue = append(s.Queue, codecs.ShardTrigger{Kind: codecs.KindBulk, Op: codecs.BulkPause, Prefix: "p", TriggerID: id})
	}
	for i, id := range ids {
		require.True(t, s.Queued(id))
		require.Equal(t, id, s.Queue[0].TriggerID)
		s = s.Finish(int64(i), int64(i/2), int64(i/3))
		require.False(t, s.Queued(id))
		r, ok := s.Finished(id)
		require.True(t, ok)
		require.Equal(t, [3]int64{int64(i), int64(i / 2), int64(i / 3)}, [3]int64{r.Matched, r.Changed, r.Skipped})
	}
	require.Empty(t, s.Queue)
	require.Len(t, s.Done, codecs.BulkResultsKept)
	_, ok := s.Finished(ids[4])
	require.False(t, ok, "the oldest results are forgotten")
	require.Equal(t, s, s.Finish(1, 1, 1), "nothing in progress: no change")

	w := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	for _, refs := range [][]codecs.BackfillRef{nil, {{Job: "j", ID: "b-0-1"}}} {
		sr := codecs.ShardRecord{Watermark: w, Backfills: refs, Bulk: codecs.BulkState{Queue: []codecs.ShardTrigger{{Kind: codecs.KindBulk, T: w, Op: "delete", Prefix: "a", TriggerID: "t"}}, Done: s.Done[:2]}}
		b := codecs.EncodeShardRecord(sr)
		got, err := codecs.DecodeShardRecord(b)
		require.NoError(t, err)
		require.Equal(t, sr, got)
		for n := 2; n < len(b); n++ {
			_, err := codecs.DecodeShardRecord(b[:n])
			require.Error(t, err, "cut at %d", n)
		}
	}
}
