package heldwrites_test

// Adversary round 55: inputs.Policy's stall check (RejectStall) on real
// instances on the embedded broker.
//
// Found: rejects shared the instance's franz-go client with the dispatch
// events, so a reject the broker held stopped every dispatch (no fire in
// 15 s); and a rejects topic answering in 1.2 s lost 1,976 of 3,000
// rejects to the 1-s stall. Fixed in 1f80662: rejects have their own
// client, and the stall is 5 s, per group, unless the topic refused the
// group's last reject (21 ms to the fires; 3,000 of 3,000 written).

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/testenv/brokerfaults"
)

// adv55Slow answers every produce request that writes topic after delay
// while armed (a slow but working rejects topic).
func adv55Slow(t *testing.T, env *testenv.Env, topic string, delay time.Duration) *atomic.Bool {
	var armed atomic.Bool
	c := env.Broker.Cluster()
	c.ControlKey(int16(kmsg.Produce), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !armed.Load() {
			return nil, nil, false
		}
		for _, tp := range r.(*kmsg.ProduceRequest).Topics {
			if brokerfaults.TopicName(c, tp) == topic {
				c.SleepControl(func() { time.Sleep(delay) })
				return nil, nil, false
			}
		}
		return nil, nil, false
	})
	return &armed
}

// TestAdversary55SlowRejectsTopicLosesRejects (idea 2, end to end): the
// rejects topic answers every produce, each after 1.2 s; 3,000 malformed
// commands arrive on chronos-jobs. Promise: rejects are dropped only when
// the topic is missing or stalled, so all 3,000 are written.
func TestAdversary55SlowRejectsTopicLosesRejects(t *testing.T) {
	env := testenv.New(t, 4)
	if env.Broker == nil {
		t.Skip("needs the embedded broker's request hooks")
	}
	armed := adv55Slow(t, env, string(env.Layout.Rejects()), 1200*time.Millisecond)
	rejects := env.Collect(string(env.Layout.Rejects()))
	env.Start(env.Config())
	t0 := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	env.Put("warm", codecs.JobDef{At: t0.Add(time.Hour).Format(time.RFC3339)}, t0)
	env.WaitApplied()
	armed.Store(true)
	jobs := string(env.Layout.Jobs())
	const bad = 3000
	var recs []*kgo.Record
	for i := 0; i < bad; i++ {
		recs = append(recs, &kgo.Record{Topic: jobs, Key: []byte(fmt.Sprintf("bad-%05d", i)), Value: []byte("not json"), Timestamp: t0})
	}
	start := time.Now()
	require.NoError(t, env.Client.ProduceSync(context.Background(), recs...).FirstErr())
	env.WaitApplied()
	applied := time.Since(start)
	time.Sleep(3 * time.Second) // the last rejects are written
	armed.Store(false)
	n := rejects.Len()
	t.Logf("rejects topic answering in 1.2 s: %d malformed commands committed after %s, %d rejects written, %d lost",
		bad, applied.Round(time.Millisecond), n, bad-n)
	require.Equal(t, bad, n, "rejects lost on a rejects topic that answers every produce (in 1.2 s)")
}

// TestAdversary55StalledRejectsDelayFires (idea 6): chronos-rejects
// stalls (every produce to it held, not missing); 2,500 malformed results
// fill the Policy; the scheduler meets one malformed command on each
// partition of chronos-jobs. How late are due fires?
func TestAdversary55StalledRejectsDelayFires(t *testing.T) {
	t.Run("control stall without bad input", func(t *testing.T) { adv55StalledFires(t, 0, 0) })
	t.Run("one malformed command", func(t *testing.T) { adv55StalledFires(t, 0, 1) })
	t.Run("2500 results and 8 commands", func(t *testing.T) { adv55StalledFires(t, 2500, 8) })
}

func adv55StalledFires(t *testing.T, bad, cmds int) {
	env := testenv.New(t, 2)
	if env.Broker == nil {
		t.Skip("needs the embedded broker's request hooks")
	}
	stall := adv54InstallStall(t, env, string(env.Layout.Rejects()))
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	env.Start(env.Config())
	t0 := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	env.Put("due-0", codecs.JobDef{At: t0.Add(time.Minute).Format(time.RFC3339)}, t0)
	env.Put("due-1", codecs.JobDef{At: t0.Add(time.Minute).Format(time.RFC3339)}, t0)
	env.WaitApplied()
	stall.armed.Store(true)
	results := string(env.Layout.Results())
	jobs := string(env.Layout.Jobs())
	var recs []*kgo.Record
	for i := 0; i < bad; i++ {
		recs = append(recs, &kgo.Record{Topic: results, Key: []byte(fmt.Sprintf("res-%05d", i)), Value: []byte("x"), Timestamp: t0})
	}
	if len(recs) > 0 {
		require.NoError(t, env.Client.ProduceSync(context.Background(), recs...).FirstErr())
	}
	time.Sleep(time.Second)
	recs = recs[:0]
	for i := 0; i < cmds; i++ {
		recs = append(recs, &kgo.Record{Topic: jobs, Key: []byte(fmt.Sprintf("cmd-%d", i)), Value: []byte("not json"), Timestamp: t0})
	}
	if len(recs) > 0 {
		require.NoError(t, env.Client.ProduceSync(context.Background(), recs...).FirstErr())
	}
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	env.Tick(t0.Add(2 * time.Minute))
	deadline := time.Now().Add(15 * time.Second)
	for dispatch.Len() < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	late := time.Since(start)
	t.Logf("chronos-rejects stalled, %d malformed results, %d malformed commands: %d of 2 due fires dispatched %s after the tick; %d produce requests held",
		bad, cmds, dispatch.Len(), late.Round(time.Millisecond), stall.held.Load())
	stall.armed.Store(false)
	stall.Release()
	require.Equal(t, 2, dispatch.Len())
	require.Less(t, late, 3*time.Second, "fires held by bad input on other topics while chronos-rejects stalls")
}
