package heldwrites_test

// Adversary round 52: a callback waiting for room (clients.MaxHeldCommits
// commits held behind one record the broker holds) when its partition
// stops: the stop finishes once the broker answers, without an error (the
// round found the wait's error stopped the whole group, which a rebalance
// would repeat: the waiting input is now held like the others, one past
// the bound), nothing is committed past the waiting input's own commit,
// held behind the head, and the next run consumes everything after.

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/lovoo/goka/storage"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/clients"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/testenv/timebound"
)

func TestAdversary52WaitForRoomAtStop(t *testing.T) {
	env := testenv.New(t, 1)
	if env.Broker == nil {
		t.Skip("needs the embedded broker's request hooks")
	}
	const marker = "adv52-room-head"
	group := goka.Group(env.Layout.Prefix + "adv52-room")
	input := env.Layout.Prefix + "adv52-room-in"
	table := string(goka.GroupTable(group))
	ctx, cancel := context.WithTimeout(context.Background(), timebound.Scaled(60*time.Second))
	defer cancel()
	adm := kadm.NewClient(env.Client)
	for _, topic := range []string{input, table} {
		_, err := adm.CreateTopic(ctx, 1, 1, nil, topic)
		require.NoError(t, err)
	}
	ctl := adv52Install(t, env, table, marker)

	var mu sync.Mutex
	seen := map[string]int{}
	var noops atomic.Int64
	cb := func(ctx goka.Context, msg any) {
		v := msg.(string)
		switch v {
		case "warmup", marker:
			ctx.SetValue(v)
		default:
			mu.Lock()
			seen[ctx.Key()]++
			mu.Unlock()
			noops.Add(1)
		}
	}
	graph := goka.DefineGroup(group,
		goka.Input(goka.Stream(input), new(codec.String), cb),
		goka.Persist(new(codec.String)))
	order := &clients.CommitOrder{}
	var failed atomic.Uint64
	opts := append(env.Kafka.GokaProcessorOptions(), goka.WithStorageBuilder(storage.MemoryBuilder()),
		goka.WithProducerBuilder(order.Builder(env.Kafka.ProducerBuilder())), clients.GuardCallbacks(&failed, order))
	run := func() (chan error, context.CancelFunc) {
		p, err := goka.NewProcessor(env.Kafka.Brokers, graph, opts...)
		require.NoError(t, err)
		rctx, rcancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(rctx) }()
		return done, rcancel
	}
	produce := func(key, value string) int64 {
		res := env.Client.ProduceSync(context.Background(), &kgo.Record{Topic: input, Key: []byte(key), Value: []byte(value)})
		require.NoError(t, res.FirstErr())
		return res[0].Record.Offset
	}
	done, rcancel := run()
	defer rcancel()
	warm := produce("w", "warmup")
	testenv.Eventually(t, 30*time.Second, func() error {
		if c := adv51Committed(t, env, string(group), input); c <= warm {
			return fmt.Errorf("warmup not committed yet (%d)", c)
		}
		return nil
	})
	ctl.armed.Store(true)
	head := produce("h", marker)
	testenv.Eventually(t, 10*time.Second, func() error {
		if !ctl.held.Load() {
			return fmt.Errorf("the head write is not held yet")
		}
		return nil
	})
	const n = clients.MaxHeldCommits + 50
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: input, Key: []byte(fmt.Sprintf("n%04d", i)), Value: []byte("noop")}
	}
	res := env.Client.ProduceSync(context.Background(), recs...)
	require.NoError(t, res.FirstErr())
	last := res[len(res)-1].Record.Offset
	// wait until the partition blocks for room
	prev := int64(-1)
	testenv.Eventually(t, 20*time.Second, func() error {
		cur := noops.Load()
		if cur < clients.MaxHeldCommits || cur != prev {
			prev = cur
			time.Sleep(300 * time.Millisecond)
			return fmt.Errorf("%d noops consumed", cur)
		}
		return nil
	})
	blockedAt := noops.Load()
	t.Logf("%d no-op inputs consumed behind the held head (offset %d) before the partition waited for room", blockedAt, head)
	require.Less(t, blockedAt, int64(n), "the partition did not wait for room")

	start := time.Now()
	rcancel()
	go func() { time.Sleep(2 * time.Second); ctl.Release() }()
	select {
	case err := <-done:
		t.Logf("stopped after %s: %v", time.Since(start), err)
		require.NoError(t, err, "a stop that met a full queue of held commits stopped the group with an error")
	case <-time.After(timebound.Scaled(30 * time.Second)):
		t.Fatalf("the processor did not stop within 30 s (the head released after 2 s)")
	}
	afterStop := noops.Load()
	committed := adv51Committed(t, env, string(group), input)
	// the input that waited for room is at head+1+blockedAt
	waiting := head + 1 + blockedAt
	t.Logf("after the stop: %d noops ran, committed %d, the waiting input at %d", afterStop, committed, waiting)
	require.LessOrEqualf(t, committed, waiting+1, "committed (%d) past the input that waited for room (offset %d), the last one consumed", committed, waiting)

	done2, rcancel2 := run()
	defer func() { rcancel2(); <-done2 }()
	testenv.Eventually(t, 30*time.Second, func() error {
		if c := adv51Committed(t, env, string(group), input); c <= last {
			return fmt.Errorf("not caught up after the restart (committed %d, last %d)", c, last)
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	for i := 0; i < n; i++ {
		if seen[fmt.Sprintf("n%04d", i)] == 0 {
			t.Fatalf("input n%04d was never processed", i)
		}
	}
}
