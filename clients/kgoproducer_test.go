package clients_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/chronos-scheduler/chronos/clients"
	"github.com/lovoo/goka"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKgoProducerAsGokas emits seeded random records (keys, values,
// tombstones, headers) through KgoProducerBuilder's producer, then reads the
// topic back: every promise finished with its record's partition and offset,
// each record landed on the partition goka's sarama partitioner puts the key on
// (a goka table's changelog must hold a key where its processor's
// partition is), with its value, nil for a tombstone, and its headers; and
// Close waited for every record still in flight.
func TestKgoProducerAsGokas(t *testing.T) {
	const topic, partitions = "kgo-goka", 12
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic))
	require.NoError(t, err)
	defer kc.Close()
	cfg := clients.Default(kc.ListenAddrs()...)
	mine, err := cfg.KgoProducerBuilder()(cfg.Brokers, "kgo-test", goka.DefaultHasher())
	require.NoError(t, err)

	type sent struct {
		key     string
		value   []byte
		headers goka.Headers
		msg     *sarama.ProducerMessage
		err     error
	}
	r := rand.New(rand.NewPCG(15, 51))
	var mu sync.Mutex
	var wg sync.WaitGroup
	var recs []*sent
	wantPartition := map[string]int32{}
	for i := range 2000 {
		s := &sent{key: fmt.Sprintf("job-%d-%x", i, r.Uint64())}
		if r.IntN(5) > 0 {
			s.value = fmt.Appendf(nil, "v%d", i)
		}
		if r.IntN(3) == 0 {
			s.headers = goka.Headers{"chronos-actor": []byte("a"), fmt.Sprint("h", i%3): []byte{byte(i)}}
		}
		recs = append(recs, s)
		wg.Add(1)
		mine.EmitWithHeaders(topic, s.key, s.value, s.headers).ThenWithMessage(func(msg *sarama.ProducerMessage, err error) {
			mu.Lock()
			s.msg, s.err = msg, err
			mu.Unlock()
			wg.Done()
		})
	}
	require.NoError(t, mine.Close(), "Close waits for what is in flight")
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(10 * time.Second):
		t.Fatal("promises left unfinished after Close")
	}
	// the partition goka's sarama partitioner picks for each key
	part := sarama.NewCustomHashPartitioner(goka.DefaultHasher())(topic)
	for _, s := range recs {
		p, err := part.Partition(&sarama.ProducerMessage{Key: sarama.StringEncoder(s.key)}, partitions)
		require.NoError(t, err)
		wantPartition[s.key] = p
		require.NoError(t, s.err, s.key)
		require.Equal(t, p, s.msg.Partition, "key %s", s.key)
	}
	// read back
	c, err := cfg.NewKgo(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	got := map[string]*kgo.Record{}
	for len(got) < len(recs) {
		fs := c.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "read %d of %d", len(got), len(recs))
		fs.EachRecord(func(rec *kgo.Record) { got[string(rec.Key)] = rec })
	}
	for _, s := range recs {
		rec := got[s.key]
		require.NotNil(t, rec, s.key)
		require.Equal(t, wantPartition[s.key], rec.Partition, s.key)
		require.Equal(t, s.msg.Offset, rec.Offset, s.key)
		if s.value == nil {
			require.Nil(t, rec.Value, "a tombstone stays null: %s", s.key)
		} else {
			require.Equal(t, string(s.value), string(rec.Value))
		}
		h := goka.Headers{}
		for _, rh := range rec.Headers {
			h[rh.Key] = rh.Value
		}
		if len(s.headers) == 0 {
			require.Empty(t, h)
		} else {
			require.Equal(t, s.headers, h)
		}
	}
}
