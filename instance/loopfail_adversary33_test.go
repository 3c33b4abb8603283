//go:build adversary33

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

// TestAdv33LoopbackFailureKeepsStore: Settled looks at the table's
// changelog only. A write of the scheduler's *loop* topic (an advance's
// settle or continuation, ctx.Loopback) that fails stops goka's processor
// like a failed changelog write; the stores close with every table write
// acknowledged, so they are kept (no discard logged), and the supervisor
// restarts the processor in the same process on the same data dir: the
// store keeps the index moves of the advance whose loopbacks never reached
// Kafka (docs/reliability.md, "An index ahead of its table"). The history
// then checks each fire_id has one payload.
func TestAdv33LoopbackFailureKeepsStore(t *testing.T) {
	env := testenv.New(t, 1)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	logs := &syncBuffer{}
	cfg := env.Config()
	cfg.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(logs, testWriter{t}), &slog.HandlerOptions{Level: slog.LevelWarn}))
	inst := env.Start(cfg)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	env.Put("a", codecs.JobDef{Every: "10s", MisfireGrace: "1h", Payload: []byte(`{"v":1}`)}, t0)
	env.WaitApplied()

	loop := string(env.Layout.SchedulerLoop())
	var failed atomic.Int32
	c := env.Broker.Cluster()
	c.ControlKey(int16(kmsg.Produce), func(r kmsg.Request) (kmsg.Response, error, bool) {
		req := r.(*kmsg.ProduceRequest)
		has := false
		for _, tp := range req.Topics {
			if !strings.Contains(tp.Topic, "dispatch") {
				t.Logf("produce to %q (v%d)", tp.Topic, req.Version)
			}
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
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.Clock()), 60*time.Second)
	discarded := strings.Contains(logs.String(), discardedLog)
	t.Logf("store discarded at the in-process restart: %v", discarded)

	// A put of v2, then time moves on; then the partition moves to an
	// empty data dir (a clean stop first).
	env.Put("a", codecs.JobDef{Every: "10s", MisfireGrace: "1h", Payload: []byte(`{"v":2}`)}, t0.Add(12*time.Second))
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
	require.False(t, discarded, "(if discarded, the attack did not apply)")
	for id, ps := range byID {
		for _, p := range ps[1:] {
			require.JSONEq(t, ps[0], p, "fire_id %s went out with two payloads: %v", id, ps)
		}
		require.Len(t, ps, 1, "fire_id %s went out %d times after the loopback failure, though no process crashed: %v", id, len(ps), ps)
	}
}
