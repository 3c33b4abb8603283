package heldwrites_test

// Adversary round 54: inputs.Policy's bound on rejects in flight
// (MaxRejectsInFlight, MaxRejectBytesInFlight) and the decoder's header
// byte cap (sarama.MaxRecordHeaderBytes), attacked on real instances on
// the embedded broker.
//
// Found: a Reject past the bound waited in its callback until an earlier
// reject ended, and one Policy serves every group: 2,500 bad results,
// rejected by the history group while chronos-rejects was missing (each
// reject dropped after 3 tries of 5 s), delayed the scheduler's fires
// behind one bad command by 9.9 s (TestAdversary54ResultsFloodDelaysFires).
// Dropping at the bound without waiting then lost 68 of 20,000 rejects of
// a burst on a working topic (TestAdversary54RejectStreamThroughput). Now
// a Reject waits for room only while rejects are ending, and drops its
// input (rejects_backlog) once none has ended for inputs.RejectStall (1 s):
// 0.25-0.30 s to the fires, and all 20,000 rejects written. Since round 55
// the bound is per group, the stall 5 s, and rejects have their own client.

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/testenv/brokerfaults"
)

// adv54Stall holds every produce request that writes topic while armed,
// until released (all held requests at once).
type adv54Stall struct {
	armed   atomic.Bool
	held    atomic.Int64
	release chan struct{}
	once    sync.Once
}

func (s *adv54Stall) Release() { s.once.Do(func() { close(s.release) }) }

func adv54InstallStall(t *testing.T, env *testenv.Env, topic string) *adv54Stall {
	s := &adv54Stall{release: make(chan struct{})}
	t.Cleanup(s.Release)
	c := env.Broker.Cluster()
	c.ControlKey(int16(kmsg.Produce), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !s.armed.Load() {
			return nil, nil, false
		}
		req := r.(*kmsg.ProduceRequest)
		for _, tp := range req.Topics {
			if brokerfaults.TopicName(c, tp) == topic {
				s.held.Add(1)
				c.SleepControl(func() { <-s.release })
				return nil, nil, false
			}
		}
		return nil, nil, false
	})
	return s
}

// adv54Fires ticks past the puts' fire time and returns how often each
// valid job fired.
func adv54Fires(t *testing.T, env *testenv.Env, dispatch *testenv.Collector, ids []string, at time.Time) map[string]int {
	env.Tick(at)
	testenv.Eventually(t, 60*time.Second, func() error {
		if n := dispatch.Len(); n < len(ids) {
			return fmt.Errorf("%d of %d fires dispatched", n, len(ids))
		}
		return nil
	})
	time.Sleep(500 * time.Millisecond) // duplicates, if any, arrive
	got := map[string]int{}
	for _, d := range dispatch.Dispatches(t) {
		got[d.JobID]++
	}
	return got
}

// (d) A stream of ordinary rejects on a working rejects topic: 20,000
// malformed commands with 500 valid puts interleaved. Every malformed
// command is rejected (20,000 rejects) and committed, every put applied
// and fired exactly once, within a reasonable time.
func TestAdversary54RejectStreamThroughput(t *testing.T) {
	env := testenv.New(t, 4)
	rejects := env.Collect(string(env.Layout.Rejects()))
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	env.Start(env.Config())
	t0 := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	jobs := string(env.Layout.Jobs())
	const bad, good = 20000, 500
	var ids []string
	start := time.Now()
	var recs []*kgo.Record
	g := 0
	for i := 0; i < bad; i++ {
		recs = append(recs, &kgo.Record{Topic: jobs, Key: []byte(fmt.Sprintf("bad-%05d", i)), Value: []byte("not json"), Timestamp: t0})
		if i%(bad/good) == 0 && g < good {
			id := fmt.Sprintf("good-%04d", g)
			g++
			ids = append(ids, id)
			recs = append(recs, &kgo.Record{Topic: jobs, Key: []byte(id), Value: testenv.PutCommand(id, codecs.JobDef{At: t0.Add(time.Minute).Format(time.RFC3339)}), Timestamp: t0})
		}
		if len(recs) >= 500 {
			require.NoError(t, env.Client.ProduceSync(context.Background(), recs...).FirstErr())
			recs = recs[:0]
		}
	}
	if len(recs) > 0 {
		require.NoError(t, env.Client.ProduceSync(context.Background(), recs...).FirstErr())
	}
	produced := time.Since(start)
	env.WaitApplied()
	applied := time.Since(start)
	rejects.WaitLen(t, bad, 60*time.Second)
	got := adv54Fires(t, env, dispatch, ids, t0.Add(2*time.Minute))
	t.Logf("%d malformed commands + %d puts: produced in %s, all committed after %s, %d rejects, %d distinct jobs fired",
		bad, good, produced.Round(time.Millisecond), applied.Round(time.Millisecond), rejects.Len(), len(got))
	require.Equal(t, bad, rejects.Len(), "every malformed command rejected once")
	require.Len(t, got, good)
	for _, id := range ids {
		require.Equal(t, 1, got[id], "job %s fired %d times", id, got[id])
	}
	require.Less(t, applied, 90*time.Second, "20,000 rejects took too long")
}

// (a) The rejects topic stalls (every produce to it held) while malformed
// records flood three groups' inputs (chronos-jobs: the scheduler and
// the history; chronos-bucket-triggers: the router; chronos-results: the
// history): more than MaxRejectsInFlight rejects, so callbacks of several
// groups wait in Policy.waitRoom. Valid puts follow. After the stall ends
// (or its rejects are dropped), every group catches up, every put fires
// exactly once, and a second flood after it goes through as well (no
// rejects left counted in flight).
func TestAdversary54RejectStallManyGroups(t *testing.T) {
	env := testenv.New(t, 4)
	if env.Broker == nil {
		t.Skip("needs the embedded broker's request hooks")
	}
	stall := adv54InstallStall(t, env, string(env.Layout.Rejects()))
	rejects := env.Collect(string(env.Layout.Rejects()))
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	env.Start(env.Config())
	t0 := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	env.Put("warm", codecs.JobDef{At: t0.Add(time.Hour).Format(time.RFC3339)}, t0)
	env.WaitApplied()

	jobs := string(env.Layout.Jobs())
	triggers := string(env.Layout.BucketTriggers())
	results := string(env.Layout.Results())
	var ids []string
	flood := func(round, bad int) {
		var recs []*kgo.Record
		for i := 0; i < bad; i++ {
			recs = append(recs,
				&kgo.Record{Topic: jobs, Key: []byte(fmt.Sprintf("r%d-bad-%05d", round, i)), Value: []byte("not json"), Timestamp: t0})
			if i%4 == 0 {
				recs = append(recs,
					&kgo.Record{Topic: triggers, Key: []byte(fmt.Sprintf("r%d-bt-%05d", round, i)), Value: []byte("x"), Timestamp: t0},
					&kgo.Record{Topic: results, Key: []byte(fmt.Sprintf("r%d-res-%05d", round, i)), Value: []byte("x"), Timestamp: t0})
			}
			if i%50 == 0 {
				id := fmt.Sprintf("r%d-good-%05d", round, i)
				ids = append(ids, id)
				recs = append(recs, &kgo.Record{Topic: jobs, Key: []byte(id), Value: testenv.PutCommand(id, codecs.JobDef{At: t0.Add(time.Minute).Format(time.RFC3339)}), Timestamp: t0})
			}
			if len(recs) >= 400 {
				require.NoError(t, env.Client.ProduceSync(context.Background(), recs...).FirstErr())
				recs = recs[:0]
			}
		}
		if len(recs) > 0 {
			require.NoError(t, env.Client.ProduceSync(context.Background(), recs...).FirstErr())
		}
	}
	stall.armed.Store(true)
	const bad = 3000
	flood(1, bad)
	time.Sleep(4 * time.Second) // callbacks are now waiting for room
	heldBefore := stall.held.Load()
	stall.armed.Store(false)
	stall.Release()
	start := time.Now()
	env.WaitApplied()
	env.WaitConsumed(string(env.Layout.RouterGroup()), triggers, time.Minute)
	env.WaitConsumed(string(env.Layout.HistoryGroup()), results, time.Minute)
	env.WaitConsumed(string(env.Layout.HistoryGroup()), jobs, time.Minute)
	t.Logf("round 1: %d produce requests to the rejects topic held; every group caught up %s after the release; %d rejects written",
		heldBefore, time.Since(start).Round(time.Millisecond), rejects.Len())

	// round 2 on a working rejects topic: all of it rejected
	before := rejects.Len()
	flood(2, 1500)
	start = time.Now()
	env.WaitApplied()
	env.WaitConsumed(string(env.Layout.RouterGroup()), triggers, time.Minute)
	env.WaitConsumed(string(env.Layout.HistoryGroup()), results, time.Minute)
	want2 := 1500 + 2*375
	testenv.Eventually(t, 60*time.Second, func() error {
		if n := rejects.Len() - before; n < want2 {
			return fmt.Errorf("round 2: %d of %d rejects", n, want2)
		}
		return nil
	})
	t.Logf("round 2: caught up after %s, %d rejects", time.Since(start).Round(time.Millisecond), rejects.Len()-before)

	got := adv54Fires(t, env, dispatch, ids, t0.Add(2*time.Minute))
	for _, id := range ids {
		require.Equal(t, 1, got[id], "job %s fired %d times", id, got[id])
	}
}

// (c) The header byte cap at its edges on chronos-jobs: a put whose
// header keys and values total exactly 16,384 bytes is applied; one byte
// more is rejected (too_many_headers); 64 headers with null values are
// applied; many small headers summing past the cap are rejected; a put
// with the longest actor name a token may have (64) and the bulk header
// shape Chronos writes are applied. The reject of an over-cap record
// stays small (its sample does not carry the headers).
func TestAdversary54HeaderByteCapEdges(t *testing.T) {
	env := testenv.New(t, 1)
	rejects := env.Collect(string(env.Layout.Rejects()))
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	env.Start(env.Config())
	t0 := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	jobs := string(env.Layout.Jobs())
	def := codecs.JobDef{At: t0.Add(time.Minute).Format(time.RFC3339)}
	put := func(id string, hs []kgo.RecordHeader) *kgo.Record {
		return &kgo.Record{Topic: jobs, Key: []byte(id), Value: testenv.PutCommand(id, def), Timestamp: t0, Headers: hs}
	}
	exact := func(total int) []kgo.RecordHeader {
		// one header "pad" whose key+value is total bytes
		return []kgo.RecordHeader{{Key: "pad", Value: bytes.Repeat([]byte("v"), total-3)}}
	}
	small := func(n, each int) []kgo.RecordHeader {
		hs := make([]kgo.RecordHeader, n)
		for i := range hs {
			k := fmt.Sprintf("h%02d", i)
			hs[i] = kgo.RecordHeader{Key: k, Value: bytes.Repeat([]byte("x"), each-len(k))}
		}
		return hs
	}
	nulls := make([]kgo.RecordHeader, codecs.MaxHeaders)
	for i := range nulls {
		nulls[i] = kgo.RecordHeader{Key: fmt.Sprintf("n%02d", i)}
	}
	// the headers Chronos writes itself, at their longest
	actor := strings.Repeat("a", 64)
	applied := map[string][]kgo.RecordHeader{
		"exact-16384":  exact(codecs.MaxHeaderBytes),
		"nulls-64":     nulls,
		"small-64x256": small(64, 256), // 64 × 256 = 16,384 exactly
		"actor-64":     {{Key: codecs.ActorHeader, Value: []byte(actor)}},
		"actor-and-traceparent": {{Key: codecs.ActorHeader, Value: []byte(actor)},
			{Key: "traceparent", Value: []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")}},
	}
	rejected := map[string][]kgo.RecordHeader{
		"exact-16385":    exact(codecs.MaxHeaderBytes + 1),
		"small-64x257":   small(64, 257),
		"small-3-over":   {{Key: "a", Value: bytes.Repeat([]byte("x"), 8000)}, {Key: "b", Value: bytes.Repeat([]byte("x"), 8000)}, {Key: "c", Value: bytes.Repeat([]byte("x"), 400)}},
		"huge-then-tiny": {{Key: "big", Value: bytes.Repeat([]byte("x"), 900<<10)}, {Key: codecs.ActorHeader, Value: []byte("me")}},
		"dup-key-16k":    {{Key: "dup", Value: bytes.Repeat([]byte("x"), 9000)}, {Key: "dup", Value: bytes.Repeat([]byte("y"), 9000)}},
	}
	var recs []*kgo.Record
	var ids []string
	for id, hs := range applied {
		ids = append(ids, id)
		recs = append(recs, put(id, hs))
	}
	for id, hs := range rejected {
		recs = append(recs, put(id, hs))
	}
	for _, r := range recs {
		require.NoError(t, env.Client.ProduceSync(context.Background(), r).FirstErr(), "produce %s", r.Key)
	}
	env.WaitApplied()
	rejects.WaitLen(t, len(rejected), 30*time.Second)
	time.Sleep(300 * time.Millisecond)
	gotRej := map[string]string{}
	maxRej := 0
	for _, r := range rejects.Records() {
		rj, err := codecs.DecodeReject(r.Value)
		require.NoError(t, err)
		gotRej[string(rj.Key)] = rj.Code
		maxRej = max(maxRej, len(r.Value)+len(r.Key))
	}
	fires := adv54Fires(t, env, dispatch, ids, t0.Add(2*time.Minute))
	t.Logf("rejects %v (largest %d B), fired %v", gotRej, maxRej, fires)
	for id := range rejected {
		require.Equal(t, codecs.CodeTooManyHeaders, gotRej[id], "%s not rejected too_many_headers", id)
	}
	for id := range applied {
		require.Empty(t, gotRej[id], "%s rejected", id)
		require.Equal(t, 1, fires[id], "%s fired %d times", id, fires[id])
	}
	require.Less(t, maxRej, 16<<10, "a reject carries the headers it rejected")
}

// (a) Cross-group head-of-line through the shared Policy: the rejects
// topic stops answering (every produce to it held, as a partition leader
// that hangs), and workers write malformed results to chronos-results
// (the history rejects them: more than MaxRejectsInFlight). The scheduler
// then meets one malformed command on each partition of chronos-jobs; its
// reject waits for room behind the history's, in the scheduler's callback,
// and the scheduler's partitions process nothing else meanwhile: ticks'
// shard triggers wait too, so a due fire is late by at least one
// round of dropped rejects (3 tries of 5 s). Before d95f717 a reject never
// blocked its callback.
func TestAdversary54ResultsFloodDelaysFires(t *testing.T) {
	t.Run("control without results", func(t *testing.T) { adv54DelayedFires(t, 0, false) })
	t.Run("2500 malformed results", func(t *testing.T) { adv54DelayedFires(t, 2500, true) })
}

func adv54DelayedFires(t *testing.T, bad int, fail bool) {
	env := testenv.New(t, 2)
	if env.Broker == nil {
		t.Skip("needs the embedded broker's request hooks")
	}
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	inst := env.Start(env.Config())
	t0 := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	env.Put("due-0", codecs.JobDef{At: t0.Add(time.Minute).Format(time.RFC3339)}, t0)
	env.Put("due-1", codecs.JobDef{At: t0.Add(time.Minute).Format(time.RFC3339)}, t0)
	env.WaitApplied()

	// chronos-rejects goes missing: each reject is tried 3 times (5 s
	// each) and dropped; nothing else the client writes is held
	_, err := kadm.NewClient(env.Client).DeleteTopics(context.Background(), string(env.Layout.Rejects()))
	require.NoError(t, err)
	results := string(env.Layout.Results())
	jobs := string(env.Layout.Jobs())
	var recs []*kgo.Record
	for i := 0; i < bad; i++ {
		recs = append(recs, &kgo.Record{Topic: results, Key: []byte(fmt.Sprintf("res-%05d", i)), Value: []byte("x"), Timestamp: t0})
		if len(recs) == 500 {
			require.NoError(t, env.Client.ProduceSync(context.Background(), recs...).FirstErr())
			recs = recs[:0]
		}
	}
	time.Sleep(time.Second) // the history's rejects fill the room
	for i := 0; i < 8; i++ {
		recs = append(recs, &kgo.Record{Topic: jobs, Key: []byte(fmt.Sprintf("cmd-%d", i)), Value: []byte("not json"), Timestamp: t0})
	}
	require.NoError(t, env.Client.ProduceSync(context.Background(), recs...).FirstErr())
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	env.Tick(t0.Add(2 * time.Minute))
	deadline := time.Now().Add(40 * time.Second)
	for dispatch.Len() < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	late := time.Since(start)
	n := dispatch.Len()
	t.Logf("%d malformed results%s: %d of 2 due fires dispatched %s after the tick (chronos-rejects missing)",
		bad, "", n, late.Round(time.Millisecond))
	_ = inst
	if !fail {
		require.Less(t, late, 5*time.Second, "the control's fires were late")
		return
	}
	require.Less(t, late, 5*time.Second,
		"malformed results on chronos-results held the scheduler's fires %s: the scheduler's reject waited for room behind the history's", late.Round(time.Millisecond))
}
