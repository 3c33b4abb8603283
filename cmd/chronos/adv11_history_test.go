package main

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/api"
)

// TestAdv11HistoryOfHostileRecords builds history entries from seeded
// records a producer on chronos-jobs may write (any timestamp, a huge or
// binary chronos-actor header, thousands of headers, junk values) and
// prints them as text and JSON. Promise (issue 11: bad input gets a clear
// answer, and never stops a tool; docs/security.md: trust the actor only as
// far as the topic's ACLs): every record prints, bounded. On main a record
// stamped after year 9999 made `chronos history -o json` fail for the
// whole job, and an actor header of 900 kB was printed whole.
func TestAdv11HistoryOfHostileRecords(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	stamps := []time.Time{time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.UnixMilli(-1), {}, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	var entries []historyEntry
	for i := range 50 {
		r := &kgo.Record{Key: []byte("j"), Offset: int64(i), Timestamp: stamps[rng.IntN(len(stamps))]}
		switch rng.IntN(4) {
		case 0:
			r.Headers = []kgo.RecordHeader{{Key: api.ActorHeader, Value: bytes.Repeat([]byte("\x1b]0;pwn\x07"), 900<<10/8)}}
		case 1:
			for range 5000 {
				r.Headers = append(r.Headers, kgo.RecordHeader{Key: api.ActorHeader, Value: []byte{byte(rng.Uint32()), 0xff}})
			}
		case 2:
			r.Headers = []kgo.RecordHeader{{Key: api.ActorHeader, Value: []byte("ci")}}
		}
		if rng.IntN(2) == 0 {
			r.Value = []byte(`{"v":1,"op":"put","job":{"every":"1s"}}`)
		} else if rng.IntN(2) == 0 {
			r.Value = []byte{0xff, 0x00, '{'}
		}
		entries = append(entries, entryOf(r))
	}
	var text bytes.Buffer
	require.NoError(t, printHistory(&text, entries, "text"))
	lines := strings.Split(strings.TrimSpace(text.String()), "\n")
	require.Len(t, lines, len(entries)+1)
	for _, l := range lines {
		require.Less(t, len(l), 2048, "a bounded line")
		require.NotContains(t, l, "\x1b", "no terminal escape reaches the terminal")
	}
	var js bytes.Buffer
	require.NoError(t, printHistory(&js, entries, "json"))
	dec := json.NewDecoder(&js)
	for range entries {
		var e historyEntry
		require.NoError(t, dec.Decode(&e))
	}
}
