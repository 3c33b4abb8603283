package history_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/testenv/brokerfaults"
	"github.com/chronos-scheduler/chronos/testenv/timebound"
)

// adv50Manual is a manual fire's dispatch event of job with trigger id
// trigger at at.
func adv50Manual(job, trigger string, at time.Time) []byte {
	d := codecs.Dispatch{V: codecs.DispatchVersion, FireID: codecs.TriggeredFireID(job, trigger), JobID: job,
		Trigger: codecs.TriggerManual, TriggerID: trigger, ScheduledAt: at, FiredAt: at}
	return codecs.AppendDispatch(nil, &d)
}

// adv50Committed is the group's committed offset of topic/0 (-1: none).
func adv50Committed(env *testenv.Env, group, topic string) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(env.Client).FetchOffsets(ctx, group)
	if err != nil {
		return -1
	}
	if o, ok := offs.Lookup(topic, 0); ok && o.Err == nil {
		return o.At
	}
	return -1
}

// TestAdversary50HistoryUnchangedFoldCommitsPastFailedWrite: the history
// group (whose producer is InOrder since this change) folds dispatch
// event N of job "a" into a's record; its changelog write fails (the
// broker answers NOT_ENOUGH_REPLICAS until sarama's retries are spent).
// While it is being retried the group consumes event N+1: a repeat of a
// fire job "b" already has (at-least-once repeats are ordinary), whose
// fold changes nothing and writes nothing. goka commits N+1 at once, and
// its offset covers N. The processor then stops with N's failure, its
// store is discarded as unsettled and restored from the changelog (without
// a's fire), and consumption resumes after N+1: the fire of job "a" never
// reaches its history. FAILS while InOrder does not cover inputs that
// send nothing.
func TestAdversary50HistoryUnchangedFoldCommitsPastFailedWrite(t *testing.T) {
	env := testenv.New(t, 1)
	if env.Broker == nil {
		t.Skip("needs the embedded broker's request hooks")
	}
	const marker = "adv50poison"
	table := string(env.Layout.HistoryTable())
	var poison atomic.Bool
	c := env.Broker.Cluster()
	attempts := brokerfaults.FailProduce(c, func(b brokerfaults.Batch) int16 {
		if poison.Load() && b.Topic == table && bytes.Contains(b.Records, []byte(marker)) {
			return kerr.NotEnoughReplicas.Code
		}
		return 0
	})

	cfg := env.Config()
	cfg.History.Only = true
	inst := env.Start(cfg)
	dispatch := string(env.Layout.Dispatch())
	group := string(env.Layout.HistoryGroup())
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	env.Produce(dispatch, "b", adv50Manual("b", "b-1", t0), t0)
	env.WaitConsumed(group, dispatch, time.Minute)

	poison.Store(true)
	res := env.Client.ProduceSync(context.Background(), &kgo.Record{Topic: dispatch, Key: []byte("a"), Value: adv50Manual("a", marker, t0), Timestamp: t0})
	require.NoError(t, res.FirstErr())
	n := res[0].Record.Offset
	testenv.Eventually(t, 20*time.Second, func() error {
		if attempts.Load() == 0 {
			return errors.New("a's table write not attempted yet")
		}
		return nil
	})
	env.Produce(dispatch, "b", adv50Manual("b", "b-1", t0), t0) // N+1: a repeat, its fold writes nothing
	// sarama's 10 retries, then the processor stops and the instance restarts it
	testenv.Eventually(t, 20*time.Second, func() error {
		if attempts.Load() < 11 {
			return fmt.Errorf("%d attempts failed", attempts.Load())
		}
		return nil
	})
	time.Sleep(500 * time.Millisecond)
	committed := adv50Committed(env, group, dispatch)
	poison.Store(false)
	env.WaitConsumed(group, dispatch, time.Minute)
	inst.Stop()

	var found bool
	cl, err := env.Kafka.NewKgo(kgo.ConsumeTopics(table), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timebound.Scaled(3*time.Second))
	defer cancel()
	for ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if string(r.Key) == "a" && bytes.Contains(r.Value, []byte(marker)) {
				found = true
			}
		})
	}
	t.Logf("input N (a's fire) at %d; committed after the failure: %d; %d table writes failed", n, committed, attempts.Load())
	require.Truef(t, found, "the history group committed offset %d past dispatch event %d (job a's fire) whose changelog write failed, "+
		"because the event after it (a repeat whose fold wrote nothing) was committed while the write was retried: "+
		"a's history never gets the fire", committed, n)
}
