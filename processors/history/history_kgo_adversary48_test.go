package history_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chronos-scheduler/chronos/clients"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
)

// adv48Trigger is a 256-byte manual trigger id (codecs.MaxIDLen), i-th.
func adv48Trigger(i int) string {
	p := fmt.Sprintf("t%06d-", i)
	return p + strings.Repeat("a", codecs.MaxIDLen-len(p))
}

// adv48Manual is a manual fire's dispatch event of job with trigger id
// trigger at at, with payload (nil: none).
func adv48Manual(job, trigger string, at time.Time, payload []byte) []byte {
	d := codecs.Dispatch{V: codecs.DispatchVersion, FireID: codecs.TriggeredFireID(job, trigger), JobID: job,
		Trigger: codecs.TriggerManual, TriggerID: trigger, ScheduledAt: at, FiredAt: at, Payload: payload}
	return codecs.AppendDispatch(nil, &d)
}

// adv48TableRecords reads the history table's changelog from the start
// and returns the last value of each key (as a new owner restores it).
func adv48TableRecords(t *testing.T, env *testenv.Env) map[string][]byte {
	t.Helper()
	table := string(env.Layout.HistoryTable())
	c, err := env.Kafka.NewKgo(kgo.ConsumeTopics(table), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer c.Close()
	out := map[string][]byte{}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	for {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			return out
		}
		fs.EachRecord(func(r *kgo.Record) { out[string(r.Key)] = r.Value })
	}
}

// blockTable makes the embedded broker drop (close the connection of)
// every produce request carrying a record of the history table while
// *block is true: the history group's table writes get no
// acknowledgement, everything else is produced.
func blockTable(t *testing.T, env *testenv.Env, block *atomic.Bool) *atomic.Int64 {
	dropped := new(atomic.Int64)
	t.Helper()
	if env.Broker == nil {
		t.Skip("needs the embedded broker")
	}
	c := env.Broker.Cluster()
	table := string(env.Layout.HistoryTable())
	c.ControlKey(int16(kmsg.Produce), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !block.Load() {
			return nil, nil, false
		}
		req := r.(*kmsg.ProduceRequest)
		for _, tp := range req.Topics {
			name := tp.Topic
			if req.Version >= 13 {
				if info := c.TopicIDInfo(tp.TopicID); info != nil {
					name = info.Topic
				}
			}
			if name == table {
				dropped.Add(1)
				return nil, errors.New("adversary48: table write dropped"), true
			}
		}
		return nil, nil, false
	})
	return dropped
}

// TestAdversary48FoldAfterAFailedTableWriteReachesTheChangelog (fixed):
// a fold whose changelog write failed stayed in the local store; the
// partition restarted, consumed the input again, found the fire already
// there, wrote nothing and committed it: the changelog, which a new owner
// restores, never got the fold. The round found it with a record over
// --batch-bytes (--history-fires 1000 with --batch-bytes at its floor, now
// refused by instance.Config.Validate, TestValidateHistoryRecordFitsBatchBytes);
// any failed table write does the same. Now the history's stores close
// settled only when none of the group's writes failed
// (history.Config.Writes): the store is discarded and restored from the
// changelog, and the input consumed again writes the fold there. Here the
// broker drops the table's produce requests until the write fails
// (KgoGokaDeliveryTimeout, shortened), then answers again.
func TestAdversary48FoldAfterAFailedTableWriteReachesTheChangelog(t *testing.T) {
	const job, fires = "big", 10
	defer func(d time.Duration) { clients.KgoGokaDeliveryTimeout = d }(clients.KgoGokaDeliveryTimeout)
	clients.KgoGokaDeliveryTimeout = 2 * time.Second
	env := testenv.New(t, 1)
	var block atomic.Bool
	dropped := blockTable(t, env, &block)
	cfg := env.Config()
	cfg.History.Only = true
	dispatch := string(env.Layout.Dispatch())
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	inst := env.Start(cfg)
	var keys []string
	var vals [][]byte
	for i := range fires {
		keys = append(keys, job)
		vals = append(vals, adv48Manual(job, adv48Trigger(i), t0.Add(time.Duration(i)*time.Second), nil))
	}
	env.ProduceMany(dispatch, keys, vals, t0)
	env.WaitConsumed(string(env.Layout.HistoryGroup()), dispatch, time.Minute)

	block.Store(true)
	last := adv48Trigger(fires)
	env.Produce(dispatch, job, adv48Manual(job, last, t0.Add(fires*time.Second), nil), t0)
	testenv.Eventually(t, time.Minute, func() error {
		if dropped.Load() == 0 {
			return errors.New("no table write dropped yet")
		}
		return nil
	})
	time.Sleep(3 * clients.KgoGokaDeliveryTimeout) // the write fails, the partition restarts
	block.Store(false)
	env.WaitConsumed(string(env.Layout.HistoryGroup()), dispatch, 2*time.Minute)
	inst.Stop()

	// A new owner restores the table from its changelog.
	rec := adv48TableRecords(t, env)[job]
	h, err := codecs.DecodeHistory(rec)
	require.NoError(t, err)
	found := false
	for _, f := range h.Fires {
		found = found || f.Suffix == last
	}
	require.Truef(t, found, "the history group committed the dispatch event of fire %d of job %q, but its changelog (what a new owner restores) "+
		"holds %d fires without it: the fold whose write failed stayed in the old store only (%d table writes dropped)",
		fires+1, job, len(h.Fires), dropped.Load())
	require.Len(t, h.Fires, fires+1)
}

// TestAdversary48HistoryPinsInputsWithinItsProducerBound (fixed): each
// pending goka promise keeps its callback's context, and with it the
// whole input record (a dispatch event with its payload, up to
// --max-payload), so the history producer's unacknowledged records held
// up to 65,536 inputs (~4 GiB at the defaults) while the broker did not
// acknowledge the table writes: 1,200 dispatch events of a 60 KiB payload
// held ~70 MiB past the documented 16 MiB. The producer now holds at most
// clients.KgoGokaBufferedRecords records (1,024), each with its input:
// 3,000 such events hold at most that many inputs.
func TestAdversary48HistoryPinsInputsWithinItsProducerBound(t *testing.T) {
	const jobs, payloadBytes = 3000, 60 << 10
	defer func(d time.Duration) { clients.KgoGokaDeliveryTimeout = d }(clients.KgoGokaDeliveryTimeout)
	clients.KgoGokaDeliveryTimeout = 5 * time.Minute // no write fails while the heap is measured
	held := adv48HeldWhileBlocked(t, jobs, payloadBytes)
	limit := int64(clients.KgoGokaBufferedRecords)*(payloadBytes+2<<10) + 16<<20
	require.LessOrEqualf(t, held, limit, "the history group's unacknowledged table writes held %.1f MiB (at most %d inputs of %d KiB and 16 MiB of records): "+
		"each pending promise keeps its callback's input record", float64(held)/(1<<20), clients.KgoGokaBufferedRecords, payloadBytes>>10)
}

// TestAdversary48HeldHistoryPinsLittleWithoutPayloads is the control of
// the test above: the same 1,200 unacknowledged table writes of inputs
// without payload hold a few MiB at most, so what the test above measures
// is the inputs' payloads.
func TestAdversary48HeldHistoryPinsLittleWithoutPayloads(t *testing.T) {
	held := adv48HeldWhileBlocked(t, 1200, 0)
	require.Less(t, held, int64(8<<20))
}

// adv48HeldWhileBlocked writes jobs dispatch events (one a job) with a
// payload of payloadBytes (0: none) while the history table's writes are
// dropped, and returns the heap they hold until the writes are
// acknowledged.
func adv48HeldWhileBlocked(t *testing.T, jobs, payloadBytes int) int64 {
	env := testenv.New(t, 3)
	var block atomic.Bool
	dropped := blockTable(t, env, &block)
	cfg := env.Config()
	cfg.History.Only = true
	inst := env.Start(cfg)
	defer inst.Stop()
	dispatch := string(env.Layout.Dispatch())
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var payload []byte
	if payloadBytes > 0 {
		payload = []byte(`"` + strings.Repeat("p", payloadBytes-2) + `"`)
	}
	heap := func() uint64 {
		runtime.GC()
		debug.FreeOSMemory()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	block.Store(true)
	for c := 0; c < jobs; c += 100 {
		var keys []string
		var vals [][]byte
		for i := c; i < c+100; i++ {
			id := fmt.Sprintf("job-%05d", i)
			keys = append(keys, id)
			vals = append(vals, adv48Manual(id, "m1", t0, payload))
		}
		env.ProduceMany(dispatch, keys, vals, t0)
	}
	// wait until the group has folded everything (the heap stops moving)
	var blocked uint64
	prev := heap()
	for range 30 {
		time.Sleep(time.Second)
		blocked = heap()
		if blocked > prev-prev/50 && blocked < prev+prev/50 {
			break
		}
		prev = blocked
	}
	time.Sleep(2 * time.Second)
	blocked = heap()
	require.Positive(t, dropped.Load(), "table writes were dropped")
	block.Store(false)
	env.WaitConsumed(string(env.Layout.HistoryGroup()), dispatch, 2*time.Minute)
	time.Sleep(2 * time.Second)
	released := heap()
	held := int64(blocked) - int64(released)
	t.Logf("heap with the table writes unacknowledged %.1f MiB, after they were acknowledged %.1f MiB: %.1f MiB held",
		float64(blocked)/(1<<20), float64(released)/(1<<20), float64(held)/(1<<20))
	return held
}

// TestAdversary48HistoryShutdownWhileTableWritesUnanswered (fixed): while
// the broker did not answer the history table's writes, franz-go never
// failed them (idempotent producer, requests written without response),
// the producer's buffer filled, and the next SetValue blocked the
// partition's callback inside kgo's Produce. Stopping the instance then
// never finished: goka stops a partition only after its callback returns,
// and closes the producer (which would unblock Produce) only after its
// partitions have stopped. The producer is no longer idempotent, so an
// unanswered record fails after KgoGokaDeliveryTimeout (shortened here),
// which frees the callback.
func TestAdversary48HistoryShutdownWhileTableWritesUnanswered(t *testing.T) {
	const job = "grows"
	defer func(d time.Duration) { clients.KgoGokaDeliveryTimeout = d }(clients.KgoGokaDeliveryTimeout)
	clients.KgoGokaDeliveryTimeout = 10 * time.Second
	env := testenv.New(t, 1)
	var block atomic.Bool
	dropped := blockTable(t, env, &block)
	cfg := env.Config()
	cfg.History.Only, cfg.History.Fires = true, 1000
	inst := env.Start(cfg)
	dispatch := string(env.Layout.Dispatch())
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	block.Store(true)
	// One job's record grows ~290 bytes a fire: 400 fires write ~23 MiB
	// of table records in all, more than the producer's 16 MiB.
	var keys []string
	var vals [][]byte
	for i := range 400 {
		keys = append(keys, job)
		vals = append(vals, adv48Manual(job, adv48Trigger(i), t0.Add(time.Duration(i)*time.Second), nil))
	}
	env.ProduceMany(dispatch, keys, vals, t0)

	blockedInProduce := func() bool {
		buf := make([]byte, 16<<20)
		s := string(buf[:runtime.Stack(buf, true)])
		for _, g := range strings.Split(s, "\n\n") {
			if strings.Contains(g, "kgo.(*Client).produce") && strings.Contains(g, "history.(*History).fold") {
				return true
			}
		}
		return false
	}
	testenv.Eventually(t, time.Minute, func() error {
		if !blockedInProduce() {
			return errors.New("the history callback is not blocked in Produce yet")
		}
		return nil
	})
	stopped := make(chan struct{})
	start := time.Now()
	go func() { inst.Stop(); close(stopped) }()
	const wait = 60 * time.Second
	select {
	case <-stopped:
		t.Logf("stopped after %s", time.Since(start))
		return
	case <-time.After(wait):
	}
	still := blockedInProduce()
	t.Logf("table write requests dropped: %d", dropped.Load())
	// let the writes through so the test can end
	block.Store(false)
	select {
	case <-stopped:
	case <-time.After(3 * time.Minute):
	}
	t.Fatalf("stopping the instance had not finished %s after it began (the history callback still blocked in kgo's Produce: %v); "+
		"it finished %s after the broker answered the table writes again", wait, still, time.Since(start).Round(time.Second)-wait)
}
