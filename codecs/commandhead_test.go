package codecs_test

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// randomCommand makes a command with every field of codecs.CommandMsg
// exercised, valid or not: every op (and unknown ones), strings that need
// escapes, schedules that parse and that do not, fields on ops that do not
// take them, payloads of every JSON kind.
func randomCommand(rng *rand.Rand) codecs.CommandMsg {
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	str := func() string {
		alphabet := []string{"a", "Z", "0", "-", ".", "é", "\"", "\\", "<", "\n", "\u2028", "@", "/", "{"}
		var b strings.Builder
		for range rng.IntN(8) {
			if rng.IntN(8) == 0 {
				b.WriteString(alphabet[6+rng.IntN(len(alphabet)-6)])
			} else {
				b.WriteString(alphabet[rng.IntN(6)])
			}
		}
		return b.String()
	}
	maybe := func(s string) string {
		if rng.IntN(3) == 0 {
			return s
		}
		return ""
	}
	payload := func() json.RawMessage {
		if rng.IntN(4) == 0 {
			return json.RawMessage(randomPayload(rng, 0))
		}
		return json.RawMessage(pick("", "", `"x"`, `12`, `-1.5e3`, `[1,"}",true]`, `{"a":1}`, `{"a":1,"a":2}`, `[{"b":null}]`, `null`, `"{"`, `"`+strings.Repeat("p", 70)+`"`,
			`{"a":{"b":1,"b":2}}`, `{"a":{"b":1},"b":{"a":1}}`, `{"A":1,"a":2}`, `{"é":1}`, `{"a": [1, {"c" : "d"}] }`, `[{"a":1},{"a":1}]`, `{}`, `{"":1,"":2}`,
			`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k1":18}`,
			`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k18":18}`))
	}
	m := codecs.CommandMsg{V: []int{1, 1, 1, 1, 2, 0}[rng.IntN(6)], Op: pick(codecs.OpPut, codecs.OpPut, codecs.OpPut, codecs.OpDelete, codecs.OpPause,
		codecs.OpResume, codecs.OpFire, codecs.OpBackfill, codecs.OpCancelBackfill, "bogus")}
	if rng.IntN(4) == 0 {
		m.ID = pick("job-1", "other", str())
	}
	if m.Op == codecs.OpPut || rng.IntN(10) == 0 {
		j := &codecs.JobDef{TZ: maybe(pick("Europe/Berlin", "UTC", "Mars/Base")), Start: maybe(pick("2026-12-01T04:00:07Z", "yesterday")),
			End: maybe("2027-01-01T00:00:00Z"), Payload: payload(), Bucket: maybe(pick("reports", str())), MisfirePolicy: maybe(pick("skip", "fire_once", "sometimes")),
			MisfireGrace: maybe(pick("5m", "-1s")), Jitter: maybe(pick("10s", "2h")), MaxFires: []int{0, 0, 3, -1}[rng.IntN(4)]}
		switch rng.IntN(4) {
		case 0:
			j.Cron = pick("*/5 * * * *", "30 2 * * *", "not cron")
		case 1:
			j.Every = pick("1m", "10s", "0s")
		case 2:
			j.At = pick("2027-03-28T02:30:00Z", "soon")
		}
		if rng.IntN(4) == 0 {
			j.DST = &codecs.DSTDef{Gap: maybe(pick("skip", "shift", "x")), Overlap: maybe(pick("first", "both", "y"))}
		}
		m.Job = j
	}
	if m.Op == codecs.OpFire || rng.IntN(10) == 0 {
		m.TriggerID = maybe(pick("run-1", str()))
		m.Payload = payload()
	}
	if m.Op != codecs.OpFire && rng.IntN(5) == 0 {
		v := uint64(rng.IntN(3))
		m.IfVersion = &v
	}
	if m.Op == codecs.OpPause || rng.IntN(10) == 0 {
		m.Note = maybe(str())
	}
	if m.Op == codecs.OpBackfill || rng.IntN(10) == 0 {
		m.From, m.To = pick("2026-01-01T00:00:00Z", "x"), pick("2026-01-02T00:00:00Z", "")
	}
	return m
}

// mutate changes an encoded command the way other writers might, so that
// the fast reader must give way or agree: whitespace, a repeated or
// unknown field, a field name in another case, an escape, a number form,
// a cut.
func mutate(rng *rand.Rand, raw []byte) []byte {
	s := string(raw)
	switch rng.IntN(9) {
	case 0:
		i := rng.IntN(len(s) + 1)
		s = s[:i] + " " + s[i:]
	case 1:
		s = strings.TrimSuffix(s, "}") + `,"op":"delete"}`
	case 2:
		s = strings.Replace(s, `"op"`, `"Op"`, 1)
	case 3:
		s = strings.TrimSuffix(s, "}") + `,"extra":1}`
	case 4:
		s = strings.Replace(s, `"v":1`, `"v":1.0`, 1)
	case 5:
		s = strings.Replace(s, `a`, `\u0061`, 1)
	case 6:
		s = s[:rng.IntN(len(s))]
	case 7:
		s = strings.Replace(s, `"job":{`, `"job":{"cron":"* * * * *",`, 1)
	case 8:
		s += "\n"
	}
	return []byte(s)
}

// TestDecodeCommandMatchesStrict: on 20,000 generated commands, as
// codecs.EncodeCommand writes them and mutated, DecodeCommand gives what
// the strict decoder alone gives (the same command, or the same error),
// and its fast reader (commandHead) reads only what the strict decoder
// accepts to the same message. The fast path is taken for every encoded
// command whose strings need no escape and whose payloads are not null and
// hold no object key twice or beyond ASCII.
func TestDecodeCommandMatchesStrict(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(13, 3))
	lim := codecs.DefaultLimits()
	fast, valid := 0, 0
	for i := range 20_000 {
		m := randomCommand(rng)
		raw, err := codecs.EncodeCommand(m)
		require.NoError(t, err)
		if rng.IntN(3) == 0 {
			raw = mutate(rng, raw)
		}
		key := []byte("job-1")
		want, wantErr := codecs.DecodeCommandStrict(key, raw, lim)
		got, gotErr := codecs.DecodeCommand(key, raw, lim)
		require.Equal(t, want, got, "case %d: %s", i, raw)
		require.Equal(t, wantErr, gotErr, "case %d: %s", i, raw)
		if wantErr == nil {
			valid++
		}
		head, ok := codecs.CommandHead(raw)
		if ok {
			fast++
			m.V = codecs.CommandVersion
			var strict codecs.CommandMsg
			require.NoError(t, json.Unmarshal(raw, &strict), "case %d: %s", i, raw)
			require.Equal(t, strict, head, "case %d: %s", i, raw)
		}
		enc, _ := codecs.EncodeCommand(m)
		if string(enc) == string(raw) {
			// Escapes outside the payloads, which keep theirs as sent.
			bare := m
			bare.Payload = nil
			if m.Job != nil {
				j := *m.Job
				j.Payload = nil
				bare.Job = &j
			}
			encBare, _ := codecs.EncodeCommand(bare)
			plain := !strings.Contains(string(encBare), `\`) && payloadPlain(string(m.Payload)) && payloadPlain(jobPayload(m))
			require.Equal(t, plain, ok, "case %d: %s", i, raw)
		}
	}
	require.Greater(t, fast, 5000)
	require.Greater(t, valid, 2000)
}

// payloadPlain: a payload the fast reader takes (none, or not null, every
// object key in it ASCII without an escape and none twice in one object).
func payloadPlain(p string) bool {
	if p == "" {
		return true
	}
	if p == "null" {
		return false
	}
	dec := json.NewDecoder(strings.NewReader(p))
	// inObject[i]: the i-th open container is an object; wantKey: the next
	// string in it is a key.
	var inObject []bool
	var keys []map[string]bool // of each open object
	wantKey := false
	for {
		from := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return true
		}
		written := p[from:dec.InputOffset()]
		switch tok := tok.(type) {
		case json.Delim:
			switch tok {
			case '{', '[':
				inObject = append(inObject, tok == '{')
				if tok == '{' {
					keys = append(keys, map[string]bool{})
				}
				wantKey = tok == '{'
				continue
			default:
				if inObject[len(inObject)-1] {
					keys = keys[:len(keys)-1]
				}
				inObject = inObject[:len(inObject)-1]
			}
		case string:
			if wantKey {
				if strings.Contains(written, `\`) {
					return false
				}
				for _, c := range []byte(tok) {
					if c >= 0x80 {
						return false
					}
				}
				if keys[len(keys)-1][tok] {
					return false
				}
				keys[len(keys)-1][tok] = true
				wantKey = false
				continue
			}
		}
		// A value ended: in an object, a key comes next.
		wantKey = len(inObject) > 0 && inObject[len(inObject)-1]
	}
}

func jobPayload(m codecs.CommandMsg) string {
	if m.Job == nil {
		return ""
	}
	return string(m.Job.Payload)
}

// FuzzCommandHead: the fast reader (commandHead) never panics, and whatever
// it reads the strict decoder reads to the same command, or refuses with
// the same error.
func FuzzCommandHead(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 30 {
		raw, _ := codecs.EncodeCommand(randomCommand(rng))
		f.Add(raw)
	}
	f.Add([]byte(`{"v":1,"op":"put","job":{"every":"1m","payload":[1,{"a":1,"a":2}]}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if _, ok := codecs.CommandHead(raw); !ok {
			return
		}
		lim := codecs.DefaultLimits()
		want, wantErr := codecs.DecodeCommandStrict([]byte("k"), raw, lim)
		got, gotErr := codecs.DecodeCommand([]byte("k"), raw, lim)
		require.Equal(t, want, got, "%s", raw)
		require.Equal(t, wantErr, gotErr, "%s", raw)
	})
}
