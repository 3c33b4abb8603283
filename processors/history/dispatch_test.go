package history

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// randomDispatch makes a dispatch event with every field exercised:
// strings that need escapes (so the fast path must give way), empty and
// absent optional fields, payloads of every JSON kind and size.
func randomDispatch(rng *rand.Rand) codecs.Dispatch {
	str := func() string {
		alphabet := []string{"a", "Z", "0", "-", ".", "é", "日", "\"", "\\", "<", "\n", "\u2028", "@", "/"}
		var b strings.Builder
		for range rng.IntN(12) {
			if rng.IntN(10) == 0 {
				b.WriteString(alphabet[6+rng.IntN(len(alphabet)-6)])
			} else {
				b.WriteString(alphabet[rng.IntN(6)])
			}
		}
		return b.String()
	}
	at := time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)*int64(rng.IntN(2))).UTC()
	d := codecs.Dispatch{V: codecs.DispatchVersion, JobID: str(), Trigger: []string{codecs.TriggerSchedule, codecs.TriggerBucket, codecs.TriggerManual}[rng.IntN(3)],
		ScheduledAt: at, FiredAt: at.Add(time.Duration(rng.Int64N(1e10))), Missed: rng.Int64N(1e6) * int64(rng.IntN(2))}
	if rng.IntN(3) == 0 {
		d.DueAt = at.Add(time.Duration(rng.Int64N(3.6e12))) // a jittered fire
	}
	if rng.IntN(2) == 0 {
		d.Bucket = str()
	}
	if rng.IntN(2) == 0 {
		d.TriggerID = str()
	}
	d.FireID = d.JobID + "@" + str()
	switch rng.IntN(5) {
	case 1:
		d.Payload = json.RawMessage(`"` + strings.Repeat("x", rng.IntN(70_000)) + `"`)
	case 2:
		d.Payload = json.RawMessage(`{"a":[1,2,{"b":"}"}],"c":null}`)
	case 3:
		d.Payload = json.RawMessage(`-12.5e3`)
	case 4:
		d.Payload = json.RawMessage(`[true,false,"\"}"]`)
	}
	return d
}

// TestDispatchHeadMatchesDecode: on 5,000 generated dispatch events as the
// scheduler writes them, decodeDispatch (the fast path, or the full
// decoder when a string needs unescaping) gives what codecs.DecodeDispatch
// gives, without the payload; and the fast path is taken whenever no
// string needs an escape.
func TestDispatchHeadMatchesDecode(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(18, 13))
	fast := 0
	for i := range 5000 {
		d := randomDispatch(rng)
		raw := codecs.AppendDispatch(nil, &d)
		want, err := codecs.DecodeDispatch(raw)
		require.NoError(t, err)
		want.Payload = nil
		head, ok := codecs.DispatchHead(raw)
		plain := !strings.ContainsAny(d.FireID+d.JobID+d.Bucket+d.TriggerID, "\"\\<\n\u2028")
		require.Equal(t, plain, ok, "case %d: %s", i, raw)
		if ok {
			fast++
			require.Equal(t, want, head, "case %d", i)
		}
		got, suffix, err := decodeDispatch(d.JobID, raw)
		if err != nil {
			// A job id that ParseFireID splits elsewhere (it has an '@'),
			// one of no job's length (empty or over MaxIDLen: adversary
			// round 49), or a bucket that is no valid name (Chronos
			// writes none).
			badBucket := d.Bucket != "" && codecs.ValidateBucket(d.Bucket) != nil
			badID := d.JobID == "" || len(d.JobID) > codecs.MaxIDLen
			require.True(t, badBucket || badID || strings.Contains(d.JobID+d.FireID[len(d.JobID)+1:], "@"), "case %d: %v: %s", i, err, raw)
			continue
		}
		require.Equal(t, want, got, "case %d: %s", i, raw)
		require.Equal(t, want.FireID[len(want.JobID)+1:], suffix)
	}
	require.Greater(t, fast, 1000)
}

// FuzzDispatchHead: the fast path never panics, and whenever it reads a
// record whose payload part is one valid JSON value, the full decoder
// reads the same fields.
func FuzzDispatchHead(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		d := randomDispatch(rng)
		if len(d.Payload) > 100 {
			d.Payload = d.Payload[:0]
		}
		f.Add(codecs.AppendDispatch(nil, &d))
	}
	f.Add([]byte(`{"v":1,"fire_id":"a@b","job_id":"a","trigger":"manual","scheduled_at":"2026-01-01T00:00:00Z","fired_at":"2026-01-01T00:00:00Z","missed":0,"payload":1,"job_id":"b"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		head, ok := codecs.DispatchHead(raw)
		if !ok {
			return
		}
		const key = `,"payload":`
		if i := strings.Index(string(raw), key); i >= 0 {
			if rest := raw[i+len(key) : len(raw)-1]; !json.Valid(rest) {
				return // the payload is not examined; the full decoder would refuse it
			}
		}
		full, err := codecs.DecodeDispatch(raw)
		require.NoError(t, err, "%s", raw)
		full.Payload = nil
		require.Equal(t, full, head, "%s", raw)
	})
}
