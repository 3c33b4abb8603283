package clients_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chronos-scheduler/chronos/clients"
)

// adv48Cluster starts a one-broker kfake cluster with topic (partitions)
// whose produce requests are dropped (the connection closed after the
// request was read, no response) while *drop is true: a broker that died
// with the request in flight, or stopped answering.
func adv48Cluster(t *testing.T, topic string, partitions int32, drop *atomic.Bool) *kfake.Cluster {
	t.Helper()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic))
	require.NoError(t, err)
	t.Cleanup(kc.Close)
	kc.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		if drop.Load() {
			return nil, errors.New("adversary48: the broker dropped the produce request"), true
		}
		return nil, nil, false
	})
	return kc
}

type adv48Result struct {
	msg *sarama.ProducerMessage
	err error
	n   int
}

// adv48Emit emits through p and returns a channel that gets the promise's
// result each time the promise finishes.
func adv48Emit(p goka.Producer, topic, key string, value []byte) chan adv48Result {
	ch := make(chan adv48Result, 4)
	var n atomic.Int32
	p.EmitWithHeaders(topic, key, value, nil).ThenWithMessage(func(msg *sarama.ProducerMessage, err error) {
		ch <- adv48Result{msg, err, int(n.Add(1))}
	})
	return ch
}

// TestAdversary48UnansweredRecordFails (fixed): KgoProducerBuilder's doc
// and docs/configuration.md promise that a record without an
// acknowledgement fails after KgoGokaDeliveryTimeout, so goka stops the
// partition and the supervisor restarts it. With the default
// configuration (idempotent, acks=all), a record whose produce request
// reached a broker that then stopped answering was never failed: franz-go
// does not enforce RecordDeliveryTimeout on a batch it is unsure about
// (written, no response), and the promise stayed open as long as the
// broker did not answer. The producer is no longer idempotent, whatever
// the configuration: the record fails (the timeout shortened here).
func TestAdversary48UnansweredRecordFails(t *testing.T) {
	const topic = "adv48-timeout"
	defer func(d time.Duration) { clients.KgoGokaDeliveryTimeout = d }(clients.KgoGokaDeliveryTimeout)
	clients.KgoGokaDeliveryTimeout = 3 * time.Second
	var drop atomic.Bool
	kc := adv48Cluster(t, topic, 3, &drop)
	cfg := clients.Default(kc.ListenAddrs()...)
	p, err := cfg.KgoProducerBuilder()(cfg.Brokers, "adv48", goka.DefaultHasher())
	require.NoError(t, err)
	// warm up: the producer id is assigned and a first record is acknowledged
	r := <-adv48Emit(p, topic, "warm", []byte("v"))
	require.NoError(t, r.err)

	drop.Store(true)
	start := time.Now()
	ch := adv48Emit(p, topic, "job-1", []byte("fold"))
	wait := clients.KgoGokaDeliveryTimeout + 15*time.Second
	var got *adv48Result
	select {
	case r := <-ch:
		got = &r
	case <-time.After(wait):
	}
	// let the record through so the producer can be closed
	drop.Store(false)
	t.Cleanup(func() { go func() { _ = p.Close() }() })
	if got == nil {
		late := <-ch
		t.Fatalf("the promise of a record the broker never acknowledged was still open %s after the emit (KgoGokaDeliveryTimeout %s): "+
			"goka's partition neither failed nor restarted; once the broker answered again it finished after %s with err=%v",
			wait, clients.KgoGokaDeliveryTimeout, time.Since(start).Round(time.Second), late.err)
	}
	require.Error(t, got.err, "finished after %s", time.Since(start))
}

// TestAdversary48HeldKgoRecordTimesOutWithoutIdempotence: with
// --acks leader --idempotent=false the same dropped record fails after
// the delivery timeout (franz-go may fail it), as the doc says.
func TestAdversary48HeldKgoRecordTimesOutWithoutIdempotence(t *testing.T) {
	const topic = "adv48-timeout-noidem"
	defer func(d time.Duration) { clients.KgoGokaDeliveryTimeout = d }(clients.KgoGokaDeliveryTimeout)
	clients.KgoGokaDeliveryTimeout = 3 * time.Second
	var drop atomic.Bool
	kc := adv48Cluster(t, topic, 3, &drop)
	cfg := clients.Default(kc.ListenAddrs()...)
	cfg.Acks, cfg.Idempotent = clients.AcksLeader, false
	require.NoError(t, cfg.Validate())
	p, err := cfg.KgoProducerBuilder()(cfg.Brokers, "adv48", goka.DefaultHasher())
	require.NoError(t, err)
	defer p.Close()
	r := <-adv48Emit(p, topic, "warm", []byte("v"))
	require.NoError(t, r.err)
	drop.Store(true)
	start := time.Now()
	ch := adv48Emit(p, topic, "job-1", []byte("fold"))
	select {
	case r := <-ch:
		require.Error(t, r.err)
		require.Equal(t, 1, r.n)
		t.Logf("failed after %s: %v", time.Since(start).Round(time.Millisecond), r.err)
	case <-time.After(clients.KgoGokaDeliveryTimeout + 15*time.Second):
		drop.Store(false)
		t.Fatal("not failed")
	}
	drop.Store(false)
}

// TestAdversary48HeldPlacementAndOffsetsAcrossSettings: for every
// compression and acks setting the change names (and an empty key), each
// record lands where goka's sarama partitioner puts its key, its promise
// finishes once with that partition and the offset the broker gave it, a
// tombstone stays null; under dropped requests with the idempotent
// producer (retries), the offsets are still the real ones, gapless, with
// no duplicate.
func TestAdversary48HeldPlacementAndOffsetsAcrossSettings(t *testing.T) {
	const partitions = 7
	type setting struct {
		name        string
		compression string
		acks        string
		idem        bool
		dropEvery   int // drop every n-th produce request (retries)
	}
	settings := []setting{
		{"none-all-idem", "none", clients.AcksAll, true, 0},
		{"gzip-all-idem-retries", "gzip", clients.AcksAll, true, 3},
		{"lz4-leader", "lz4", clients.AcksLeader, false, 0},
		{"zstd-leader", "zstd", clients.AcksLeader, false, 0},
		{"snappy-all-idem-retries", "snappy", clients.AcksAll, true, 2},
	}
	for _, s := range settings {
		t.Run(s.name, func(t *testing.T) {
			topic := "adv48-" + s.name
			kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic))
			require.NoError(t, err)
			defer kc.Close()
			var reqs atomic.Int64
			if s.dropEvery > 0 {
				kc.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
					kc.KeepControl()
					if reqs.Add(1)%int64(s.dropEvery) == 0 {
						return nil, errors.New("adversary48: dropped"), true
					}
					return nil, nil, false
				})
			}
			cfg := clients.Default(kc.ListenAddrs()...)
			cfg.Compression, cfg.Acks, cfg.Idempotent = s.compression, s.acks, s.idem
			require.NoError(t, cfg.Validate())
			p, err := cfg.KgoProducerBuilder()(cfg.Brokers, "adv48", goka.DefaultHasher())
			require.NoError(t, err)
			part := sarama.NewCustomHashPartitioner(goka.DefaultHasher())(topic)
			const n = 600
			type sent struct {
				key   string
				value []byte
				res   chan adv48Result
			}
			var all []sent
			for i := range n {
				key := fmt.Sprintf("job-%d", i)
				if i == 0 {
					key = ""
				}
				var v []byte
				if i%5 != 0 {
					v = []byte(strings.Repeat("x", i%300))
				}
				all = append(all, sent{key, v, adv48Emit(p, topic, key, v)})
			}
			require.NoError(t, p.Close())
			byPart := map[int32]map[int64]string{}
			for _, s := range all {
				var r adv48Result
				select {
				case r = <-s.res:
				case <-time.After(30 * time.Second):
					t.Fatalf("promise of %q unfinished", s.key)
				}
				require.NoError(t, r.err, s.key)
				want, err := part.Partition(&sarama.ProducerMessage{Key: sarama.StringEncoder(s.key)}, partitions)
				require.NoError(t, err)
				require.Equal(t, want, r.msg.Partition, "key %q", s.key)
				if byPart[want] == nil {
					byPart[want] = map[int64]string{}
				}
				_, dup := byPart[want][r.msg.Offset]
				require.False(t, dup, "two records reported at %d/%d", want, r.msg.Offset)
				byPart[want][r.msg.Offset] = s.key
			}
			// read back: the reported offsets are the records' offsets
			c, err := cfg.NewKgo(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			require.NoError(t, err)
			defer c.Close()
			ctx := t.Context()
			got := 0
			deadline := time.Now().Add(20 * time.Second)
			for got < n && time.Now().Before(deadline) {
				fs := c.PollRecords(ctx, 1000)
				fs.EachRecord(func(rec *kgo.Record) {
					got++
					key, ok := byPart[rec.Partition][rec.Offset]
					require.True(t, ok, "record at %d/%d not reported by any promise", rec.Partition, rec.Offset)
					require.Equal(t, key, string(rec.Key))
				})
			}
			require.Equal(t, n, got, "records in the topic (duplicates or losses)")
			if s.dropEvery > 0 {
				require.Positive(t, reqs.Load())
			}
			for _, s := range all {
				select {
				case r := <-s.res:
					t.Fatalf("promise of %q finished twice (%d)", s.key, r.n)
				default:
				}
			}
		})
	}
}

// TestAdversary48HeldNoGoroutineLeakPerProducer builds, uses and closes
// producers as the supervisor's restarts do: no goroutines are left.
func TestAdversary48HeldNoGoroutineLeakPerProducer(t *testing.T) {
	const topic = "adv48-leak"
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, topic))
	require.NoError(t, err)
	defer kc.Close()
	cfg := clients.Default(kc.ListenAddrs()...)
	round := func() {
		p, err := cfg.KgoProducerBuilder()(cfg.Brokers, "adv48", goka.DefaultHasher())
		require.NoError(t, err)
		var wg sync.WaitGroup
		for i := range 50 {
			wg.Add(1)
			p.Emit(topic, fmt.Sprint(i), []byte("v")).Then(func(err error) { require.NoError(t, err); wg.Done() })
		}
		wg.Wait()
		require.NoError(t, p.Close())
	}
	round()
	time.Sleep(200 * time.Millisecond)
	base := runtime.NumGoroutine()
	for range 20 {
		round()
	}
	var now int
	for range 50 {
		time.Sleep(100 * time.Millisecond)
		if now = runtime.NumGoroutine(); now <= base+2 {
			return
		}
	}
	buf := make([]byte, 1<<20)
	t.Fatalf("goroutines %d after 20 producers, %d before\n%s", now, base, buf[:runtime.Stack(buf, true)])
}
