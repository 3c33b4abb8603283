package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// adv25FlakyProducer fails its calls numbered in fail (1-based), else hands
// the messages to rec. A failing call acknowledges a prefix of keep
// messages first (an ambiguous failure, as the simulation's producer).
type adv25FlakyProducer struct {
	rec   *recordingProducer
	fail  map[int]bool
	keep  int
	calls int
}

func (p *adv25FlakyProducer) ProduceSync(ctx context.Context, topic string, msgs []Msg) error {
	p.calls++
	if p.fail[p.calls] {
		_ = p.rec.ProduceSync(ctx, topic, msgs[:min(p.keep, len(msgs))])
		return errors.New("broker: request timed out (transient)")
	}
	return p.rec.ProduceSync(ctx, topic, msgs)
}

// TestAdv25InterruptedCatchUpThenRetry checks change 1 of round 25
// (0abc477, handled writes the record's progress between the batches of a
// command's catch-up) against the promises of docs/topics.md: a command
// consumed again after a failed produce is the same command (an
// if_version that held holds again: the progress writes are not a new
// version, and are not taken for the command's effect, JobRecord.Applied);
// what the job owed goes out under the definition that owed it (same
// fire_id, same payload, at least once); an update continues exactly where
// the old definition stopped.
//
// Inputs: 1 KiB chunks; shard at 10:00; put j (every 1m, payload A ~200
// bytes, fire_all, grace 168h) consumed late with ts 09:00 (owes 09:01 ...
// 10:00, 60 fires, ~3 a batch); for each of pause, put (payload B) and
// resume-after-pause (a delete of an active job owes nothing first), each
// with if_version and ts 09:59: the command's third
// produce fails (one event of the batch acknowledged), the command fails;
// it is consumed again (same offset) with the producer working.
//
// Expected: the command is applied on its second delivery (no
// version_conflict reject); every fire 09:01-10:00 (09:59 for the pause)
// went out with payload A only; after the next advance (10:05), a put's B
// fires 10:01-10:05, a pause fires nothing after 10:00. Got (current
// code): as expected (a real check: it fails if the progress write bumps
// the version or Applied, or loses the owed fires; on 7ffa092, which has
// no progress write, it fails at "progress kept").
func TestAdv25InterruptedCatchUpThenRetry(t *testing.T) {
	t.Parallel()
	for _, op := range []string{"put", "pause", "resume"} {
		t.Run(op, func(t *testing.T) { adv25InterruptedCatchUp(t, op) })
	}
}

func adv25InterruptedCatchUp(t *testing.T, op string) {
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	rec := &recordingProducer{}
	prod := &adv25FlakyProducer{rec: rec, fail: map[int]bool{}, keep: 1}
	h := &partitionHarness{t: t, prod: rec, now: base, chunk: 25000, budget: time.Hour}
	h.s, h.st = openPartition(t, Config{ChunkSize: h.chunk, ChunkBudget: h.budget, ChunkBytes: 1 << 10, Producer: prod,
		Now: func() time.Time { return h.now }})
	h.advance(base)
	h.drain()
	pad := strings.Repeat("x", 180)
	h.command("j", base.Add(-time.Hour), `{"v":1,"op":"put","job":{"every":"1m","payload":{"p":"A","pad":"`+pad+`"},"misfire_policy":"fire_all","misfire_grace":"168h"}}`)
	h.drain()
	if op == "resume" {
		// Paused after the late put, before any advance: the catch-up
		// belongs to the pause; the resume below then owes nothing behind.
		h.command("j", base.Add(-time.Hour).Add(30*time.Second), `{"v":1,"op":"pause"}`)
		h.drain()
	}
	raw, err := h.st.Get("j")
	require.NoError(t, err)
	old, err := codecs.DecodeJobRecord(raw)
	require.NoError(t, err)

	var js string
	switch op {
	case "put":
		js = fmt.Sprintf(`{"v":1,"op":"put","if_version":%d,"job":{"every":"1m","payload":{"p":"B"},"misfire_policy":"fire_all","misfire_grace":"168h"}}`, old.Version)
	default:
		js = fmt.Sprintf(`{"v":1,"op":%q,"if_version":%d}`, op, old.Version)
	}
	ts := base.Add(-time.Minute) // before the shard's time: the job owes up to ts first
	h.off++
	off := h.off
	prod.fail[prod.calls+3] = true
	ctx := &simCtx{topic: h.s.cfg.Layout.Jobs(), key: "j", table: h.st, ts: ts, offset: off, ctx: context.Background()}
	err = ctx.run(h.s.onCommand, []byte(js))
	if op != "resume" {
		require.Error(t, err, "the third produce of the catch-up fails the command")
	}
	for _, o := range ctx.outs {
		require.NotEqual(t, simOutEmit, o.Kind, "no reject on the failed delivery: %s", o.Value)
	}
	if op != "resume" {
		// The progress write of the batches acknowledged: same version and
		// Applied, Through moved on (0abc477).
		raw, err := h.st.Get("j")
		require.NoError(t, err)
		mid, err := codecs.DecodeJobRecord(raw)
		require.NoError(t, err)
		require.Equal(t, old.Version, mid.Version)
		require.Equal(t, old.Applied, mid.Applied)
		require.True(t, mid.Through.After(old.Through), "progress kept: through %s, was %s", mid.Through, old.Through)
		t.Logf("after the failed delivery: through %s (was %s)", mid.Through.Format(time.TimeOnly), old.Through.Format(time.TimeOnly))
	}
	// Consumed again, the producer working (a failure armed for a resume,
	// which has no catch-up, must not hit the advance below instead).
	clear(prod.fail)
	ctx = &simCtx{topic: h.s.cfg.Layout.Jobs(), key: "j", table: h.st, ts: ts, offset: off, ctx: context.Background()}
	require.NoError(t, ctx.run(h.s.onCommand, []byte(js)))
	for _, o := range ctx.outs {
		if o.Kind == simOutEmit {
			t.Fatalf("the command consumed again was rejected: %s", o.Value)
		}
		if o.Kind == simOutLoop {
			h.loops = append(h.loops, o)
		}
	}
	h.drain()
	raw, err = h.st.Get("j")
	require.NoError(t, err)
	got, err := codecs.DecodeJobRecord(raw)
	require.NoError(t, err)
	require.Equal(t, old.Version+1, got.Version, "the command applied once")
	require.Equal(t, uint64(off)+1, got.Applied)

	h.advance(base.Add(5 * time.Minute))
	h.drain()
	fired := h.fired()
	h.requireOnePayload()
	owedUpTo := 60 // 09:01 .. 10:00, under A
	if op == "pause" {
		owedUpTo = 59 // a pause applies from its ts (09:59)
	}
	if op == "resume" {
		owedUpTo = 0 // paused at 09:00:30: owes 09:01.. only after the resume
	}
	for m := 1; m <= owedUpTo; m++ {
		id := codecs.ScheduledFireID("j", base.Add(-time.Hour).Add(time.Duration(m)*time.Minute))
		ps, ok := fired[id]
		if !ok {
			t.Errorf("%s owed under payload A before the %s: never dispatched", id, op)
			continue
		}
		if !strings.Contains(ps[0], `"p":"A"`) {
			t.Errorf("%s went out with %s, want payload A", id, ps[0])
		}
	}
	for m := 1; m <= 5; m++ {
		id := codecs.ScheduledFireID("j", base.Add(time.Duration(m)*time.Minute))
		_, ok := fired[id]
		switch op {
		case "put", "resume":
			if !ok {
				t.Errorf("%s owed after the %s: never dispatched", id, op)
			}
		default:
			if ok {
				t.Errorf("%s dispatched after the %s (ts %s)", id, op, ts.Format(time.TimeOnly))
			}
		}
	}
}
