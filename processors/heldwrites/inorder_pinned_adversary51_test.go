package heldwrites_test

// Adversary round 51: what CommitOrder's barriers pin while the head
// record waits.
//
// Every callback's commit is a deferred commit held by a barrier in the
// processor's InOrder queue until every record sent before it is
// acknowledged. An input whose callback sends no record (a history fold
// that changes nothing, a command the history leaves to the scheduler, a
// stale loopback, a rejected command) goes through no producer buffer, so
// nothing pushes back on the consumer: its callback returns at once, the
// partition consumes the next input, and each such input stays pinned
// (goka's callback context holds the message, key and value) in the
// InOrder queue until the head record is answered. With a head record
// held by a slow or silent broker (a produce request is answered only
// after sarama's Net.ReadTimeout, 30 s, and retried) the number of inputs
// held is bounded by nothing but the input rate: the consumers' bound by
// bytes (--fetch-buffer-bytes per partition, docs/security.md, the bulk
// import of payload-heavy jobs) no longer bounds what the processor holds.
//
// The test holds one table write in the embedded broker (SleepControl) for
// a few seconds and feeds no-op inputs of 8 KiB behind it; it fails when
// more than adv51MaxPinned inputs were consumed (and held) while the head
// record waited. It also checks the order held (nothing committed past
// the head input while it waited) and that everything is committed once
// the broker answers.

import (
	"bytes"
	"context"
	"fmt"
	"hash"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/lovoo/goka/storage"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chronos-scheduler/chronos/clients"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/testenv/timebound"
)

const (
	adv51HeadMarker = "adv51-held-head-write"
	// adv51MaxPinned: inputs a partition may hold behind one waiting
	// record. The history group's producer was bounded to 1,024 records
	// for the same reason (adversary round 48: each pins its input).
	adv51MaxPinned = 1024
	adv51NoopCount = 3000
	adv51NoopBytes = 8 << 10
)

func TestAdversary51BarriersPinInputsWithoutBound(t *testing.T) {
	env := testenv.New(t, 1)
	if env.Broker == nil {
		t.Skip("needs the embedded broker's request hooks")
	}
	group := goka.Group(env.Layout.Prefix + "adv51-pinned")
	input := env.Layout.Prefix + "adv51-pinned-in"
	table := string(goka.GroupTable(group))
	ctx, cancel := context.WithTimeout(context.Background(), timebound.Scaled(60*time.Second))
	defer cancel()
	adm := kadm.NewClient(env.Client)
	for _, topic := range []string{input, table} {
		_, err := adm.CreateTopic(ctx, 1, 1, nil, topic)
		require.NoError(t, err)
	}

	// Hold the first produce request carrying the head marker until
	// release is closed (other connections go on: the consumer fetches).
	c := env.Broker.Cluster()
	release := make(chan struct{})
	var held atomic.Bool
	c.ControlKey(int16(kmsg.Produce), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := r.(*kmsg.ProduceRequest)
		hit := false
		for _, tp := range req.Topics {
			name := tp.Topic
			if name == "" {
				if info := c.TopicIDInfo(tp.TopicID); info != nil {
					name = info.Topic
				}
			}
			if name != table {
				continue // the test's own produce of the input
			}
			for _, p := range tp.Partitions {
				if bytes.Contains(p.Records, []byte(adv51HeadMarker)) {
					hit = true
				}
			}
		}
		if hit && held.CompareAndSwap(false, true) {
			c.SleepControl(func() { <-release })
		}
		return nil, nil, false
	})
	var released atomic.Bool
	doRelease := func() {
		if released.CompareAndSwap(false, true) {
			close(release)
		}
	}
	defer doRelease()

	var noops atomic.Int64
	cb := func(ctx goka.Context, msg any) {
		v := msg.(string)
		switch {
		case v == "warmup", v == adv51HeadMarker:
			ctx.SetValue(v)
		default:
			noops.Add(1) // an unchanged fold: nothing sent
		}
	}
	graph := goka.DefineGroup(group,
		goka.Input(goka.Stream(input), new(codec.String), cb),
		goka.Persist(new(codec.String)))
	order := &clients.CommitOrder{}
	var failed atomic.Uint64
	opts := append(env.Kafka.GokaProcessorOptions(), goka.WithStorageBuilder(storage.MemoryBuilder()),
		goka.WithNilHandling(goka.NilProcess),
		goka.WithProducerBuilder(order.Builder(adv51Logged(t, env.Kafka.ProducerBuilder()))), clients.GuardCallbacks(&failed, order))
	p, err := goka.NewProcessor(env.Kafka.Brokers, graph, opts...)
	require.NoError(t, err)
	rctx, rcancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(rctx) }()
	defer func() {
		doRelease()
		rcancel()
		select {
		case <-done:
		case <-time.After(timebound.Scaled(20 * time.Second)):
			t.Errorf("the processor did not stop")
		}
	}()

	produce := func(key, value string) int64 {
		res := env.Client.ProduceSync(context.Background(), &kgo.Record{Topic: input, Key: []byte(key), Value: []byte(value)})
		require.NoError(t, res.FirstErr())
		return res[0].Record.Offset
	}
	warm := produce("w", "warmup")
	testenv.Eventually(t, 30*time.Second, func() error {
		if c := adv51Committed(t, env, string(group), input); c <= warm {
			return fmt.Errorf("warmup not committed yet (%d)", c)
		}
		return nil
	})

	head := produce("h", adv51HeadMarker)
	testenv.Eventually(t, 10*time.Second, func() error {
		if !held.Load() {
			return fmt.Errorf("the head write is not held yet")
		}
		return nil
	})
	pad := strings.Repeat("x", adv51NoopBytes)
	recs := make([]*kgo.Record, adv51NoopCount)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: input, Key: []byte(fmt.Sprintf("n%d", i)), Value: []byte(fmt.Sprintf("noop-%d-%s", i, pad))}
	}
	res := env.Client.ProduceSync(context.Background(), recs...)
	require.NoError(t, res.FirstErr())
	last := res[len(res)-1].Record.Offset

	// Let the partition consume what it will while the head waits.
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) && noops.Load() < adv51NoopCount {
		time.Sleep(100 * time.Millisecond)
	}
	pinned := noops.Load()
	committedWhileHeld := adv51Committed(t, env, string(group), input)
	t.Logf("while the head write (input %d) was held: %d no-op inputs consumed and held behind it (%d KiB of values pinned); committed %d",
		head, pinned, pinned*adv51NoopBytes>>10, committedWhileHeld)
	doRelease()

	require.LessOrEqualf(t, committedWhileHeld, head, "an input was committed (%d) past the head input %d whose write was not acknowledged", committedWhileHeld, head)
	testenv.Eventually(t, 30*time.Second, func() error {
		if c := adv51Committed(t, env, string(group), input); c <= last {
			return fmt.Errorf("not everything committed after the release (committed %d, last %d)", c, last)
		}
		return nil
	})
	require.LessOrEqualf(t, pinned, int64(adv51MaxPinned),
		"%d inputs (%d KiB of values) were consumed and held in the InOrder queue behind one waiting record: "+
			"nothing bounds what the barriers pin while the head record waits (the consumers' bound by bytes no longer holds)",
		pinned, pinned*adv51NoopBytes>>10)
}

// adv51Committed returns the group's committed offset of topic/0 (-1: none).
func adv51Committed(t *testing.T, env *testenv.Env, group, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
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

// adv51Logged logs when the inner producer reports the head record.
func adv51Logged(t *testing.T, pb goka.ProducerBuilder) goka.ProducerBuilder {
	return func(brokers []string, clientID string, hasher func() hash.Hash32) (goka.Producer, error) {
		p, err := pb(brokers, clientID, hasher)
		if err != nil {
			return nil, err
		}
		return adv51LoggedProducer{p, t}, nil
	}
}

type adv51LoggedProducer struct {
	goka.Producer
	t *testing.T
}

func (p adv51LoggedProducer) EmitWithHeaders(topic, key string, value []byte, headers goka.Headers) *goka.Promise {
	start := time.Now()
	return p.Producer.EmitWithHeaders(topic, key, value, headers).Then(func(err error) {
		if key == "h" {
			p.t.Logf("head record %s/%s reported after %v: %v", topic, key, time.Since(start), err)
		}
	})
}
