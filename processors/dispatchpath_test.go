package processors_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestEveryFireGoesThroughOneProducer: scheduled, bucket and manual fires
// are all produced by the one dispatch producer, so a producer setting
// reaches each of them. The broker says which producer wrote a record: with
// idempotence (the default) each producer has its own producer id. Before
// issue 16 manual fires went out through goka's sarama producer (another
// producer id, and --linger reached only them).
func TestEveryFireGoesThroughOneProducer(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 1)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	env.Start(env.Config())
	env.Tick(t0)
	env.Put("sched", codecs.JobDef{Every: "10s", MisfireGrace: "1h", Bucket: "b"}, t0)
	env.Put("manual", codecs.JobDef{At: t0.Add(time.Hour).Format(time.RFC3339), Bucket: "b"}, t0)
	env.WaitApplied()
	env.Tick(t0.Add(10 * time.Second)) // a scheduled fire of "sched"
	env.Produce(string(env.Layout.Jobs()), "manual", []byte(`{"v":1,"op":"fire","trigger_id":"m1"}`), t0.Add(11*time.Second))
	trig, err := codecs.EncodeBucketTrigger(codecs.BucketTrigger{Bucket: "b", TriggerID: "bt1"})
	if err != nil {
		t.Fatal(err)
	}
	env.Produce(string(env.Layout.BucketTriggers()), "b", trig, t0.Add(12*time.Second))

	want := map[string]bool{
		codecs.ScheduledFireID("sched", t0.Add(10*time.Second)): true,
		codecs.TriggeredFireID("manual", "m1"):                  true,
		codecs.TriggeredFireID("sched", "bt1"):                  true,
		codecs.TriggeredFireID("manual", "bt1"):                 true,
	}
	producers := map[string]int64{}
	testenv.Eventually(t, time.Minute, func() error {
		for _, r := range dispatch.Records() {
			d, err := codecs.DecodeDispatch(r.Value)
			if err != nil {
				return err
			}
			if want[d.FireID] {
				producers[d.Trigger+" "+d.FireID] = r.ProducerID
			}
		}
		if len(producers) < len(want) {
			return fmt.Errorf("have %d of %d fires: %v", len(producers), len(want), producers)
		}
		return nil
	})
	var first int64 = -2
	for fire, id := range producers {
		if id < 0 {
			t.Fatalf("%s has no producer id (%d): is the dispatch producer idempotent?", fire, id)
		}
		if first == -2 {
			first = id
		}
		if id != first {
			t.Fatalf("fires came from more than one producer: %v", producers)
		}
	}
}
