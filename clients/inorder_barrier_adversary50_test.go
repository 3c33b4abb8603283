package clients

// Adversary round 50: the fix, first prototyped here, now
// clients.CommitOrder and GuardCallbacks, validated end to end on kfake.
// An input whose callback sends nothing through the processor's producer (no record; or a deferred commit another producer
// completes, the input policy's franz-go reject) is committed by goka as
// soon as its callback ends, past an earlier input whose write is still
// being retried and then fails (processors' TestAdversary50InOrderInput
// WithoutWritesCommitsPastFailedWrite). The fix: at the start of every
// callback (a goka context wrapper), take a deferred commit and complete
// it with an ordered "barrier": a pseudo-record InOrder reports after
// every record sent before it, failed if one of them failed. Every input's
// commit then waits for the records of the inputs before it, whether or
// not it writes. The instance runs every group so (instance.supervise).

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
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/testenv/brokerfaults"
	"github.com/chronos-scheduler/chronos/testenv/timebound"
)

// TestAdversary50BarrierHoldsCommitsOfInputsWithoutWrites: with the
// barrier, an input N+1 that writes nothing (none) or whose commit another
// producer completes (defer) is not committed past input N whose table
// write failed, and after a restart N's write is in the changelog. The
// same scenario without the barrier (barrier=false) commits past N: the
// subtest asserts that too, as the control.
func TestAdversary50BarrierHoldsCommitsOfInputsWithoutWrites(t *testing.T) {
	for _, tc := range []struct {
		next    string
		barrier bool
	}{{"none", true}, {"defer", true}, {"set", true}, {"none", false}} {
		t.Run(fmt.Sprintf("%s/barrier=%v", tc.next, tc.barrier), func(t *testing.T) {
			adv50BarrierCase(t, tc.next, tc.barrier)
		})
	}
}

func adv50BarrierCase(t *testing.T, next string, barrier bool) {
	const marker = "adv50-poisoned-write"
	group := goka.Group("adv50-barrier")
	input, table := "adv50-in", string(goka.GroupTable(group))
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, input, table))
	require.NoError(t, err)
	defer kc.Close()
	var poison atomic.Bool
	attempts := brokerfaults.FailProduce(kc, func(b brokerfaults.Batch) int16 {
		if poison.Load() && b.Topic == table && bytes.Contains(b.Records, []byte(marker)) {
			return kerr.NotEnoughReplicas.Code
		}
		return 0
	})
	cfg := Default(kc.ListenAddrs()...)
	cl, err := cfg.NewKgo()
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	committed := func() int64 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		offs, err := adm.FetchOffsets(ctx, string(group))
		if err != nil {
			return -1
		}
		if o, ok := offs.Lookup(input, 0); ok && o.Err == nil {
			return o.At
		}
		return -1
	}
	eventually := func(d time.Duration, f func() error) {
		t.Helper()
		d = timebound.Scaled(d)
		deadline := time.Now().Add(d)
		for {
			err := f()
			if err == nil {
				return
			}
			require.False(t, time.Now().After(deadline), "within %s: %v", d, err)
			time.Sleep(20 * time.Millisecond)
		}
	}
	produce := func(key, value string) int64 {
		res := cl.ProduceSync(context.Background(), &kgo.Record{Topic: input, Key: []byte(key), Value: []byte(value)})
		require.NoError(t, res.FirstErr())
		return res[0].Record.Offset
	}

	cb := func(ctx goka.Context, msg any) {
		switch v := msg.(string); {
		case v == "warmup", v == marker:
			ctx.SetValue(v)
		case v == "next":
			switch next {
			case "set":
				ctx.SetValue("ok")
			case "defer":
				done := ctx.DeferCommit()
				go func() {
					time.Sleep(20 * time.Millisecond)
					done(nil)
				}()
			}
		}
	}
	graph := goka.DefineGroup(group, goka.Input(goka.Stream(input), new(codec.String), cb), goka.Persist(new(codec.String)))
	run := func() (chan error, context.CancelFunc) {
		opts := append(cfg.GokaProcessorOptions(), goka.WithStorageBuilder(storage.MemoryBuilder()))
		if barrier {
			o := &CommitOrder{}
			var failed atomic.Uint64
			opts = append(opts, goka.WithProducerBuilder(o.Builder(cfg.ProducerBuilder())), GuardCallbacks(&failed, o))
		}
		p, err := goka.NewProcessor(cfg.Brokers, graph, opts...)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		return done, cancel
	}

	done, cancel := run()
	defer cancel()
	warm := produce("w", "warmup")
	eventually(30*time.Second, func() error {
		if c := committed(); c <= warm {
			return fmt.Errorf("warmup not committed (%d)", c)
		}
		return nil
	})
	poison.Store(true)
	n := produce("n", marker)
	eventually(10*time.Second, func() error {
		if attempts.Load() == 0 {
			return errors.New("N's write not attempted yet")
		}
		return nil
	})
	produce("m", "next")
	select {
	case err := <-done:
		require.Error(t, err)
	case <-time.After(timebound.Scaled(15 * time.Second)):
		t.Fatal("the processor did not stop after N's write failed")
	}
	c := committed()
	t.Logf("%s barrier=%v: N at %d, committed %d after N's failure (%d failed attempts)", next, barrier, n, c, attempts.Load())
	if !barrier {
		require.Greater(t, c, n, "control: without the barrier the input after N is committed past N")
		return
	}
	require.LessOrEqual(t, c, n, "with the barrier no input is committed past N")

	poison.Store(false)
	done2, cancel2 := run()
	eventually(30*time.Second, func() error {
		if c := committed(); c <= n+1 {
			return fmt.Errorf("not caught up after the restart (%d)", c)
		}
		return nil
	})
	cancel2()
	<-done2
	// N's write is in the changelog
	rc, err := cfg.NewKgo(kgo.ConsumeTopics(table), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer rc.Close()
	found := false
	ctx, cancelRead := context.WithTimeout(context.Background(), timebound.Scaled(2*time.Second))
	defer cancelRead()
	for ctx.Err() == nil && !found {
		rc.PollFetches(ctx).EachRecord(func(r *kgo.Record) { found = found || string(r.Key) == "n" && string(r.Value) == marker })
	}
	require.True(t, found, "after the restart N's table write is in the changelog")
}
