package scheduler

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

type adv30Cmd struct {
	id string
	ts time.Time
	js string
}

// adv30Crash runs: puts (at now), an advance to T whose callback number
// crashAt (0: the first, the trigger) has its table writes lost, the
// partition moved to a new owner, cmds there, then the crashed input
// delivered again and the rest; then advances to after.
func adv30Crash(t *testing.T, budget time.Duration, now time.Time, puts []adv30Cmd, T time.Time, crashAt int, cmds []adv30Cmd, after ...time.Time) *adv17Log {
	l := &adv17Log{partitionHarness: newPartitionHarnessBudget(t, 1, budget, now), changelog: map[string][]byte{}}
	l.advance(now)
	for i, p := range puts {
		l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), p.id, p.ts, int64(i), []byte(p.js), false)
	}
	l.now = T
	l.off++
	adv := codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: T})
	var redo func()
	if crashAt == 0 {
		l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), T, l.off, adv, true)
		l.loops = nil
		redo = func() {
			l.off++
			l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), T, l.off, adv, false)
		}
	} else {
		l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), T, l.off, adv, false)
		for i := 1; ; {
			require.NotEmpty(t, l.loops, "callback %d", i)
			cont := l.loops[0]
			l.loops = l.loops[1:]
			l.off++
			crash := cont.Key == l.shardKey() && i == crashAt
			n := len(l.loops)
			l.run(l.s.onLoop, l.s.cfg.Layout.SchedulerLoop(), cont.Key, T, l.off, cont.Value, crash)
			if crash {
				l.loops = l.loops[:n] // those it sent are resent when it is redelivered
				redo = func() { l.loops = append([]simOut{cont}, l.loops...) }
				break
			}
			if cont.Key == l.shardKey() {
				i++
			}
		}
	}
	l.moveToNewOwner()
	sh := l.shard()
	t.Logf("restored shard: wm %v advancing %v cursor (%v,%q) open %v cutslost %v", sh.Watermark, sh.Advancing, sh.PassAt, sh.PassKey, sh.PassOpen, sh.PassCutsLost)
	for i, c := range cmds {
		l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), c.id, c.ts, int64(1000+i), []byte(c.js), false)
	}
	redo()
	l.drainLoops()
	for _, a := range after {
		l.advance(a)
	}
	return l
}

func adv30Dump(t *testing.T, l *adv17Log) {
	f := l.fired()
	ks := make([]string, 0, len(f))
	for k := range f {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		t.Logf("%s %q", k, f[k])
	}
}

var adv30Now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func adv30s(s float64) time.Time { return adv30Now.Add(time.Duration(s * float64(time.Second))) }

func TestAdv30OneShotLatePausePut(t *testing.T) {
	t.Parallel()
	puts := []adv30Cmd{{"j", adv30Now, `{"v":1,"op":"put","job":{"at":"2026-03-01T12:00:02Z","payload":{"p":"A"}}}`}}
	cmds := []adv30Cmd{
		{"j", adv30s(1), `{"v":1,"op":"pause"}`},
		{"j", adv30s(1.5), `{"v":1,"op":"put","job":{"at":"2026-03-01T12:00:02Z","payload":{"p":"B"}}}`},
	}
	l := adv30Crash(t, time.Hour, adv30Now, puts, adv30s(3), 0, cmds, adv30s(5), adv30s(10))
	adv30Dump(t, l)
	l.requireOnePayload()
}

func adv30Three(js string) []adv30Cmd {
	return []adv30Cmd{{"a", adv30Now, js}, {"b", adv30Now, js}, {"c", adv30Now, js}}
}

func TestAdv30Variants(t *testing.T) {
	t.Parallel()
	type tc struct {
		name    string
		budget  time.Duration
		puts    []adv30Cmd
		T       float64
		crashAt int
		cmds    []adv30Cmd
	}
	every := `{"v":1,"op":"put","job":{"every":"1s","payload":{"p":"A"}}}`
	everyB := `{"v":1,"op":"put","job":{"every":"1s","payload":{"p":"B"}}}`
	once := `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"fire_once","misfire_grace":"1s","payload":{"p":"A"}}}`
	onceB := `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"fire_once","misfire_grace":"1s","payload":{"p":"B"}}}`
	skip := `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"skip","misfire_grace":"1s","payload":{"p":"A"}}}`
	skipB := `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"skip","misfire_grace":"1s","payload":{"p":"B"}}}`
	cases := []tc{
		{"startlost-pause-delete-reput", time.Hour, []adv30Cmd{{"j", adv30Now, every}}, 3, 0, []adv30Cmd{
			{"j", adv30s(1), `{"v":1,"op":"pause"}`}, {"j", adv30s(1.2), `{"v":1,"op":"delete"}`}, {"j", adv30s(1.5), everyB}}},
		{"startlost-pause-resume-put", time.Hour, []adv30Cmd{{"j", adv30Now, every}}, 3, 0, []adv30Cmd{
			{"j", adv30s(1), `{"v":1,"op":"pause"}`}, {"j", adv30s(1.2), `{"v":1,"op":"resume"}`}, {"j", adv30s(1.5), everyB}}},
		{"startlost-once-pause-put", time.Hour, []adv30Cmd{{"j", adv30Now, once}}, 5, 0, []adv30Cmd{
			{"j", adv30s(1), `{"v":1,"op":"pause"}`}, {"j", adv30s(1.5), onceB}}},
		{"startlost-skip-pause-put", time.Hour, []adv30Cmd{{"j", adv30Now, skip}}, 5, 0, []adv30Cmd{
			{"j", adv30s(1), `{"v":1,"op":"pause"}`}, {"j", adv30s(1.5), skipB}}},
		{"mid-oneshot-pause-put", time.Nanosecond, adv30Three(`{"v":1,"op":"put","job":{"at":"2026-03-01T12:00:01Z","payload":{"p":"A"}}}`), 1, 1, []adv30Cmd{
			{"b", adv30s(0.5), `{"v":1,"op":"pause"}`}, {"b", adv30s(0.6), `{"v":1,"op":"put","job":{"at":"2026-03-01T12:00:01Z","payload":{"p":"B"}}}`}}},
		{"mid-once-pause-put", time.Nanosecond, adv30Three(once), 5, 1, []adv30Cmd{
			{"b", adv30s(0.5), `{"v":1,"op":"pause"}`}, {"b", adv30s(0.6), onceB}}},
		{"mid-skip-pause-put", time.Nanosecond, adv30Three(skip), 5, 1, []adv30Cmd{
			{"b", adv30s(0.5), `{"v":1,"op":"pause"}`}, {"b", adv30s(0.6), skipB}}},
		{"mid-pause-delete-reput", time.Nanosecond, adv30Three(every), 3, 1, []adv30Cmd{
			{"b", adv30s(0.5), `{"v":1,"op":"pause"}`}, {"b", adv30s(0.6), `{"v":1,"op":"delete"}`}, {"b", adv30s(0.7), everyB}}},
		{"mid2-pause-put", time.Nanosecond, adv30Three(every), 3, 2, []adv30Cmd{
			{"c", adv30s(0.5), `{"v":1,"op":"pause"}`}, {"c", adv30s(0.7), everyB}}},
		{"mid2-pauseb-put", time.Nanosecond, adv30Three(every), 3, 2, []adv30Cmd{
			{"b", adv30s(0.5), `{"v":1,"op":"pause"}`}, {"b", adv30s(0.7), everyB}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := adv30Crash(t, c.budget, adv30Now, c.puts, adv30s(c.T), c.crashAt, c.cmds, adv30s(c.T+2), adv30s(c.T+10))
			adv30Dump(t, l)
			l.requireOnePayload()
		})
	}
}

// adv30Step delivers the queued loopbacks until one of the shard's
// callbacks (a continuation) has run.
func adv30Step(l *adv17Log) {
	l.t.Helper()
	for len(l.loops) > 0 {
		lp := l.loops[0]
		l.loops = l.loops[1:]
		l.off++
		l.run(l.s.onLoop, l.s.cfg.Layout.SchedulerLoop(), lp.Key, l.now, l.off, lp.Value, false)
		if lp.Key == l.shardKey() {
			return
		}
	}
}

func TestAdv30ResumedMidPassCleanRebalance(t *testing.T) {
	t.Parallel()
	l := &adv17Log{partitionHarness: newPartitionHarnessBudget(t, 1, time.Nanosecond, adv30Now), changelog: map[string][]byte{}}
	l.advance(adv30Now)
	every := `{"v":1,"op":"put","job":{"every":"1s","payload":{"p":"A"}}}`
	off := int64(0)
	cmd := func(id string, ts float64, js string) {
		off++
		l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), id, adv30s(ts), off, []byte(js), false)
	}
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		cmd(id, 0, every)
	}
	cmd("f", 0, `{"v":1,"op":"put","job":{"at":"2026-03-01T12:00:03Z","payload":{"p":"A"}}}`)
	cmd("c", 0.5, `{"v":1,"op":"pause"}`)
	T := adv30s(3)
	l.now = T
	l.off++
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), T, l.off, codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: T}), false)
	sh := l.shard()
	t.Logf("after cb0: cursor (%v,%q)", sh.PassAt, sh.PassKey)
	cmd("c", 1.5, `{"v":1,"op":"resume"}`)
	for i := 0; i < 10; i++ {
		adv30Step(l)
		sh = l.shard()
		t.Logf("after step: cursor (%v,%q) open %v", sh.PassAt, sh.PassKey, sh.PassOpen)
		if _, ok := l.fired()["c@2026-03-01T12:00:02Z"]; ok && sh.PassAt.Equal(adv30s(2)) && sh.PassKey == "c" {
			break
		}
	}
	require.Contains(t, l.fired(), "c@2026-03-01T12:00:02Z")
	require.NotEmpty(t, l.loops)
	for _, lp := range l.loops {
		tr := string(lp.Value)
		t.Logf("queued loop %q %s", lp.Key, tr)
	}
	crec, _ := codecs.DecodeJobRecord(l.changelog["c"])
	t.Logf("c record: %+v", *crec)
	l.moveToNewOwner() // a clean rebalance: every write reached the changelog
	due, _ := l.st.DueOf("c")
	t.Logf("c due on the new owner %v", due)
	cmd("c", 1.7, `{"v":1,"op":"pause"}`)
	crec, _ = codecs.DecodeJobRecord(l.changelog["c"])
	t.Logf("c record after the pause: %v through %v owedat %v notbefore %v", crec.Status, crec.Through, crec.OwedAt, crec.NotBefore)
	cmd("c", 1.8, `{"v":1,"op":"put","job":{"every":"1s","payload":{"p":"B"}}}`)
	crec, _ = codecs.DecodeJobRecord(l.changelog["c"])
	t.Logf("c record after the put: %v through %v owedat %v notbefore %v", crec.Status, crec.Through, crec.OwedAt, crec.NotBefore)
	l.drainLoops()
	l.advance(adv30s(5))
	l.advance(adv30s(8))
	adv30Dump(t, l)
	l.requireOnePayload()
}

func TestAdv30JitterVariants(t *testing.T) {
	t.Parallel()
	def := func(jit, p string) string {
		return `{"v":1,"op":"put","job":{"every":"10s","jitter":"` + jit + `","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"p":"` + p + `"}}}`
	}
	for _, jits := range [][2]string{{"9s", "0s"}, {"0s", "9s"}, {"9s", "3s"}, {"3s", "9s"}, {"9s", "9500ms"}} {
		for _, T := range []float64{25, 33, 38, 44} {
			for _, crashAt := range []int{0, 1, 2} {
				for _, pause := range []bool{true, false} {
					name := jits[0] + "-" + jits[1] + "-" + time.Duration(T*float64(time.Second)).String() + "-" + string(rune('0'+crashAt))
					if pause {
						name += "-pause"
					}
					t.Run(name, func(t *testing.T) {
						var puts []adv30Cmd
						for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
							puts = append(puts, adv30Cmd{id, adv30Now, def(jits[0], "A")})
						}
						var cmds []adv30Cmd
						for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
							if pause {
								cmds = append(cmds, adv30Cmd{id, adv30s(1), `{"v":1,"op":"pause"}`})
							}
							cmds = append(cmds, adv30Cmd{id, adv30s(2), def(jits[1], "B")})
						}
						budget := time.Nanosecond
						if crashAt == 0 {
							budget = time.Hour
						}
						l := adv30Crash(t, budget, adv30Now, puts, adv30s(T), crashAt, cmds, adv30s(T+20), adv30s(T+60))
						l.requireOnePayload()
						f := l.fired()
						for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
							for x := 10.0; x <= T+50; x += 10 {
								if k := id + "@" + adv30s(x).Format(time.RFC3339); len(f[k]) == 0 {
									t.Errorf("lost %s", k)
								}
							}
						}
						if t.Failed() {
							adv30Dump(t, l)
						}
					})
				}
			}
		}
	}
}

// adv30Move is moveToNewOwner on a store opened with adv24ChunkBytes.
func adv30Move(l *adv17Log) {
	l.t.Helper()
	adv24Open(l.partitionHarness)
	for k, v := range l.changelog {
		require.NoError(l.t, l.st.Set(k, v))
	}
}

// adv30CutCrash: job j (every 1s, fire_all, a ~200-byte payload A: a plan
// stops after 2 fires, 1 KiB chunks, one chunk a callback) put at 12:00:00,
// then the commands before (on the first owner, record times ts), then an
// advance to 12:00:10. Its first callback sends j@01, j@02 and cuts j
// (PassCuts j -> 12:00:03, cursor (12:00:01, j)); the settle it sends for
// j is consumed and its table write lost; the continuation's callback
// writes its durable start (PassOpen), sends j@03, j@04 with A, and dies.
// The new owner restores the changelog and applies the commands after
// before the settle and the continuation are delivered again.
func adv30CutCrash(t *testing.T, before, after []adv30Cmd) *adv17Log {
	h := &partitionHarness{t: t, prod: &recordingProducer{}, now: adv30Now, chunk: 25000, budget: time.Nanosecond}
	adv24Open(h)
	l := &adv17Log{partitionHarness: h, changelog: map[string][]byte{}}
	l.advance(adv30Now)
	pay := `{"p":"A","x":"` + strings.Repeat("x", 190) + `"}`
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "j", adv30Now, 0, []byte(`{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":`+pay+`}}`), false)
	for i, c := range before {
		l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), c.id, c.ts, int64(1+i), []byte(c.js), false)
	}
	T := adv30s(10)
	l.now = T
	l.off++
	adv := codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: T})
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), T, l.off, adv, false)
	sh := l.shard()
	require.Equal(t, []codecs.PassCut{{Key: "j", To: adv30s(3)}}, sh.PassCuts)
	var settle, cont []simOut
	for _, lp := range l.loops {
		if lp.Key == l.shardKey() {
			cont = append(cont, lp)
		} else {
			settle = append(settle, lp)
		}
	}
	require.Len(t, cont, 1)
	require.NotEmpty(t, settle)
	l.loops = nil
	for _, s := range settle { // consumed; its table write never reaches the changelog
		l.off++
		l.run(l.s.onLoop, l.s.cfg.Layout.SchedulerLoop(), s.Key, T, l.off, s.Value, true)
	}
	l.off++
	l.run(l.s.onLoop, l.s.cfg.Layout.SchedulerLoop(), cont[0].Key, T, l.off, cont[0].Value, true)
	require.Contains(t, l.fired(), "j@2026-03-01T12:00:04Z", "sent before the crash")
	l.loops = nil
	adv30Move(l)
	sh = l.shard()
	require.True(t, sh.PassOpen)
	require.False(t, sh.PassCutsLost)
	for i, c := range after {
		l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), c.id, c.ts, int64(100+i), []byte(c.js), false)
	}
	// Delivered again: the settle (stale by now), then the continuation.
	l.loops = append(append(l.loops, settle...), cont...)
	l.drainLoops()
	l.advance(adv30s(12))
	l.advance(adv30s(20))
	return l
}

// TestAdv30CutJobPassOpenPausePut: promise (docs/topics.md, "Delivery
// guarantees" and "Updates, deletes and versions"): no fire_id is ever
// dispatched with two different payloads (a late pause's exception: it
// first sends the job's times up to the pass's T when the shard cannot
// tell how far the advance took the job).
//
// A mid-pass crash (adv30CutCrash) in the callback that continues a job
// the pass cut short: the new owner's entry for j, derived from a record
// whose settle was lost, is behind the cursor, so passedThrough moves it
// to the cut's To (12:00:03, after the cursor) and pastPass reports it
// passed. maybeSent (commands.go:486-487) then answers PassCutsLost
// (false) and never looks at PassOpen, though the callback that died began
// at the cursor and may have sent j from 12:00:03 on. A late pause (ts
// 12:00:02.5) handles j only through 12:00:02.999 (commands.go:331), and a
// put with payload B owes j@03, j@04 again.
//
// Expected: j@03 and j@04 with A only. Got: A and B (on 3bb2402~1 too).
// Found by adversary round 30 (2026-12-04), fixed the same day: maybeSent
// looks at PassOpen for an entry passedThrough moved after the cursor.
func TestAdv30CutJobPassOpenPausePut(t *testing.T) {
	t.Parallel()
	l := adv30CutCrash(t, nil, []adv30Cmd{
		{"j", adv30s(2.5), `{"v":1,"op":"pause"}`},
		{"j", adv30s(2.6), `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"p":"B"}}}`},
	})
	l.requireOnePayload()
	if t.Failed() {
		adv30Dump(t, l)
	}
}

// TestAdv30CutPausedJobPassOpenPut: the same crash for a job paused
// (ts 12:00:08) before the advance, the pass sending what it owed from
// before its pause; on the new owner a put (payload B) applies to the
// paused job: pausedHandled (commands.go:452) asks maybeSent with passed
// set, which answers PassCutsLost (false), so the put owes j from 12:00:03
// (the cut's To), which the dead callback sent with A. Fixed with
// TestAdv30CutJobPassOpenPausePut.
func TestAdv30CutPausedJobPassOpenPut(t *testing.T) {
	t.Parallel()
	l := adv30CutCrash(t, []adv30Cmd{{"j", adv30s(8), `{"v":1,"op":"pause"}`}}, []adv30Cmd{
		{"j", adv30s(8.5), `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"p":"B"}}}`},
	})
	l.requireOnePayload()
	if t.Failed() {
		adv30Dump(t, l)
	}
}
