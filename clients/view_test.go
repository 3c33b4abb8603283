package clients

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
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestViewReadsWhileItStops: Recovered and Get may be called while Run
// returns. goka's View.Run sets its partitions to nil when it closes,
// without a lock, while Recovered and Get read them (adversary round 56:
// the race detector caught the clock table view's Ready polled while an
// instance stopped during its start). Readers poll without pause while
// the view recovers, runs and stops, at several moments: under -race a
// read overlapping goka's close fails the test. After Run returned,
// Recovered is false and Get returns ErrViewClosed.
func TestViewReadsWhileItStops(t *testing.T) {
	const topic = "view-table"
	cfg := viewTopic(t, topic)
	for _, stopAfter := range []time.Duration{0, 5 * time.Millisecond, 50 * time.Millisecond, 500 * time.Millisecond} {
		v, err := NewView(cfg.Brokers, goka.Table(topic), new(codec.Bytes), storage.MemoryBuilder(),
			append(cfg.GokaViewOptions(), goka.WithViewAutoReconnect())...)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		var stop atomic.Bool
		var reads atomic.Int64
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					v.Recovered()
					_, _ = v.Get("k1") // goka's error before it runs, ErrViewClosed after
					reads.Add(1)
				}
			}()
		}
		done := make(chan error, 1)
		go func() { done <- v.Run(ctx) }()
		time.Sleep(stopAfter)
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return")
		}
		stop.Store(true)
		wg.Wait()
		require.Positive(t, reads.Load())
		require.False(t, v.Recovered(), "stopped after %s", stopAfter)
		_, err = v.Get("k1")
		require.ErrorIs(t, err, ErrViewClosed)
	}
}

// viewTopic starts an embedded broker with topic (4 partitions) holding
// 200 records, keys k0..k199, and returns a Config for it; it closes
// with the test.
func viewTopic(t *testing.T, topic string) Config {
	t.Helper()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, topic))
	require.NoError(t, err)
	t.Cleanup(kc.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...), kgo.DefaultProduceTopic(topic))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	for i := range 200 {
		require.NoError(t, cl.ProduceSync(context.Background(), &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: []byte("v")}).FirstErr())
	}
	return Default(kc.ListenAddrs()...)
}
