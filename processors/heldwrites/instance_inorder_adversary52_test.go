package heldwrites_test

// Adversary round 52: the processors' InOrder producer and CommitOrder
// barriers (instance.supervise) on a real instance, with a scheduler
// table write held by the broker at a clean stop, and with the scheduler
// table's writes failing for a few seconds.

import (
	"bytes"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/testenv/brokerfaults"
	"github.com/chronos-scheduler/chronos/testenv/timebound"
)

type adv52Logs struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *adv52Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *adv52Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// adv52Lines returns the log lines containing s (at most n).
func adv52Lines(logs string, s string, n int) []string {
	var out []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
			if len(out) == n {
				break
			}
		}
	}
	return out
}

// adv52Control is a produce hook on the embedded broker for one topic:
// hold (SleepControl until release) the first request carrying marker in
// a batch of topic once armed; fail (NOT_ENOUGH_REPLICAS, the request's
// other partitions REQUEST_TIMED_OUT) every request with a batch of topic
// while poison is set.
type adv52Control struct {
	armed, held, poison atomic.Bool
	failedReqs          atomic.Int64
	release             chan struct{}
	once                sync.Once
}

func (a *adv52Control) Release() { a.once.Do(func() { close(a.release) }) }

func adv52Install(t *testing.T, env *testenv.Env, topic, marker string) *adv52Control {
	a := &adv52Control{release: make(chan struct{})}
	t.Cleanup(a.Release)
	c := env.Broker.Cluster()
	c.ControlKey(int16(kmsg.Produce), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := r.(*kmsg.ProduceRequest)
		name := func(tp kmsg.ProduceRequestTopic) string { return brokerfaults.TopicName(c, tp) }
		hasTopic, hasMarker := false, false
		for _, tp := range req.Topics {
			if name(tp) != topic {
				continue
			}
			hasTopic = true
			for _, p := range tp.Partitions {
				if marker != "" && bytes.Contains(p.Records, []byte(marker)) {
					hasMarker = true
				}
			}
		}
		if hasMarker && a.armed.Load() && a.held.CompareAndSwap(false, true) {
			c.SleepControl(func() { <-a.release })
			return nil, nil, false
		}
		if !hasTopic || !a.poison.Load() {
			return nil, nil, false
		}
		a.failedReqs.Add(1)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, tp := range req.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic, rt.TopicID = tp.Topic, tp.TopicID
			for _, p := range tp.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = kerr.RequestTimedOut.Code
				if name(tp) == topic {
					rp.ErrorCode = kerr.NotEnoughReplicas.Code
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
	return a
}

// adv52Fires checks the dispatches against the ticks sent so far: every
// fire due (scheduled at or before now) of want is there, and none is
// scheduled after now (early).
type adv52Want map[string]time.Time // fire id -> scheduled at

func adv52Check(t *testing.T, dispatch *testenv.Collector, want adv52Want, now time.Time, timeout time.Duration) {
	t.Helper()
	testenv.Eventually(t, timeout, func() error {
		got := map[string]bool{}
		for _, d := range dispatch.Dispatches(t) {
			if d.ScheduledAt.After(now) {
				t.Fatalf("fire %s (scheduled %s) dispatched early: the clock is at %s", d.FireID, d.ScheduledAt.Format(time.RFC3339), now.Format(time.RFC3339))
			}
			got[d.FireID] = true
		}
		var missing []string
		for id, at := range want {
			if !at.After(now) && !got[id] {
				missing = append(missing, id)
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			job := strings.SplitN(missing[0], "@", 2)[0]
			var of []string
			for _, d := range dispatch.Dispatches(t) {
				if d.JobID == job {
					of = append(of, fmt.Sprintf("%s(missed %d, fired %s)", d.FireID, d.Missed, d.FiredAt.Format(time.RFC3339)))
				}
			}
			return fmt.Errorf("at %s: %d fires missing, e.g. %v; %s's dispatches: %v", now.Format(time.RFC3339), len(missing), missing[:min(5, len(missing))], job, of)
		}
		return nil
	})
}

// TestAdversary52CleanStopWhileTableWriteHeld: a clean stop of a real
// instance while one scheduler table write (a put's) is held by the
// broker finishes once the broker answers (bounded), leaves its stores
// settled (the next start does not discard them), and the restarted
// instance fires every job at its times, none early.
func TestAdversary52CleanStopWhileTableWriteHeld(t *testing.T) {
	env := testenv.New(t, 2)
	if env.Broker == nil {
		t.Skip("needs the embedded broker's request hooks")
	}
	const marker = "adv52heldjob"
	ctl := adv52Install(t, env, string(env.Layout.SchedulerTable()), marker)
	logs := &adv52Logs{}
	cfg := env.Config()
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	first := env.Start(cfg)
	t0 := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	want := adv52Want{}
	putAt := func(id string, at time.Time) {
		env.Put(id, codecs.JobDef{At: at.Format(time.RFC3339)}, t0)
		want[codecs.ScheduledFireID(id, at)] = at
	}
	putEvery := func(id string) {
		env.Put(id, codecs.JobDef{Every: "10s", MisfireGrace: "10m"}, t0)
		for s := 1; s <= 4; s++ {
			at := t0.Add(time.Duration(s) * 10 * time.Second)
			want[codecs.ScheduledFireID(id, at)] = at
		}
	}
	for i := 0; i < 10; i++ {
		putAt(fmt.Sprintf("before-at-%02d", i), t0.Add(time.Duration(5+i*3)*time.Second))
		putEvery(fmt.Sprintf("before-ev-%02d", i))
	}
	env.WaitApplied()
	env.Tick(t0.Add(10 * time.Second))
	adv52Check(t, dispatch, want, t0.Add(10*time.Second), 30*time.Second)

	ctl.armed.Store(true)
	putAt(marker, t0.Add(25*time.Second))
	testenv.Eventually(t, 10*time.Second, func() error {
		if !ctl.held.Load() {
			return fmt.Errorf("the put's table write is not held yet")
		}
		return nil
	})
	// inputs behind the held write: puts (table writes queued behind it)
	for i := 0; i < 5; i++ {
		putAt(fmt.Sprintf("behind-%02d", i), t0.Add(time.Duration(21+i)*time.Second))
	}
	time.Sleep(500 * time.Millisecond)

	stopped := make(chan time.Duration, 1)
	start := time.Now()
	go func() {
		first.Stop()
		stopped <- time.Since(start)
	}()
	time.Sleep(2 * time.Second)
	ctl.Release()
	var took time.Duration
	select {
	case took = <-stopped:
	case <-time.After(timebound.Scaled(30 * time.Second)):
		t.Fatalf("the clean stop did not finish within 30 s of its start (the held write was released after 2 s)")
	}
	t.Logf("clean stop took %s (held write released after 2 s)", took)
	stopLogs := logs.String()

	second := env.Start(cfg)
	defer second.Stop()
	for i := 0; i < 3; i++ {
		putAt(fmt.Sprintf("after-%02d", i), t0.Add(time.Duration(31+i)*time.Second))
	}
	env.WaitApplied()
	for s := 2; s <= 4; s++ {
		now := t0.Add(time.Duration(s) * 10 * time.Second)
		env.Tick(now)
		adv52Check(t, dispatch, want, now, 40*time.Second)
	}
	all := logs.String()
	after := all[len(stopLogs):]
	unsettled := adv52Lines(after, "was not closed settled", 4)
	require.Empty(t, unsettled, "after a clean stop (the held write acknowledged before it ended) the next start discarded stores: %v; at the stop: %v",
		unsettled, adv52Lines(stopLogs, "changelog may not hold", 4))
}

// TestAdversary52SchedulerTableWritesFailForAWhile: the scheduler table's
// writes fail (NOT_ENOUGH_REPLICAS, sarama's retries spent) for a few
// seconds while puts and ticks arrive: the scheduler group stops,
// restarts with a new producer, restores, and every job put before,
// during and after fires at each of its times, none early.
func TestAdversary52SchedulerTableWritesFailForAWhile(t *testing.T) { adv52FailRun(t, true) }

// TestAdversary52SchedulerTableControl is the same run without a failure:
// the expectations are the scheduler's semantics.
func TestAdversary52SchedulerTableControl(t *testing.T) { adv52FailRun(t, false) }

func adv52FailRun(t *testing.T, fail bool) {
	env := testenv.New(t, 2)
	if env.Broker == nil {
		t.Skip("needs the embedded broker's request hooks")
	}
	ctl := adv52Install(t, env, string(env.Layout.SchedulerTable()), "")
	logs := &adv52Logs{}
	cfg := env.Config()
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	t.Cleanup(func() {
		t.Logf("restarts: %v", adv52Lines(logs.String(), "processor stopped; restarting", 6))
		t.Logf("discards: %v", adv52Lines(logs.String(), "not closed settled", 6))
	})
	inst := env.Start(cfg)
	defer inst.Stop()
	t0 := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	want := adv52Want{}
	putAt := func(id string, at time.Time) {
		env.Put(id, codecs.JobDef{At: at.Format(time.RFC3339)}, t0)
		want[codecs.ScheduledFireID(id, at)] = at
	}
	// from: the first fire expected (a job put while the clock is at c
	// fires from its first time after c; a fire at c itself is allowed)
	putEvery := func(id string, from int) {
		env.Put(id, codecs.JobDef{Every: "10s", MisfireGrace: "10m"}, t0)
		for s := from; s <= 5; s++ {
			at := t0.Add(time.Duration(s) * 10 * time.Second)
			want[codecs.ScheduledFireID(id, at)] = at
		}
	}
	for i := 0; i < 10; i++ {
		putAt(fmt.Sprintf("before-at-%02d", i), t0.Add(time.Duration(5+i*3)*time.Second))
		putEvery(fmt.Sprintf("before-ev-%02d", i), 1)
	}
	env.WaitApplied()
	env.Tick(t0.Add(10 * time.Second))
	adv52Check(t, dispatch, want, t0.Add(10*time.Second), 30*time.Second)

	ctl.poison.Store(fail)
	for i := 0; i < 6; i++ {
		putAt(fmt.Sprintf("during-at-%02d", i), t0.Add(time.Duration(22+i*3)*time.Second))
		if i < 3 {
			putEvery(fmt.Sprintf("during-ev-%02d", i), 3) // applied maybe only after the tick at +20 (the failure delays it)
		}
		if i == 3 {
			env.Tick(t0.Add(20 * time.Second))
		}
		time.Sleep(400 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	ctl.poison.Store(false)
	t.Logf("%d produce requests with a scheduler table batch failed", ctl.failedReqs.Load())
	if fail {
		require.NotZero(t, ctl.failedReqs.Load(), "no table write was failed")
	}
	for i := 0; i < 3; i++ {
		putAt(fmt.Sprintf("after-%02d", i), t0.Add(time.Duration(41+i)*time.Second))
	}
	env.WaitApplied()
	for s := 2; s <= 5; s++ {
		now := t0.Add(time.Duration(s) * 10 * time.Second)
		env.Tick(now)
		adv52Check(t, dispatch, want, now, 40*time.Second)
	}
}
