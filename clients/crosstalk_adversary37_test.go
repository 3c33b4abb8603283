package clients

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/lovoo/goka/storage"
	"github.com/stretchr/testify/require"
)

// otherStoreFails is a healthy goka storage: its Set always succeeds, but
// while it runs another store of the same instance (sharing the counter)
// fails a write, as store.Store's countFailed would count it.
type otherStoreFails struct {
	storage.Storage
	failed *atomic.Uint64
}

func (s otherStoreFails) Set(key string, value []byte) error {
	err := s.Storage.Set(key, value)
	s.failed.Add(1) // another store's failure, at the same moment
	return err
}

// TestAdversary37HealthyWriteOnLiveContextGoesOn: a write that succeeds on
// a live context, in a group whose stores are all healthy, goes on even
// when another store of the instance failed meanwhile (adversary round 37:
// StrictTableWrites took it as failed, and the healthy processor stopped);
// its input is committed.
func TestAdversary37HealthyWriteOnLiveContextGoesOn(t *testing.T) {
	const in, group = "xt-in", "xt-group"
	kc, cl := oneRecordFor(t, in, group)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var after, live atomic.Bool
	graph := goka.DefineGroup(group,
		goka.Input(in, new(codec.String), func(gctx goka.Context, _ any) {
			live.Store(gctx.Context().Err() == nil)
			gctx.SetValue("written")
			after.Store(true)
		}),
		goka.Persist(new(codec.String)),
	)
	var failed atomic.Uint64
	var mem storage.Storage
	all := append(Default(kc.ListenAddrs()...).GokaProcessorOptions(), StrictTableWrites(&failed),
		goka.WithStorageBuilder(func(topic string, partition int32) (storage.Storage, error) {
			st, err := storage.MemoryBuilder()(topic, partition)
			mem = st
			return otherStoreFails{Storage: st, failed: &failed}, err
		}))
	p, err := goka.NewProcessor(kc.ListenAddrs(), graph, all...)
	require.NoError(t, err)
	runErr := make(chan error, 1)
	go func() { runErr <- p.Run(ctx) }()
	var rerr error
	deadline := time.Now().Add(20 * time.Second)
	for !after.Load() || committedOffset(t, cl, group, in) < 1 {
		if time.Now().After(deadline) {
			break
		}
		select {
		case rerr = <-runErr:
			t.Fatalf("the processor stopped: %v", rerr)
		case <-time.After(50 * time.Millisecond):
		}
	}
	cancel()
	rerr = <-runErr
	t.Logf("context live at the write: %v; callback went on after SetValue: %v; Run error: %v", live.Load(), after.Load(), rerr)
	if mem != nil {
		v, _ := mem.Get("k")
		t.Logf("the healthy store holds k=%q", v)
	}
	committed := committedOffset(t, cl, group, in)
	t.Logf("committed offset: %d", committed)
	require.True(t, live.Load())
	require.True(t, after.Load(), "the successful write on a live context stopped its callback")
	require.Equal(t, int64(1), committed, "its input is committed")
	require.False(t, errors.Is(rerr, ErrWriteFailed), "the healthy processor failed: %v", rerr)
}
