package codecs_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/chronos-scheduler/chronos/codecs"
)

// adv68Compare decodes raw with DecodeCommand and with the strict decoder
// alone and reports any difference (command, or error text/nil-ness).
func adv68Compare(t *testing.T, key, raw string) {
	t.Helper()
	lim := codecs.DefaultLimits()
	got, gerr := codecs.DecodeCommand([]byte(key), []byte(raw), lim)
	want, werr := codecs.DecodeCommandStrict([]byte(key), []byte(raw), lim)
	short := raw
	if len(short) > 160 {
		short = short[:80] + "..." + short[len(short)-80:]
	}
	if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
		t.Fatalf("errors differ on %q (%d bytes):\n DecodeCommand: %v\n strict:        %v", short, len(raw), gerr, werr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("commands differ on %q:\n DecodeCommand: %+v\n strict:        %+v", short, got, want)
	}
	if m, ok := codecs.CommandHead([]byte(raw)); ok {
		// What the fast reader takes, the strict decoder must take.
		if werr != nil {
			if _, err := m.Command([]byte(key), lim); err == nil {
				t.Fatalf("fast reader accepts %q, strict refuses: %v", short, werr)
			}
		}
	}
}

// Finding 1: encoding/json refuses nesting deeper than 10000 for the whole
// command document, but the fast reader checks the payload on its own with
// json.Valid, where it sits 1 (top-level payload) or 2 (job.payload) levels
// shallower. A payload nested exactly so deep passes the fast reader and
// is accepted, while the strict decoder refuses the record with "exceeded
// max depth". With the change, the payload may be objects as well as
// arrays ({"a":{"a":...}} fits MaxPayload at depth 10000).
func TestAdversary68DeepPayloadObjectsFire(t *testing.T) {
	p := strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000)
	adv68Compare(t, "job-1", `{"v":1,"op":"fire","payload":`+p+`}`)
}

func TestAdversary68DeepPayloadObjectsJob(t *testing.T) {
	p := strings.Repeat(`{"a":`, 9999) + "1" + strings.Repeat("}", 9999)
	adv68Compare(t, "job-1", `{"v":1,"op":"put","job":{"every":"1m","payload":`+p+`}}`)
}

// The same with arrays only (already accepted by the fast reader before
// the change: the bug predates it).
func TestAdversary68DeepPayloadArraysFire(t *testing.T) {
	p := strings.Repeat(`[`, 10000) + strings.Repeat("]", 10000)
	adv68Compare(t, "job-1", `{"v":1,"op":"fire","payload":`+p+`}`)
}

// One level shallower both accept: the edge is exactly the depth limit.
func TestAdversary68DeepPayloadJustUnderLimit(t *testing.T) {
	p := strings.Repeat(`{"a":`, 9999) + "1" + strings.Repeat("}", 9999)
	adv68Compare(t, "job-1", `{"v":1,"op":"fire","payload":`+p+`}`)
	p = strings.Repeat(`{"a":`, 9998) + "1" + strings.Repeat("}", 9998)
	adv68Compare(t, "job-1", `{"v":1,"op":"put","job":{"every":"1m","payload":`+p+`}}`)
}

// Hand-picked edge cases that should all agree.
func TestAdversary68EdgeCases(t *testing.T) {
	keys17 := func(last string) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range 17 {
			fmt.Fprintf(&b, `"k%d":%d,`, i, i)
		}
		b.WriteString(`"` + last + `":0}`)
		return b.String()
	}
	payloads := []string{
		`{}`, `{ }`, `{"a":{}}`, `[{}]`, `[{},{}]`, `{"a":1}`, `{"a":1,"a":2}`, `{"a" :1}`, `{"a": 1}`, `{ "a":1 }`,
		"{\n\"a\":1\t}", `{"a":1 ,"b":2}`, `{"a":1, "a":2}`, `{"a":{"b":1,"b":2}}`, `[{"a":1,"a":1}]`, `[1,{"a":1,"a":1}]`,
		`{"a":1,"A":1}`, `{"\u0061":1,"a":1}`, `{"a\u0000":1}`, `{"\/":1,"/":1}`, `{"é":1,"é":1}`, "{\"\xff\":1}", "{\"\xff\":1,\"\xff\":1}",
		`{"a":"}","a":"{"}`, `{"a":"\"","b":"\\"}`, `{"a":"\\","a":1}`, `{"a\\":1,"a\\":2}`, `{"a":1e999,"b":-0}`, `{"a":-0.0e-0}`,
		keys17("k0"), keys17("k15"), keys17("k16"), keys17("k17"), keys17("k99"), keys17(""),
		`{"":1}`, `{"":1,"":1}`, `{"a":[{"a":1},{"a":1}]}`, `{"a":1}x`, `{"a":1}}`, `{"a":1`, `{"a"}`, `{"a":}`, `{,"a":1}`, `{"a":1,}`,
		`{"a":[1,2,]}`, `{"a":"x` + "\x01" + `"}`, "{\"a\":\"\xff\"}", `{"a":"\ud800"}`, `"{"`, `"}"`, `["{"]`, `[1,"{",{"a":1}]`,
		`{"a":true,"b":false,"c":null}`, `{"a":nul}`, `{"a":tru}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":+1}`,
		`{"a":1}` + " ", " " + `{"a":1}`, `null`, `{"a":null}`, `[null]`, `{"__proto__":1}`, `{"a":{"a":{"a":{"a":1}}}}`,
		`{"a":{"b":1},"b":{"a":1}}`, `{"payload":1,"payload":2}`, `{"v":1}`,
	}
	for _, p := range payloads {
		adv68Compare(t, "job-1", `{"v":1,"op":"fire","payload":`+p+`}`)
		adv68Compare(t, "job-1", `{"v":1,"op":"fire","trigger_id":"t1","payload":`+p+`,"if_version":3}`)
		adv68Compare(t, "job-1", `{"v":1,"op":"fire","payload":`+p+`,"payload":1}`)
		adv68Compare(t, "job-1", `{"v":1,"op":"put","job":{"every":"1m","payload":`+p+`}}`)
		adv68Compare(t, "job-1", `{"v":1,"op":"put","job":{"every":"1m","payload":`+p+`,"bucket":"b"}}`)
		adv68Compare(t, "job-1", `{"v":1,"op":"put","job":{"payload":`+p+`}}`)
		adv68Compare(t, "job-1", `{"v":1,"op":"pause","payload":`+p+`}`)
		adv68Compare(t, "job-1", `{"v":1,"op":"put","job":{"every":"1m","payload":`+p+`},"payload":`+p+`}`)
	}
}

// adv68Payload builds a random JSON payload (mostly valid) with objects,
// nesting, duplicates, escapes, non-ASCII keys and whitespace.
func adv68Payload(rng *rand.Rand, depth int) string {
	ws := func() string {
		if rng.IntN(6) != 0 {
			return ""
		}
		return []string{" ", "\n", "\t", "\r", "  "}[rng.IntN(5)]
	}
	key := func() string {
		switch rng.IntN(14) {
		case 0:
			return `"\u0061"`
		case 1:
			return `"é"`
		case 2:
			return `"A"`
		case 3:
			return `""`
		case 4:
			return "\"\xff\""
		case 5:
			return `"a\"b"`
		case 6:
			return `"a\\"`
		default:
			return fmt.Sprintf(`"%c"`, 'a'+rune(rng.IntN(rng.IntN(26)+1)))
		}
	}
	leaf := func() string {
		return []string{`1`, `-0`, `1e999`, `"x"`, `"{"`, `"}"`, `"\""`, `"\\"`, `true`, `false`, `null`, `""`, "\"\xc3\"", `"é"`, `0.5`}[rng.IntN(15)]
	}
	if depth > 4 || rng.IntN(4) == 0 {
		return leaf()
	}
	var b strings.Builder
	if rng.IntN(3) == 0 {
		b.WriteString("[" + ws())
		n := rng.IntN(4)
		for i := range n {
			if i > 0 {
				b.WriteString(ws() + "," + ws())
			}
			b.WriteString(adv68Payload(rng, depth+1))
		}
		b.WriteString(ws() + "]")
		return b.String()
	}
	b.WriteString("{" + ws())
	n := rng.IntN(6)
	if rng.IntN(5) == 0 {
		n = 14 + rng.IntN(8) // around shapeSmall
	}
	used := map[string]bool{}
	for i := 0; i < n; i++ {
		var k string
		if n > 8 && rng.IntN(8) != 0 {
			k = fmt.Sprintf(`"k%d"`, rng.IntN(40))
		} else {
			k = key()
		}
		if rng.IntN(3) != 0 {
			// mostly avoid duplicates, so the fast path gets exercised
			for tries := 0; used[k] && tries < 5; tries++ {
				k = fmt.Sprintf(`"u%d"`, rng.IntN(1000))
			}
		}
		used[k] = true
		if i > 0 {
			b.WriteString(ws() + "," + ws())
		}
		b.WriteString(k + ws() + ":" + ws() + adv68Payload(rng, depth+1))
	}
	b.WriteString(ws() + "}")
	s := b.String()
	if rng.IntN(60) == 0 && len(s) > 1 {
		// corrupt it
		i := rng.IntN(len(s))
		s = s[:i] + s[i+1:]
	}
	return s
}

// Generator: thousands of commands with object payloads. Should pass if
// the promise holds.
func TestAdversary68RandomObjectPayloads(t *testing.T) {
	fast := 0
	total := 0
	for _, seed := range []uint64{1, 2, 3, 68} {
		rng := rand.New(rand.NewPCG(seed, 68))
		for range 1000 {
			p := adv68Payload(rng, 0)
			var raw string
			switch rng.IntN(6) {
			case 0, 1:
				raw = `{"v":1,"op":"fire","payload":` + p + `}`
			case 2:
				raw = `{"v":1,"op":"fire","id":"job-1","trigger_id":"t-1","payload":` + p + `,"if_version":` + fmt.Sprint(rng.IntN(3)) + `}`
			case 3:
				raw = `{"v":1,"op":"put","job":{"every":"1m","payload":` + p + `}}`
			case 4:
				raw = `{"v":1,"op":"put","job":{"cron":"*/5 * * * *","payload":` + p + `,"bucket":"b","max_fires":3}}`
			case 5:
				q := adv68Payload(rng, 0)
				raw = `{"v":1,"op":"put","job":{"every":"1m","payload":` + p + `},"payload":` + q + `}`
			}
			if _, ok := codecs.CommandHead([]byte(raw)); ok {
				fast++
			}
			total++
			adv68Compare(t, "job-1", raw)
		}
	}
	t.Logf("%d commands, %d through the fast reader", total, fast)
	if fast < total/10 {
		t.Fatalf("fast path too rarely taken: %d of %d", fast, total)
	}
}

// adv68WideDeep: a payload of 6,000 keys and one nested 8,000 levels (an
// object and an array in turn), each placed at top level.
func adv68WideDeep() map[string][]byte {
	var b strings.Builder
	b.WriteString("{")
	for i := range 6000 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%d":1`, i)
	}
	b.WriteString("}")
	deep := strings.Repeat(`{"a":[`, 4000) + strings.Repeat("]}", 4000)
	return map[string][]byte{
		"wide": []byte(`{"v":1,"op":"fire","payload":` + b.String() + `}`),
		"deep": []byte(`{"v":1,"op":"fire","payload":` + deep + `}`),
	}
}

// Many keys and deep nesting: the same answer from both.
func TestAdversary68WideDeep(t *testing.T) {
	for _, raw := range adv68WideDeep() {
		adv68Compare(t, "job-1", string(raw))
	}
}

// BenchmarkAdversary68WideDeep: the fast reader against the strict decoder
// alone on those payloads (the fast reader gives the deep one to the
// strict decoder). go test -run '^$' -bench Adversary68 ./codecs/
func BenchmarkAdversary68WideDeep(b *testing.B) {
	lim := codecs.DefaultLimits()
	for name, raw := range adv68WideDeep() {
		for _, c := range []struct {
			name   string
			decode func(key, raw []byte, lim codecs.Limits) (codecs.Command, error)
		}{{"DecodeCommand", codecs.DecodeCommand}, {"strict", codecs.DecodeCommandStrict}} {
			b.Run(name+"/"+c.name, func(b *testing.B) {
				for b.Loop() {
					_, _ = c.decode([]byte("job-1"), raw, lim)
				}
			})
		}
	}
}

// FuzzAdversary68 holds DecodeCommand to the strict decoder on payloads
// placed at top level and in job.payload.
func FuzzAdversary68(f *testing.F) {
	for _, p := range []string{`{"a":1}`, `{"a":{"b":[1,{"c":2}]}}`, `[{"a":1},{"a":1}]`, `{"a":1,"a":2}`, `{ "a" : 1 }`} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		adv68Compare(t, "job-1", `{"v":1,"op":"fire","payload":`+p+`}`)
		adv68Compare(t, "job-1", `{"v":1,"op":"put","job":{"every":"1m","payload":`+p+`}}`)
	})
}
