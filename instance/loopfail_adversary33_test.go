package instance_test

import (
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestAdv33LoopbackFailureDiscardsStore: adversary round 33 found that
// Settled looked at the table's changelog only. A write of the scheduler's
// *loop* topic (here a one-shot job's complete after its fire,
// ctx.Loopback) that fails stops goka's processor like a failed changelog
// write, but the stores closed with every table write acknowledged, so
// they were kept, and the supervisor restarted the processor in the same
// process on the same data dir: a store then keeps the index moves of
// work whose loopbacks never reached Kafka (docs/reliability.md, "A store
// ahead of its changelog"). Settled now counts every write of the
// processor's producer and every callback that failed: the store is
// discarded at the in-process restart. The history then checks each
// fire_id has one payload.
func TestAdv33LoopbackFailureDiscardsStore(t *testing.T) {
	env := testenv.New(t, 1)
	if env.Broker == nil {
		t.Skipf("the loopback failure is injected with the embedded broker's request hooks (kfake's ControlKey), which %s has not: this test runs on the embedded broker (go test ./...)", testenv.BrokersEnv)
	}
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	logs := &syncBuffer{}
	cfg := env.Config()
	cfg.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(logs, testWriter{t}), &slog.HandlerOptions{Level: slog.LevelWarn}))
	inst := env.Start(cfg)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	env.Put("a", codecs.JobDef{At: t0.Add(10 * time.Second).Format(time.RFC3339), MisfireGrace: "1h", Payload: []byte(`{"v":1}`)}, t0)
	env.WaitApplied()

	loop := string(env.Layout.SchedulerLoop())
	var failed atomic.Int32
	c := env.Broker.Cluster()
	c.ControlKey(int16(kmsg.Produce), func(r kmsg.Request) (kmsg.Response, error, bool) {
		req := r.(*kmsg.ProduceRequest)
		has := false
		for _, tp := range req.Topics {
			if tp.Topic == loop {
				has = true
			}
		}
		if !has || failed.Load() > 0 {
			c.KeepControl()
			return nil, nil, false
		}
		failed.Add(1)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, tp := range req.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic, rt.TopicID = tp.Topic, tp.TopicID
			for _, p := range tp.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = kerr.RequestTimedOut.Code // retried
				if tp.Topic == loop {
					rp.ErrorCode = kerr.MessageTooLarge.Code // not retried: the loopback fails
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})

	env.Tick(t0.Add(10 * time.Second))
	dispatch.WaitLen(t, 1, 30*time.Second)
	time.Sleep(5 * time.Second)
	t.Logf("loop produce requests failed so far: %d; warn logs:\n%s", failed.Load(), logs.String())
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "processor stopped; restarting") },
		60*time.Second, 100*time.Millisecond, "the loopback failure stops the scheduler processor")
	t.Logf("loop produce requests failed: %d", failed.Load())
	// Wait for the restarted processor.
	require.Eventually(t, func() bool { return inst.Ready() == nil }, 90*time.Second, 100*time.Millisecond)
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.ShardTriggers()), 60*time.Second)
	discarded := strings.Contains(logs.String(), discardedLog)
	t.Logf("store discarded at the in-process restart: %v", discarded)

	// A put of v2, then time moves on; then the partition moves to an
	// empty data dir (a clean stop first).
	env.Put("a", codecs.JobDef{At: t0.Add(10 * time.Second).Format(time.RFC3339), MisfireGrace: "1h", Payload: []byte(`{"v":2}`)}, t0.Add(12*time.Second))
	env.WaitApplied()
	env.Tick(t0.Add(20 * time.Second))
	time.Sleep(3 * time.Second)
	inst.Stop()
	second := env.Start(env.Config())
	env.Tick(t0.Add(25 * time.Second))
	env.Tick(t0.Add(30 * time.Second))
	time.Sleep(5 * time.Second)
	second.Stop()

	byID := map[string][]string{}
	for _, d := range dispatch.Dispatches(t) {
		byID[d.FireID] = append(byID[d.FireID], string(d.Payload))
		t.Logf("dispatch %s %s", d.FireID, d.Payload)
	}
	require.True(t, discarded, "a store open while a loopback failed is discarded at the restart")
	for id, ps := range byID {
		for _, p := range ps[1:] {
			require.JSONEq(t, ps[0], p, "fire_id %s went out with two payloads: %v", id, ps)
		}
	}
	// Repeats of a fire_id with its payload are within the contract (the
	// callback whose loopback failed is consumed again); two payloads or
	// none are not.
	require.NotEmpty(t, byID["a@2026-03-01T00:00:10Z"], "a's fire")
}
