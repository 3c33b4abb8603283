package codecs_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// checkReject asserts the reject policy's invariants for one input: the
// encoding is bounded, decodes, and carries the sizes, a prefix of key and
// value and the value's SHA-256.
func checkReject(t *testing.T, err error, topic string, key, value []byte) codecs.Reject {
	t.Helper()
	at := time.Date(2026, 5, 4, 8, 20, 0, 0, time.UTC)
	enc := codecs.EncodeReject(codecs.RejectOf(err, topic, 3, 99, key, value, at))
	require.LessOrEqual(t, len(enc), codecs.MaxRejectBytes, "reject of a %d-byte key and %d-byte value", len(key), len(value))
	r, derr := codecs.DecodeReject(enc)
	require.NoError(t, derr)
	require.Equal(t, codecs.RejectVersion, r.V)
	require.Equal(t, len(key), r.KeySize)
	require.Equal(t, len(value), r.ValueSize)
	require.Equal(t, key == nil, r.Key == nil, "null key stays null")
	require.Equal(t, value == nil, r.Value == nil, "null value stays null")
	require.True(t, bytes.HasPrefix(key, r.Key))
	require.True(t, bytes.HasPrefix(value, r.Value))
	require.Equal(t, min(len(key), codecs.RejectSampleBytes), len(r.Key))
	require.Equal(t, min(len(value), codecs.RejectSampleBytes), len(r.Value))
	require.Equal(t, len(key) > codecs.RejectSampleBytes || len(value) > codecs.RejectSampleBytes, r.Truncated)
	if value != nil {
		sum := sha256.Sum256(value)
		require.Equal(t, hex.EncodeToString(sum[:]), r.ValueSHA256)
	} else {
		require.Empty(t, r.ValueSHA256)
	}
	require.NotEmpty(t, r.Code)
	require.True(t, at.Equal(r.RejectedAt))
	return r
}

func TestRejectIsBounded(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	junk := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	mb := 1 << 20
	// The worst text: invalid UTF-8 and control bytes, each escaped to six bytes by JSON.
	worst := strings.Repeat("\xff\x01", mb/2)
	for _, in := range []struct {
		name       string
		err        error
		key, value []byte
	}{
		{"990 kB junk value", errors.New("x"), []byte("k"), junk(990 << 10)},
		{"1 MiB key and value", errors.New("x"), junk(mb), junk(mb)},
		{"null key and value", errors.New("x"), nil, nil},
		{"empty key and value", errors.New("x"), []byte{}, []byte{}},
		{"huge reason and field", &codecs.Error{Code: codecs.CodeUnknownField, Field: worst, Reason: worst}, junk(mb), junk(mb)},
		{"huge plain error", errors.New(worst), junk(10), junk(10)},
		{"exactly the sample", errors.New("x"), junk(codecs.RejectSampleBytes), junk(codecs.RejectSampleBytes)},
		{"one over the sample", errors.New("x"), junk(codecs.RejectSampleBytes + 1), junk(codecs.RejectSampleBytes + 1)},
	} {
		t.Run(in.name, func(t *testing.T) {
			r := checkReject(t, in.err, strings.Repeat("t", 249), in.key, in.value)
			require.LessOrEqual(t, len(r.Reason), codecs.MaxRejectTextBytes)
		})
	}
}

func TestRejectKeepsCodeFieldReason(t *testing.T) {
	t.Parallel()
	r := checkReject(t, &codecs.Error{Code: codecs.CodeUnknownJob, Field: "id", Reason: `no job "x"`}, "chronos-jobs", []byte("x"), []byte(`{"v":1,"op":"pause"}`))
	require.Equal(t, codecs.CodeUnknownJob, r.Code)
	require.Equal(t, "id", r.Field)
	require.Equal(t, `no job "x"`, r.Reason)
	require.Equal(t, `{"v":1,"op":"pause"}`, string(r.Value))
	require.False(t, r.Truncated)
	r = checkReject(t, errors.New("boom"), "chronos-jobs", nil, nil)
	require.Equal(t, codecs.CodeMalformed, r.Code)
	require.Equal(t, "boom", r.Reason)
	// A cut reason stays valid UTF-8 and says it was cut.
	r = checkReject(t, errors.New(strings.Repeat("ä", 2000)), "chronos-jobs", nil, nil)
	require.True(t, strings.HasSuffix(r.Reason, "…"))
	require.True(t, strings.HasPrefix(strings.Repeat("ä", 2000), strings.TrimSuffix(r.Reason, "…")))
}

// FuzzRejectOf: any key, value and error text makes a bounded reject that
// carries the input's sizes, prefixes and hash.
func FuzzRejectOf(f *testing.F) {
	f.Add([]byte("k"), []byte(`{"v":1}`), "reason", "field", false)
	f.Add([]byte(nil), []byte(nil), "", "", true)
	f.Add(bytes.Repeat([]byte{0xff}, 3000), bytes.Repeat([]byte{0}, 5000), strings.Repeat("\x01", 3000), "\u2028", false)
	f.Fuzz(func(t *testing.T, key, value []byte, reason, field string, plain bool) {
		var err error = &codecs.Error{Code: codecs.CodeMalformed, Field: field, Reason: reason}
		if plain {
			err = errors.New(reason)
		}
		checkReject(t, err, "chronos-jobs", key, value)
	})
}
