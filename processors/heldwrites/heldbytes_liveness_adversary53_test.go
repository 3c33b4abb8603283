package heldwrites_test

// Adversary round 53: liveness and accounting of clients.MaxHeldBytes on a
// group of two partitions wired as Chronos's: two rounds of a held table
// write with a flood of large records behind it (the second round runs as
// many callbacks as the first: no held bytes leak), then a stop while a
// callback waits for bytes: the stop ends without an error once the broker
// answers, and the next run consumes every record.

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

func TestAdversary53HeldBytesRoundsAndStop(t *testing.T) {
	env := testenv.New(t, 2)
	if env.Broker == nil {
		t.Skip("needs the embedded broker's request hooks")
	}
	group := goka.Group(env.Layout.Prefix + "adv53-rounds")
	input := env.Layout.Prefix + "adv53-rounds-in"
	table := string(goka.GroupTable(group))
	ctx, cancel := context.WithTimeout(context.Background(), timebound.Scaled(90*time.Second))
	defer cancel()
	adm := kadm.NewClient(env.Client)
	for _, topic := range []string{input, table} {
		_, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"max.message.bytes": adv53Ptr("2000000")}, topic)
		require.NoError(t, err)
	}
	markers := []string{"adv53-round-one", "adv53-round-two", "adv53-round-three"}
	ctls := make([]*adv52Control, len(markers))
	for i, m := range markers {
		ctls[i] = adv52Install(t, env, table, m)
	}

	var mu sync.Mutex
	seen := map[string]int{}
	var ran atomic.Int64
	cb := func(ctx goka.Context, msg any) {
		v, _ := msg.([]byte)
		if len(v) < 64 {
			ctx.SetValue(string(v))
			return
		}
		mu.Lock()
		seen[ctx.Key()]++
		mu.Unlock()
		ran.Add(1)
	}
	graph := goka.DefineGroup(group, clients.Input(goka.Stream(input), cb), goka.Persist(new(codec.String)))
	order := &clients.CommitOrder{}
	var failed atomic.Uint64
	kc := env.Kafka
	kc.FetchBuffer = 1
	opts := append(kc.GokaProcessorOptions(), goka.WithStorageBuilder(storage.MemoryBuilder()),
		goka.WithProducerBuilder(order.Builder(env.Kafka.ProducerBuilder())), clients.GuardCallbacks(&failed, order))
	run := func() (chan error, context.CancelFunc) {
		p, err := goka.NewProcessor(env.Kafka.Brokers, graph, opts...)
		require.NoError(t, err)
		rctx, rcancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(rctx) }()
		return done, rcancel
	}
	produce := func(recs ...*kgo.Record) {
		require.NoError(t, env.Client.ProduceSync(context.Background(), recs...).FirstErr())
	}
	done, rcancel := run()
	defer func() { rcancel() }()
	produce(&kgo.Record{Topic: input, Key: []byte("w0"), Value: []byte("warmup")}, &kgo.Record{Topic: input, Key: []byte("w1"), Value: []byte("warmup")})
	env.WaitConsumed(string(group), input, 30*time.Second)

	const n = 120
	total := 0
	flood := func(round int) int64 {
		ctls[round].armed.Store(true)
		produce(&kgo.Record{Topic: input, Key: []byte("h"), Value: []byte(markers[round])})
		testenv.Eventually(t, 10*time.Second, func() error {
			if !ctls[round].held.Load() {
				return fmt.Errorf("round %d: the head write is not held yet", round)
			}
			return nil
		})
		before := ran.Load()
		for i := 0; i < n; i += 8 {
			var recs []*kgo.Record
			for j := i; j < i+8; j++ {
				recs = append(recs, &kgo.Record{Topic: input, Key: []byte(fmt.Sprintf("r%d-%04d", round, j)), Value: adv53Random(adv53RecordBytes)})
			}
			produce(recs...)
		}
		total += n
		prev := int64(-1)
		testenv.Eventually(t, 30*time.Second, func() error {
			cur := ran.Load()
			if cur != prev {
				prev = cur
				time.Sleep(time.Second)
				return fmt.Errorf("%d ran", cur)
			}
			return nil
		})
		return ran.Load() - before
	}
	r1 := flood(0)
	ctls[0].Release()
	env.WaitConsumed(string(group), input, 30*time.Second)
	r2 := flood(1)
	ctls[1].Release()
	env.WaitConsumed(string(group), input, 30*time.Second)
	t.Logf("callbacks run behind a held write: round one %d, round two %d (32 MiB / 640 KiB = %d)", r1, r2, clients.MaxHeldBytes/adv53RecordBytes)
	require.LessOrEqual(t, r1, int64(clients.MaxHeldBytes/adv53RecordBytes+2), "round one passed the byte bound")
	require.GreaterOrEqual(t, r2, r1-1, "round two ran fewer callbacks than round one: held bytes leaked")

	// round three: stop while a callback waits for bytes
	r3 := flood(2)
	require.Less(t, r3, int64(n), "round three did not wait for bytes")
	start := time.Now()
	rcancel()
	go func() { time.Sleep(2 * time.Second); ctls[2].Release() }()
	select {
	case err := <-done:
		t.Logf("round three: %d ran, stopped after %s: %v", r3, time.Since(start), err)
		require.NoError(t, err, "a stop while a callback waited for bytes stopped the group with an error")
	case <-time.After(timebound.Scaled(30 * time.Second)):
		t.Fatalf("the processor did not stop within 30 s (the head released after 2 s)")
	}
	done2, rcancel2 := run()
	defer func() { rcancel2(); <-done2 }()
	env.WaitConsumed(string(group), input, 40*time.Second)
	mu.Lock()
	defer mu.Unlock()
	for round := 0; round < 3; round++ {
		for j := 0; j < n; j++ {
			if seen[fmt.Sprintf("r%d-%04d", round, j)] == 0 {
				t.Fatalf("input r%d-%04d was never processed", round, j)
			}
		}
	}
}
