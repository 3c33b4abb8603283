//go:build adversary18c

package instance_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/instance"
	"github.com/chronos-scheduler/chronos/testenv"
)

// counter is a sarama consumer interceptor that counts the records sarama
// hands towards goka (after clients' detach copied them out of their fetch
// response): every one of them is alive until its callback has run.
type counter struct{ n *atomic.Int64 }

func (c counter) OnConsume(*sarama.ConsumerMessage) { c.n.Add(1) }

// TestAdv18cGokaBufferHoldsTenOversizedRecords: broken promise of
// docs/configuration.md ("Memory", records fetched ahead of the callbacks):
// "Records over --max-payload that others write to chronos-jobs ... are held
// 3 at a time before being rejected: 2.8 MiB per partition", and the sizing
// formula's term P × 3 × (--fetch-buffer-bytes + 1 MiB). The count of 3 is
// sarama's channel only: behind it every goka processor has its own
// per-partition channel of 10 records (goka's defaultPartitionChannelSize,
// which Chronos does not set), plus one record in ConsumeClaim's hand and one
// in sarama's feeder. While a partition's callback is busy (a fan-out runs
// up to --fanout-budget), anyone with Write on chronos-jobs fills all of them
// with ~1 MB records: ~15 MiB per partition and consumer instead of 5, so
// 12 partitions hold ~180 MiB in the scheduler alone (and as much again in
// the history group, which reads chronos-jobs and chronos-results).
//
// The processor here is a goka group on chronos-jobs with exactly the
// options every instance group gets (clients.Config.GokaProcessorOptions,
// ConsumerFetchBuffer's count); its callback blocks on the first record, as
// a busy fan-out callback does.
//
// Run: go test -tags adversary18c -count=1 -run TestAdv18c ./instance/
func TestAdv18cGokaBufferHoldsTenOversizedRecords(t *testing.T) {
	const recordBytes = 990_000
	tenv := testenv.New(t, 1)
	cfg := instance.Default()
	cfg.Layout = tenv.Layout
	kc := tenv.Kafka
	var err error
	kc.FetchBuffer, err = instance.ConsumerFetchBuffer(context.Background(), cfg, kadm.NewClient(tenv.Client))
	require.NoError(t, err)
	kc.FetchBytes = cfg.FetchBufferBytes

	const n = 40
	big := make([]byte, recordBytes)
	for j := range big {
		big[j] = 'a' + byte(j%26)
	}
	payload := []byte(`"` + string(big) + `"`)
	var size int
	for i := range n {
		id := fmt.Sprintf("oversized-%03d", i)
		put := testenv.PutCommand(id, codecs.JobDef{Cron: "0 0 1 1 *", Payload: payload})
		size = len(put)
		tenv.ProduceMany(string(tenv.Layout.Jobs()), []string{id}, [][]byte{put}, time.Now())
	}
	big, payload = nil, nil

	var fetched, entered atomic.Int64
	release := make(chan struct{})
	sc := kc.Sarama()
	sc.Consumer.Interceptors = append(sc.Consumer.Interceptors, counter{&fetched})
	g := goka.DefineGroup(goka.Group(tenv.Layout.Prefix+"adv18c"),
		goka.Input(goka.Stream(tenv.Layout.Jobs()), new(codec.Bytes), func(goka.Context, any) {
			entered.Add(1)
			<-release // a busy callback
		}))
	opts := append(kc.GokaProcessorOptions(), goka.WithConsumerGroupBuilder(goka.ConsumerGroupBuilderWithConfig(sc)))
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	p, err := goka.NewProcessor(kc.Brokers, g, opts...)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() { close(release); cancel(); <-done }()

	// Wait until the buffers are full: the count stops growing.
	last, same := int64(-1), 0
	testenv.Eventually(t, 2*time.Minute, func() error {
		got := fetched.Load()
		if got == last && entered.Load() == 1 {
			same++
		} else {
			last, same = got, 0
		}
		if same < 6 {
			return fmt.Errorf("%d records fetched, %d callbacks entered", got, entered.Load())
		}
		return nil
	})
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	held := int(fetched.Load()) * size
	bound := cfg.FetchBufferBytes + 1<<20
	t.Logf("one partition, callback busy: %d records of %d bytes held ahead of it (sarama's channel: %d): %.1f MiB; heap grew %.1f MiB; documented bound %.1f MiB",
		fetched.Load(), size, kc.FetchBuffer, float64(held)/(1<<20), (float64(after.HeapAlloc)-float64(before.HeapAlloc))/(1<<20), float64(bound)/(1<<20))
	require.LessOrEqual(t, held, bound, "a goka consumer holds more than --fetch-buffer-bytes + 1 MiB on one partition")
}

// TestAdv18cStuckPartitionKeepsWholeFetchResponse: broken promise of
// docs/configuration.md (--fetch-buffer-bytes: "each record is copied out of
// its response before it is buffered, so a record waiting in a busy
// partition's buffer holds its own bytes, not the whole response"; Memory:
// "plus the fetch being handed over (sarama's 1 MiB per partition)"). The
// detach interceptor runs in sarama's responseFeeder one record at a time,
// just before that record is sent to the channel: while a partition's
// callback is busy, the feeder is blocked on record i and records i+1.. of
// the response are not yet copied, so they keep the whole fetch response
// alive, with every other partition's records in it (up to
// --fetch-buffer-bytes, 4 MiB), not 1 MiB. Each busy partition can keep a
// response of its own (after MaxProcessingTime the others are fetched
// again without it), so the handover term is P × --fetch-buffer-bytes per
// consumer, not P × 1 MiB.
//
// Worse with small records: the feeder's loop variable keeps the decoded
// *FetchResponse itself (every partition's RecordBatch and Record structs)
// and parseResponse builds a ConsumerMessage for each of the partition's
// records at once, so the live heap is several times the response's wire
// size. Measured on the embedded broker: 5.0 MiB kept for 1000-byte
// records, 19.3 MiB for 10-byte records, by one busy partition of one
// consumer (documented: ~1 MiB); 12 busy partitions and three consumers of
// topics others write can keep several hundred MiB, outside the sizing
// formula.
//
// Four partitions of ~4 MiB of records each (valid-size records: small
// commands from anyone with Write on chronos-jobs); a consumer with the
// instance's sarama configuration drains partitions 1-3 and leaves 0 alone
// (a busy callback). What partition 0 keeps is the live heap then minus the
// live heap once it is drained too.
//
// Run: go test -tags adversary18c -count=1 -run TestAdv18c ./instance/
func TestAdv18cStuckPartitionKeepsWholeFetchResponse(t *testing.T) {
	// Records of 1000 bytes, and of 10 (where sarama's parsed message
	// structs, made for the whole response at once, outweigh the bytes).
	for _, tc := range []struct{ perPart, recordBytes int }{{4400, 1000}, {150_000, 10}} {
		t.Run(fmt.Sprintf("%dB", tc.recordBytes), func(t *testing.T) { stuckPartition(t, tc.perPart, tc.recordBytes) })
	}
}

func stuckPartition(t *testing.T, perPart, recordBytes int) {
	const parts = 4
	tenv := testenv.New(t, parts)
	cfg := instance.Default()
	cfg.Layout = tenv.Layout
	kc := tenv.Kafka
	var err error
	kc.FetchBuffer, err = instance.ConsumerFetchBuffer(context.Background(), cfg, kadm.NewClient(tenv.Client))
	require.NoError(t, err)
	kc.FetchBytes = cfg.FetchBufferBytes
	topic := string(tenv.Layout.Jobs())
	val := make([]byte, recordBytes)
	for j := range val {
		val[j] = 'a' + byte(j%26)
	}
	for p := range parts {
		recs := make([]*kgo.Record, perPart)
		for i := range recs {
			recs[i] = &kgo.Record{Topic: topic, Partition: int32(p), Key: []byte(fmt.Sprintf("k%d-%d", p, i)), Value: val}
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(kc.Brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		require.NoError(t, err)
		require.NoError(t, cl.ProduceSync(context.Background(), recs...).FirstErr())
		cl.Close()
	}

	c, err := sarama.NewConsumer(kc.Brokers, kc.Sarama())
	require.NoError(t, err)
	defer c.Close()
	pcs := make([]sarama.PartitionConsumer, parts)
	for p := range parts {
		pcs[p], err = c.ConsumePartition(topic, int32(p), sarama.OffsetOldest)
		require.NoError(t, err)
		defer pcs[p].AsyncClose()
	}
	drain := func(p int) {
		for n := 0; n < perPart; n++ {
			select {
			case <-pcs[p].Messages():
			case <-time.After(time.Minute):
				panic(fmt.Sprintf("partition %d: %d of %d records", p, n, perPart))
			}
		}
	}
	var wg sync.WaitGroup
	for p := 1; p < parts; p++ {
		wg.Add(1)
		go func() { defer wg.Done(); drain(p) }()
	}
	wg.Wait()
	testenv.Eventually(t, time.Minute, func() error {
		if got := len(pcs[0].Messages()); got < cap(pcs[0].Messages()) {
			return fmt.Errorf("partition 0: %d of %d buffered", got, cap(pcs[0].Messages()))
		}
		return nil
	})
	live := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	stuck := live()
	drain(0)
	drained := live()
	kept := int64(stuck) - int64(drained)
	bound := int64(cap(pcs[0].Messages())*(recordBytes+64) + 1<<20)
	t.Logf("a busy partition with %d buffered records of %d bytes keeps %.2f MiB live (documented: its buffer + 1 MiB = %.2f MiB)",
		cap(pcs[0].Messages()), recordBytes, float64(kept)/(1<<20), float64(bound)/(1<<20))
	require.LessOrEqual(t, kept, bound, "a busy partition keeps more than its records and 1 MiB of fetch")
}

// TestAdv18cHeaderFloodAmplifies: broken promise of docs/configuration.md
// ("Memory": the consumers of topics others write hold --fetch-buffer-bytes
// per partition, counted at max.message.bytes). A record's size on the wire
// says little about its size in sarama: each record header costs 2 bytes on
// the wire (empty key, null value) and a *RecordHeader (pointer + 48-byte
// struct) once decoded. Anyone with Write on chronos-jobs can send records
// of ~1 MB, each with ~400,000 empty headers, all under max.message.bytes;
// the consumer decodes every header of the whole fetch response at once.
//
// A consumer with the instance's sarama configuration reads partition 0 and
// takes nothing (a busy callback); what it keeps is the live heap then
// minus the live heap once it has been drained: 85.5 MiB for 12 such
// records (~9.6 MB on the wire) against 5 MiB documented.
//
// End to end (embedded broker, 12 partitions, 48 records of 400,000 empty
// headers, ~800 kB each, 38 MB in all, sent with franz-go to chronos-jobs):
// `chronos dev` went from 52 MB to 1.99 GB peak RSS and its scheduler group
// was restarted twice (session lost); the same 48 records as plain 800 kB
// values peaked at 132 MB. With the 512 MiB recipe (GOMEMLIMIT=460MiB,
// --no-history) it peaked at 1.19 GB and cycled (RSS up to ~1.1 GB, the
// scheduler group restarted, the records fetched again) with 8 of 48
// records rejected after 70 s: in a 512 MiB pod it is OOM-killed, and
// consumes the same records again on each restart.
//
// Run: go test -tags adversary18c -count=1 -run TestAdv18cHeaderFlood ./instance/
func TestAdv18cHeaderFloodAmplifies(t *testing.T) {
	const records, headers = 12, 400_000
	tenv := testenv.New(t, 1)
	cfg := instance.Default()
	cfg.Layout = tenv.Layout
	kc := tenv.Kafka
	var err error
	kc.FetchBuffer, err = instance.ConsumerFetchBuffer(context.Background(), cfg, kadm.NewClient(tenv.Client))
	require.NoError(t, err)
	kc.FetchBytes = cfg.FetchBufferBytes
	topic := string(tenv.Layout.Jobs())
	hs := make([]kgo.RecordHeader, headers)
	for i := 0; i < records; i++ {
		r := &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("flood-%d", i)), Value: []byte("{}"), Headers: hs}
		require.NoError(t, tenv.Client.ProduceSync(context.Background(), r).FirstErr())
	}
	hs = nil
	live := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	c, err := sarama.NewConsumer(kc.Brokers, kc.Sarama())
	require.NoError(t, err)
	defer c.Close()
	pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
	require.NoError(t, err)
	defer pc.AsyncClose()
	testenv.Eventually(t, 2*time.Minute, func() error {
		if got := len(pc.Messages()); got < cap(pc.Messages()) {
			return fmt.Errorf("%d of %d buffered", got, cap(pc.Messages()))
		}
		return nil
	})
	stuck := live()
	for n := 0; n < records; n++ {
		select {
		case <-pc.Messages():
		case <-time.After(2 * time.Minute):
			t.Fatalf("%d of %d records", n, records)
		}
	}
	drained := live()
	kept := int64(stuck) - int64(drained)
	bound := int64(cfg.FetchBufferBytes + 1<<20)
	t.Logf("one partition, %d records of %d empty headers (~%d kB each on the wire), %d buffered: %.1f MiB kept live (documented: %.1f MiB)",
		records, headers, 2*headers/1000, cap(pc.Messages()), float64(kept)/(1<<20), float64(bound)/(1<<20))
	require.LessOrEqual(t, kept, bound, "header-heavy records held far beyond --fetch-buffer-bytes")
}
