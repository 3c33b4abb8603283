package processors_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/instance"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestAdv16CleanRebalanceLatePauseThenPutTwoPayloads: promise (docs/topics.md)
// "no fire_id is ever dispatched with two different payloads"; DESIGN
// "duplicates appear only after a crash" (deploy.md: a rolling update stops
// instances cleanly). Whole-system form of the scheduler package's
// TestAdv16CursorUnderClaimLatePauseThenPutTwoPayloads.
//
// 1000 jobs "every 10s" (v1) put at :00; one tick to :60, an advance of
// many callbacks (chunk 5): every job's entry is at :10, and each one the
// pass reaches sends :10..:60 with v1. A clean stop mid-advance; the new
// owner derives z-0000 at :10 again, behind the pass's cursor, whose time
// is :10. A pause of z-0000 (record time :15) and a put of v2 (record time
// :16) are consumed there: passedEntry (since replaced by passedThrough) said z-0000 was handled through the
// cursor's time (:09.999) only, the pause records Through :19.999, and the
// put on the paused job owes :20..:60, which go out with v2.
func TestAdv16CleanRebalanceLatePauseThenPutTwoPayloads(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 1)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	small := func() instance.Config {
		cfg := env.Config()
		cfg.Fanout.ChunkSize, cfg.Fanout.Budget = 5, time.Nanosecond
		return cfg
	}
	a := env.Start(small())
	t0 := time.Date(2026, 7, 5, 0, 0, 0, 0, time.UTC)
	const n = 1000
	keys, values := []string{}, [][]byte{}
	for i := range n {
		id := fmt.Sprintf("z-%04d", i)
		keys, values = append(keys, id), append(values, testenv.PutCommand(id, codecs.JobDef{Every: "10s", MisfireGrace: "1h", Payload: []byte(`"v1"`)}))
	}
	env.ProduceMany(string(env.Layout.Jobs()), keys, values, t0)
	env.WaitApplied()
	env.Tick(t0.Add(60 * time.Second))
	waitFires(t, dispatch, "z-0100", []string{codecs.ScheduledFireID("z-0100", t0.Add(60*time.Second))})
	a.Stop() // a clean stop (a rolling update), mid-advance
	last := fmt.Sprintf("z-%04d", n-1)
	if _, done := fireIDs(t, dispatch.Dispatches(t), last)[codecs.ScheduledFireID(last, t0.Add(60*time.Second))]; done {
		t.Fatal("setup: the advance completed before the stop")
	}
	env.Start(small())
	env.Produce(string(env.Layout.Jobs()), "z-0000", []byte(`{"v":1,"op":"pause"}`), t0.Add(15*time.Second))
	env.Put("z-0000", codecs.JobDef{Every: "10s", MisfireGrace: "1h", Payload: []byte(`"v2"`)}, t0.Add(16*time.Second))
	waitFires(t, dispatch, last, []string{codecs.ScheduledFireID(last, t0.Add(60*time.Second))})
	env.WaitApplied()
	env.Tick(t0.Add(70 * time.Second))
	waitFires(t, dispatch, last, []string{codecs.ScheduledFireID(last, t0.Add(70*time.Second))})
	waitFires(t, dispatch, "z-0000", []string{codecs.ScheduledFireID("z-0000", t0.Add(70*time.Second))})
	ds := dispatch.Dispatches(t)
	seen := map[string]string{}
	var two []string
	for _, d := range ds {
		if d.JobID != "z-0000" {
			continue
		}
		if p, ok := seen[d.FireID]; ok && p != string(d.Payload) {
			two = append(two, fmt.Sprintf("%s: %s and %s", d.FireID, p, d.Payload))
		}
		seen[d.FireID] = string(d.Payload)
	}
	require.Empty(t, two, "fire_ids of z-0000 dispatched with two payloads after a clean rebalance")
}
