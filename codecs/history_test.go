package codecs_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// randomHistory makes a history with every field exercised, entries at
// their size bounds included.
func randomHistory(rng *rand.Rand) codecs.History {
	str := func(n int) string { return strings.Repeat(string(rune('a'+rng.IntN(26))), rng.IntN(n+1)) }
	tm := func() time.Time {
		switch rng.IntN(4) {
		case 0:
			return time.Time{}
		case 1:
			return time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC)
		}
		return time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).UTC()
	}
	pick := func(l ...string) string { return l[rng.IntN(len(l))] }
	h := codecs.History{CommandOffset: rng.Int64N(1e12) - 1}
	for range rng.IntN(60) {
		h.Fires = append(h.Fires, codecs.FireEntry{Suffix: str(256), ScheduledAt: tm(), Dispatched: rng.IntN(2) == 0, FiredAt: tm(),
			Trigger: pick("", "schedule", "bucket", "manual"), Missed: rng.Int64N(1000), Bucket: str(256), Attempt: rng.IntN(codecs.MaxAttempt + 1),
			Status: pick("", "started", "succeeded", "failed", "skipped"), StartedAt: tm(), FinishedAt: tm(), Error: str(codecs.HistoryErrorBytes)})
	}
	for range rng.IntN(30) {
		h.Changes = append(h.Changes, codecs.Change{Offset: rng.Int64N(1e12), At: tm(), Actor: str(codecs.HistoryActorBytes),
			Op: pick("put", "delete", "pause", "resume", "fire"), Detail: str(codecs.HistoryDetailBytes)})
	}
	return h
}

// TestHistoryRoundTrip encodes random histories and decodes them back; each
// entry stays within its documented byte bound.
func TestHistoryRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(13, 13))
	for range 500 {
		h := randomHistory(rng)
		b := codecs.AppendHistory(nil, &h)
		require.LessOrEqual(t, len(b), 16+len(h.Fires)*codecs.HistoryFireBytes+len(h.Changes)*codecs.HistoryChangeBytes)
		got, err := codecs.DecodeHistory(b)
		require.NoError(t, err)
		if len(h.Fires) == 0 {
			h.Fires = []codecs.FireEntry{}
		}
		if len(h.Changes) == 0 {
			h.Changes = []codecs.Change{}
		}
		require.Equal(t, h, got)
		// Every strict prefix is refused (no silent truncation).
		cut := rng.IntN(len(b))
		_, err = codecs.DecodeHistory(b[:max(cut, 1)])
		require.ErrorIs(t, err, codecs.ErrHistoryRecord)
	}
	empty, err := codecs.DecodeHistory(nil)
	require.NoError(t, err)
	require.Equal(t, int64(-1), empty.CommandOffset)
}

// FuzzDecodeHistory decodes arbitrary table values: it never panics, and
// what it accepts re-encodes to a record that decodes to the same history.
func FuzzDecodeHistory(f *testing.F) {
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	h := codecs.History{CommandOffset: 7, Fires: []codecs.FireEntry{{Suffix: "2026-03-01T09:00:00Z", ScheduledAt: at, Dispatched: true, FiredAt: at.Add(time.Millisecond),
		Trigger: "schedule", Attempt: 2, Status: "failed", StartedAt: at, FinishedAt: at.Add(time.Second), Error: "boom"}},
		Changes: []codecs.Change{{Offset: 7, At: at, Actor: "ci", Op: "put", Detail: "cron * * * * *"}}}
	f.Add(codecs.AppendHistory(nil, &h))
	f.Add([]byte("H\x01\x00\xff\xff\xff\xff\x0f"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := codecs.DecodeHistory(b)
		if err != nil || len(b) == 0 {
			return
		}
		h2, err := codecs.DecodeHistory(codecs.AppendHistory(nil, &h))
		require.NoError(t, err)
		require.Equal(t, h, h2)
	})
}
