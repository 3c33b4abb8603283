package heldwrites_test

// Adversary round 53: clients.MaxHeldBytes (32 MiB of held inputs a
// group). A processor wired as every Chronos group is (clients.Input,
// CommitOrder's producer, GuardCallbacks) holds one table write on the
// embedded broker, and a flood of large records follows on its input:
//
//   - records whose bytes are in their value: the callbacks stop once the
//     held inputs pin ~32 MiB (the bound holds);
//   - records of a few bytes of key and value carrying one large header
//     (as anyone with Write on chronos-jobs may send; the decoder keeps up
//     to 64 headers of any size, copied out of the fetch): holdBytes counts
//     only key and value, so every one of them runs and stays pinned in
//     goka's context (its message keeps the sarama headers) up to
//     MaxHeldCommits: 1,024 records of ~1 MiB, the old ~1 GiB a group;
//   - oversized commands whose reject write stalls: inputs.Policy held
//     each until its reject was written, outside both bounds (100.7 MiB
//     within 4 s).
//
// Fixed: the decoder keeps at most sarama.MaxRecordHeaderBytes (16 KiB) of
// a record's headers (the record is rejected, too_many_headers),
// clients.InputBytes counts the kept ones, and inputs.Policy bounds the
// rejects in flight (MaxRejectsInFlight, MaxRejectBytesInFlight). The
// tests below failed before (100.0-100.7 MiB pinned) and pass since.

import (
	"context"
	"crypto/rand"
	"fmt"
	"runtime"
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
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
)

const adv53RecordBytes = 640 << 10

type adv53Result struct {
	ran         int64 // flood inputs whose callback ran while the head was held
	ranBytes    int64 // their key, value and header bytes
	pinnedHeap  int64 // heap while held minus heap after everything committed
	countedSize int64 // key+value bytes per record (what holdBytes counts)
}

func adv53Heap() int64 {
	var ms runtime.MemStats
	for i := 0; i < 3; i++ {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// adv53Flood runs the group, holds its marker's table write, sends n
// records made by mk and measures what the callbacks pinned behind it.
func adv53Flood(t *testing.T, name string, n int, mk func(topic string, i int) *kgo.Record) adv53Result {
	env := testenv.New(t, 1)
	if env.Broker == nil {
		t.Skip("needs the embedded broker's request hooks")
	}
	const marker = "adv53-bytes-head"
	group := goka.Group(env.Layout.Prefix + "adv53-" + name)
	input := env.Layout.Prefix + "adv53-" + name + "-in"
	table := string(goka.GroupTable(group))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm := kadm.NewClient(env.Client)
	for _, topic := range []string{input, table} {
		_, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": adv53Ptr("2000000")}, topic)
		require.NoError(t, err)
	}
	ctl := adv52Install(t, env, table, marker)

	var ran, ranBytes atomic.Int64
	var armed atomic.Bool
	cb := func(ctx goka.Context, msg any) {
		v, _ := msg.([]byte)
		switch string(v) {
		case "warmup", marker:
			ctx.SetValue(string(v))
			return
		}
		if armed.Load() {
			ran.Add(1)
			b := int64(len(ctx.Key()) + len(v))
			for k, h := range ctx.Headers() {
				b += int64(len(k) + len(h))
			}
			ranBytes.Add(b)
		}
	}
	graph := goka.DefineGroup(group,
		clients.Input(goka.Stream(input), cb),
		goka.Persist(new(codec.String)))
	order := &clients.CommitOrder{}
	var failed atomic.Uint64
	// the fetch buffer an instance computes for an inbound topic of
	// ~1 MiB records (instance.ConsumerFetchBuffer: 4 MiB / 1 MiB - 3)
	kc := env.Kafka
	kc.FetchBuffer = 1
	opts := append(kc.GokaProcessorOptions(), goka.WithStorageBuilder(storage.MemoryBuilder()),
		goka.WithProducerBuilder(order.Builder(env.Kafka.ProducerBuilder())), clients.GuardCallbacks(&failed, order))
	p, err := goka.NewProcessor(env.Kafka.Brokers, graph, opts...)
	require.NoError(t, err)
	rctx, rcancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(rctx) }()
	defer func() { rcancel(); <-done }()

	produce := func(recs ...*kgo.Record) int64 {
		res := env.Client.ProduceSync(context.Background(), recs...)
		require.NoError(t, res.FirstErr())
		return res[len(res)-1].Record.Offset
	}
	warm := produce(&kgo.Record{Topic: input, Key: []byte("w"), Value: []byte("warmup")})
	testenv.Eventually(t, 30*time.Second, func() error {
		if c := adv51Committed(t, env, string(group), input); c <= warm {
			return fmt.Errorf("warmup not committed yet (%d)", c)
		}
		return nil
	})
	ctl.armed.Store(true)
	produce(&kgo.Record{Topic: input, Key: []byte("h"), Value: []byte(marker)})
	testenv.Eventually(t, 10*time.Second, func() error {
		if !ctl.held.Load() {
			return fmt.Errorf("the head write is not held yet")
		}
		return nil
	})
	armed.Store(true)
	var last int64
	var counted int64
	for i := 0; i < n; i += 8 {
		var recs []*kgo.Record
		for j := i; j < i+8 && j < n; j++ {
			r := mk(input, j)
			counted = int64(len(r.Key) + len(r.Value))
			recs = append(recs, r)
		}
		last = produce(recs...)
	}
	// wait until the callbacks stop behind the held head
	prev := int64(-1)
	testenv.Eventually(t, 40*time.Second, func() error {
		cur := ran.Load()
		if cur != prev {
			prev = cur
			time.Sleep(time.Second)
			return fmt.Errorf("%d flood inputs ran", cur)
		}
		return nil
	})
	res := adv53Result{ran: ran.Load(), ranBytes: ranBytes.Load(), countedSize: counted}
	held := adv53Heap()
	ctl.Release()
	testenv.Eventually(t, 40*time.Second, func() error {
		if c := adv51Committed(t, env, string(group), input); c <= last {
			return fmt.Errorf("not caught up after the release (committed %d, last %d)", c, last)
		}
		return nil
	})
	require.Equal(t, int64(n), ran.Load(), "every flood input runs once the head is released")
	after := adv53Heap()
	res.pinnedHeap = held - after
	t.Logf("%s: %d of %d records (key+value %d B each, what holdBytes counts) ran behind the held write: %.1f MiB of input bytes; heap held %.1f MiB, after %.1f MiB: %.1f MiB pinned (MaxHeldBytes %d MiB)",
		name, res.ran, n, counted, float64(res.ranBytes)/(1<<20), float64(held)/(1<<20), float64(after)/(1<<20), float64(res.pinnedHeap)/(1<<20), clients.MaxHeldBytes>>20)
	return res
}

func adv53Ptr(s string) *string { return &s }

func adv53Random(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// The bound as designed: records whose bytes are in their value.
func TestAdversary53HeldBytesValueFlood(t *testing.T) {
	const n = 160
	r := adv53Flood(t, "value", n, func(topic string, i int) *kgo.Record {
		return &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("v%04d", i)), Value: adv53Random(adv53RecordBytes)}
	})
	require.LessOrEqual(t, r.ranBytes, int64(clients.MaxHeldBytes+adv53RecordBytes+64),
		"the inputs run behind one held write pinned more than MaxHeldBytes")
	require.Less(t, r.pinnedHeap, int64(clients.MaxHeldBytes+16<<20),
		"the heap pinned behind one held write passed MaxHeldBytes plus the fetch buffer")
}

// The same bytes carried in one header of each record: not counted.
func TestAdversary53HeldBytesHeaderFlood(t *testing.T) {
	const n = 160
	r := adv53Flood(t, "header", n, func(topic string, i int) *kgo.Record {
		return &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("x%04d", i)), Value: []byte("{}"),
			Headers: []kgo.RecordHeader{{Key: "pad", Value: adv53Random(adv53RecordBytes)}}}
	})
	require.LessOrEqualf(t, r.ranBytes, int64(clients.MaxHeldBytes+adv53RecordBytes+64),
		"%d inputs (%.1f MiB, their bytes in a header) ran and stayed pinned behind one held write: MaxHeldBytes counts only key and value (%d B a record)",
		r.ran, float64(r.ranBytes)/(1<<20), r.countedSize)
	require.Less(t, r.pinnedHeap, int64(clients.MaxHeldBytes+16<<20),
		"the heap pinned behind one held write (%.1f MiB) passed MaxHeldBytes plus the fetch buffer", float64(r.pinnedHeap)/(1<<20))
}

// adv53Instance floods chronos-jobs of a real instance with n records made
// by mk while one scheduler table write is held, and returns the heap the
// instance pinned meanwhile (held minus after everything is applied).
func adv53Instance(t *testing.T, n int, mk func(topic string, i int) *kgo.Record) int64 {
	env := testenv.New(t, 2)
	if env.Broker == nil {
		t.Skip("needs the embedded broker's request hooks")
	}
	const marker = "adv53heldjob"
	ctl := adv52Install(t, env, string(env.Layout.SchedulerTable()), marker)
	env.Start(env.Config())
	t0 := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	env.Put("warm", codecs.JobDef{At: t0.Add(time.Hour).Format(time.RFC3339)}, t0)
	env.WaitApplied()
	ctl.armed.Store(true)
	env.Put(marker, codecs.JobDef{At: t0.Add(time.Hour).Format(time.RFC3339)}, t0)
	testenv.Eventually(t, 10*time.Second, func() error {
		if !ctl.held.Load() {
			return fmt.Errorf("the put's table write is not held yet")
		}
		return nil
	})
	base := adv53Heap()
	jobs := string(env.Layout.Jobs())
	for i := 0; i < n; i += 8 {
		var recs []*kgo.Record
		for j := i; j < i+8 && j < n; j++ {
			r := mk(jobs, j)
			r.Timestamp = t0
			recs = append(recs, r)
		}
		require.NoError(t, env.Client.ProduceSync(context.Background(), recs...).FirstErr())
	}
	// wait until the heap settles: the callbacks have stopped, or run out
	var held int64
	stable := 0
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && stable < 3; {
		time.Sleep(time.Second)
		h := adv53Heap()
		if d := h - held; d < 2<<20 && d > -(2<<20) {
			stable++
		} else {
			stable = 0
		}
		held = h
	}
	ctl.Release()
	env.WaitApplied()
	after := adv53Heap()
	t.Logf("heap before the flood %.1f MiB (the head held), held %.1f MiB, after everything applied %.1f MiB: %.1f MiB pinned by %d records of %d KiB (MaxHeldBytes %d MiB)",
		float64(base)/(1<<20), float64(held)/(1<<20), float64(after)/(1<<20), float64(held-after)/(1<<20), n, adv53RecordBytes>>10, clients.MaxHeldBytes>>20)
	return held - after
}

// The documented case on a real instance: oversized commands (over
// --max-payload, rejected) flood chronos-jobs while a table write is held.
func TestAdversary53InstanceValueFlood(t *testing.T) {
	pinned := adv53Instance(t, 160, func(topic string, i int) *kgo.Record {
		return &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("v%04d", i)), Value: adv53Random(adv53RecordBytes)}
	})
	// 32 MiB of held inputs plus the fetch buffers of the scheduler's and
	// the history's consumers (2 partitions, ~4 records each)
	require.Less(t, pinned, int64(clients.MaxHeldBytes+16<<20), "the instance pinned more than MaxHeldBytes plus its fetch buffers")
}

// The same bytes in a header of commands of a few bytes.
func TestAdversary53InstanceHeaderFlood(t *testing.T) {
	pinned := adv53Instance(t, 160, func(topic string, i int) *kgo.Record {
		return &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("x%04d", i)), Value: []byte("{}"),
			Headers: []kgo.RecordHeader{{Key: "pad", Value: adv53Random(adv53RecordBytes)}}}
	})
	require.Lessf(t, pinned, int64(clients.MaxHeldBytes+16<<20),
		"the instance pinned %.1f MiB behind one held table write: records whose bytes are in a header pass MaxHeldBytes", float64(pinned)/(1<<20))
}

// A stalled write of another kind: the rejects' (inputs.Policy.Reject
// defers the input's commit until its reject, written by the instance's
// franz-go client, is acknowledged or dropped after 3 tries of 5 s). The
// broker holds the first reject's produce request; oversized commands
// (over --max-payload, the documented flood) follow on chronos-jobs. Their
// commits wait, but not for the group's producer: neither MaxHeldCommits
// nor MaxHeldBytes counts them.
func TestAdversary53InstanceRejectStallFlood(t *testing.T) {
	env := testenv.New(t, 2)
	if env.Broker == nil {
		t.Skip("needs the embedded broker's request hooks")
	}
	const marker = "adv53rej"
	ctl := adv52Install(t, env, string(env.Layout.Rejects()), marker)
	env.Start(env.Config())
	t0 := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	env.Put("warm", codecs.JobDef{At: t0.Add(time.Hour).Format(time.RFC3339)}, t0)
	env.WaitApplied()
	ctl.armed.Store(true)
	jobs := string(env.Layout.Jobs())
	require.NoError(t, env.Client.ProduceSync(context.Background(),
		&kgo.Record{Topic: jobs, Key: []byte(marker + "-head"), Value: adv53Random(adv53RecordBytes), Timestamp: t0}).FirstErr())
	testenv.Eventually(t, 10*time.Second, func() error {
		if !ctl.held.Load() {
			return fmt.Errorf("the first reject's write is not held yet")
		}
		return nil
	})
	const n = 160
	for i := 0; i < n; i += 8 {
		var recs []*kgo.Record
		for j := i; j < i+8 && j < n; j++ {
			recs = append(recs, &kgo.Record{Topic: jobs, Key: []byte(fmt.Sprintf("%s-%04d", marker, j)), Value: adv53Random(adv53RecordBytes), Timestamp: t0})
		}
		require.NoError(t, env.Client.ProduceSync(context.Background(), recs...).FirstErr())
	}
	var held int64
	stable := 0
	start := time.Now()
	for time.Since(start) < 8*time.Second && stable < 3 {
		time.Sleep(time.Second)
		h := adv53Heap()
		if d := h - held; d < 2<<20 && d > -(2<<20) {
			stable++
		} else {
			stable = 0
		}
		held = h
	}
	heldFor := time.Since(start)
	ctl.Release()
	env.WaitApplied()
	after := adv53Heap()
	pinned := held - after
	t.Logf("reject write held %s into the flood: heap held %.1f MiB, after everything applied %.1f MiB: %.1f MiB pinned by %d oversized commands of %d KiB (MaxHeldBytes %d MiB)",
		heldFor.Round(time.Second), float64(held)/(1<<20), float64(after)/(1<<20), float64(pinned)/(1<<20), n, adv53RecordBytes>>10, clients.MaxHeldBytes>>20)
	require.Lessf(t, pinned, int64(clients.MaxHeldBytes+16<<20),
		"the instance pinned %.1f MiB of rejected commands whose commit waited for their reject's write", float64(pinned)/(1<<20))
}
