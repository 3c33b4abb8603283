package heldwrites_test

// Adversary round 50: clients.InOrder end to end, with goka v1.1.16,
// sarama and the embedded broker (kfake).
//
// Input N's group-table (changelog) write fails after sarama's retries
// (the broker answers NOT_ENOUGH_REPLICAS for every table batch carrying
// N's marker while poison is set); input N+1 on the same input partition
// is consumed while N's write is still being retried and does one of:
//
//	set:   a table write (queued behind N's, written once N's failed)
//	emit:  an emit to another topic (acknowledged at once)
//	none:  nothing (the history's unchanged fold, a command the history
//	       leaves to the scheduler, the scheduler's stale loopback)
//	defer: a deferred commit completed from another goroutine after a
//	       short while (inputs.Policy.Reject with its franz-go producer:
//	       every rejected input of the scheduler, history, clock, router)
//
// The promise under test: no input is committed past one whose write
// failed. Each case checks the group's committed offset of the input
// partition after the processor stopped with N's failure, and (for the
// InOrder producer) that after a restart with the broker healthy N's write
// is in the changelog.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/lovoo/goka/storage"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/clients"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/testenv/brokerfaults"
)

const adv50Marker = "adv50-poisoned-write"

type adv50Case struct {
	next string // set, emit, none, defer
	raw  bool   // goka's producer as is (no InOrder)
}

type adv50Result struct {
	inputN    int64 // offset of input N
	committed int64 // the group's committed offset of the input partition (-1: none)
	runErr    error
	attempts  int64 // table batches with N's marker the broker failed
}

// adv50Poison makes the embedded broker fail (NOT_ENOUGH_REPLICAS,
// retriable) every produce of a batch of table that carries the marker
// while poison is set; other partitions of such a request are answered
// REQUEST_TIMED_OUT (nothing appended, retried).
func adv50Poison(t *testing.T, env *testenv.Env, table string, poison *atomic.Bool) *atomic.Int64 {
	t.Helper()
	c := env.Broker.Cluster()
	return brokerfaults.FailProduce(c, func(b brokerfaults.Batch) int16 {
		if poison.Load() && b.Topic == table && bytes.Contains(b.Records, []byte(adv50Marker)) {
			return kerr.NotEnoughReplicas.Code
		}
		return 0
	})
}

// adv50Committed returns the group's committed offset of topic/0 (-1: none).
func adv50Committed(t *testing.T, env *testenv.Env, group, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(env.Client).FetchOffsets(ctx, group)
	if err != nil {
		return -1 // the group does not exist yet
	}
	if o, ok := offs.Lookup(topic, 0); ok && o.Err == nil {
		return o.At
	}
	return -1
}

// adv50Table reads table's changelog and returns the last value of each key.
func adv50Table(t *testing.T, env *testenv.Env, table string) map[string]string {
	t.Helper()
	c, err := env.Kafka.NewKgo(kgo.ConsumeTopics(table), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer c.Close()
	out := map[string]string{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			return out
		}
		fs.EachRecord(func(r *kgo.Record) { out[string(r.Key)] = string(r.Value) })
	}
}

func adv50Run(t *testing.T, tc adv50Case) adv50Result {
	env := testenv.New(t, 1)
	if env.Broker == nil {
		t.Skip("needs the embedded broker's request hooks")
	}
	suffix := fmt.Sprintf("adv50-%s-%v", tc.next, tc.raw)
	group := goka.Group(env.Layout.Prefix + suffix)
	input := env.Layout.Prefix + suffix + "-in"
	output := env.Layout.Prefix + suffix + "-out"
	table := string(goka.GroupTable(group))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adm := kadm.NewClient(env.Client)
	for _, topic := range []string{input, output, table} {
		_, err := adm.CreateTopic(ctx, 1, 1, nil, topic)
		require.NoError(t, err)
	}
	var poison atomic.Bool
	attempts := adv50Poison(t, env, table, &poison)

	cb := func(ctx goka.Context, msg any) {
		v := msg.(string)
		switch {
		case v == "warmup", v == adv50Marker:
			ctx.SetValue(v)
		case v == "next":
			switch tc.next {
			case "set":
				ctx.SetValue("ok")
			case "emit":
				ctx.Emit(goka.Stream(output), ctx.Key(), "ok")
			case "none":
			case "defer":
				done := ctx.DeferCommit()
				go func() {
					time.Sleep(20 * time.Millisecond) // a franz-go reject's ack
					done(nil)
				}()
			}
		}
	}
	graph := goka.DefineGroup(group,
		goka.Input(goka.Stream(input), new(codec.String), cb),
		goka.Output(goka.Stream(output), new(codec.String)),
		goka.Persist(new(codec.String)))
	opts := append(env.Kafka.GokaProcessorOptions(), goka.WithStorageBuilder(storage.MemoryBuilder()))
	if tc.raw {
		// goka's producer with the same sarama settings, not wrapped.
		opts = append(opts, goka.WithProducerBuilder(goka.ProducerBuilderWithConfig(env.Kafka.Sarama())))
	} else {
		// As the instance runs every group (instance.supervise): the
		// producer in CommitOrder, each callback's commit held behind
		// the records sent before it.
		order := &clients.CommitOrder{}
		var failed atomic.Uint64
		opts = append(opts, goka.WithProducerBuilder(order.Builder(env.Kafka.ProducerBuilder())), clients.GuardCallbacks(&failed, order))
	}
	run := func() (*goka.Processor, chan error, context.CancelFunc) {
		p, err := goka.NewProcessor(env.Kafka.Brokers, graph, opts...)
		require.NoError(t, err)
		rctx, rcancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(rctx) }()
		return p, done, rcancel
	}

	produce := func(key, value string) int64 {
		r := &kgo.Record{Topic: input, Key: []byte(key), Value: []byte(value)}
		res := env.Client.ProduceSync(context.Background(), r)
		require.NoError(t, res.FirstErr())
		return res[0].Record.Offset
	}

	_, done, rcancel := run()
	defer rcancel()
	warm := produce("w", "warmup")
	testenv.Eventually(t, 30*time.Second, func() error {
		if c := adv50Committed(t, env, string(group), input); c <= warm {
			return fmt.Errorf("warmup not committed yet (%d)", c)
		}
		return nil
	})

	poison.Store(true)
	n := produce("n", adv50Marker)
	testenv.Eventually(t, 10*time.Second, func() error {
		if attempts.Load() == 0 {
			return errors.New("N's table write not attempted yet")
		}
		return nil
	})
	produce("m", "next") // N+1, while N's write is being retried
	var runErr error
	select {
	case runErr = <-done:
	case <-time.After(15 * time.Second):
		t.Fatalf("the processor did not stop after N's table write failed (%d attempts failed)", attempts.Load())
	}
	res := adv50Result{inputN: n, committed: adv50Committed(t, env, string(group), input), runErr: runErr, attempts: attempts.Load()}
	t.Logf("%s raw=%v: input N at %d, committed %d, %d failed attempts, run: %v", tc.next, tc.raw, n, res.committed, res.attempts, runErr)

	if tc.raw || res.committed > n {
		return res
	}
	// Restart with the broker healthy: N is consumed again and written.
	poison.Store(false)
	_, done2, rcancel2 := run()
	testenv.Eventually(t, 30*time.Second, func() error {
		if c := adv50Committed(t, env, string(group), input); c <= n+1 {
			return fmt.Errorf("not caught up after the restart (committed %d)", c)
		}
		return nil
	})
	rcancel2()
	<-done2
	require.Equal(t, adv50Marker, adv50Table(t, env, table)["n"], "after the restart N's table write is in the changelog")
	return res
}

// TestAdversary50InOrderWithheldCommitPastFailedWrite: with InOrder (the
// processors' producer) an input N+1 that writes (table or emit) is not
// committed past input N whose table write failed, and N is written
// after the restart.
func TestAdversary50InOrderWithheldCommitPastFailedWrite(t *testing.T) {
	for _, next := range []string{"set", "emit"} {
		t.Run(next, func(t *testing.T) {
			res := adv50Run(t, adv50Case{next: next})
			require.Error(t, res.runErr, "the processor stops with N's failure")
			require.LessOrEqualf(t, res.committed, res.inputN,
				"InOrder: input N+1 (%s) was committed (offset %d) past input N (offset %d) whose table write failed: N is skipped forever",
				next, res.committed, res.inputN)
		})
	}
}

// TestAdversary50InOrderInputWithoutWritesCommitsPastFailedWrite: the
// same with an input N+1 that sends nothing through the processor's
// producer: no record, or a deferred commit completed by another
// producer (the input policy's franz-go reject). goka commits such an
// input as soon as its callback (or its deferred commit) finishes, and
// its offset covers N's: InOrder alone cannot hold what never goes
// through it. It failed so (committed 3 past N at 1) until every
// callback's commit was held behind the records sent before it
// (clients.CommitOrder, GuardCallbacks).
func TestAdversary50InOrderInputWithoutWritesCommitsPastFailedWrite(t *testing.T) {
	for _, next := range []string{"none", "defer"} {
		t.Run(next, func(t *testing.T) {
			res := adv50Run(t, adv50Case{next: next})
			require.Error(t, res.runErr, "the processor stops with N's failure")
			require.LessOrEqualf(t, res.committed, res.inputN,
				"InOrder: input N+1 (%s: nothing sent through the processor's producer) was committed (offset %d) past input N (offset %d) "+
					"whose table write failed; N's write is lost for good (its store is discarded as unsettled, its input never consumed again)",
				next, res.committed, res.inputN)
		})
	}
}

// TestAdversary50RawProducerCommitsPastFailedWrite is the control: with
// goka's producer as it is, input N+1's commit passes N (what InOrder
// exists for). It asserts the loss, so it shows the mechanism is real in
// this setup; it skips if the timing did not reproduce it.
func TestAdversary50RawProducerCommitsPastFailedWrite(t *testing.T) {
	for _, next := range []string{"set", "emit"} {
		t.Run(next, func(t *testing.T) {
			res := adv50Run(t, adv50Case{next: next, raw: true})
			if res.committed <= res.inputN {
				t.Skipf("raw producer: not reproduced this time (committed %d, N at %d)", res.committed, res.inputN)
			}
			t.Logf("raw producer: committed %d past input N at %d: N's write is skipped", res.committed, res.inputN)
		})
	}
}
