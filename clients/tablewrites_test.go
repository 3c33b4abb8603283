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
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// failingStore is a goka storage whose Set, once armed, cancels the
// processor (as a rebalance or a fatal error elsewhere in the process
// does), waits until the callback's context is done, and fails (as a full
// disk does).
type failingStore struct {
	storage.Storage
	armed  *atomic.Bool
	fail   bool // false: the armed write succeeds, on a cancelled context
	failed *atomic.Uint64
	cancel context.CancelFunc
	done   <-chan struct{}
}

func (s failingStore) Set(key string, value []byte) error {
	if !s.armed.Load() {
		return s.Storage.Set(key, value)
	}
	s.cancel()
	<-s.done
	if !s.fail {
		return s.Storage.Set(key, value)
	}
	s.failed.Add(1) // as store.Options.FailedWrites counts
	return errors.New("no space left on device")
}

// runFailedWrite runs a goka processor over one record whose table write
// is made while the processor stops, and fails if fail, with
// StrictTableWrites if strict; it returns whether the callback went on
// after the SetValue and the group's committed offset on the input
// afterwards (-1: none).
func runFailedWrite(t *testing.T, strict, fail bool) (wentOn bool, committed int64) {
	const in, group = "strict-in", "strict-group"
	kc, cl := oneRecordFor(t, in, group)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var armed atomic.Bool
	var after atomic.Bool
	var callbackCtx atomic.Pointer[context.Context]
	graph := goka.DefineGroup(group,
		goka.Input(in, new(codec.String), func(gctx goka.Context, _ any) {
			c := gctx.Context()
			callbackCtx.Store(&c)
			armed.Store(true)
			gctx.SetValue("written")
			after.Store(true)
		}),
		goka.Persist(new(codec.String)),
	)
	done := make(chan struct{})
	context.AfterFunc(ctx, func() {
		// the callback's context is derived from the processor's: wait
		// for it to be cancelled too before the write fails
		for {
			if p := callbackCtx.Load(); p != nil && (*p).Err() != nil {
				close(done)
				return
			}
			time.Sleep(time.Millisecond)
		}
	})
	var failed atomic.Uint64
	all := Default(kc.ListenAddrs()...).GokaProcessorOptions()
	if strict {
		all = append(all, StrictTableWrites(&failed))
	}
	all = append(all, goka.WithStorageBuilder(func(topic string, partition int32) (storage.Storage, error) {
		st, err := storage.MemoryBuilder()(topic, partition)
		return failingStore{Storage: st, armed: &armed, fail: fail, failed: &failed, cancel: cancel, done: done}, err
	}))
	p, err := goka.NewProcessor(kc.ListenAddrs(), graph, all...)
	require.NoError(t, err)
	runErr := make(chan error, 1)
	go func() { runErr <- p.Run(ctx) }()
	select {
	case <-runErr:
	case <-time.After(time.Minute):
		t.Fatal("the processor did not stop")
	}
	require.True(t, armed.Load(), "the callback ran")
	return after.Load(), committedOffset(t, cl, group, in)
}

// oneRecordFor starts an embedded broker with topic in and group's table
// (one partition each) and one record "k" on in; both close with the test.
func oneRecordFor(t *testing.T, in, group string) (*kfake.Cluster, *kgo.Client) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, in, group+"-table"))
	require.NoError(t, err)
	t.Cleanup(kc.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	require.NoError(t, cl.ProduceSync(context.Background(), &kgo.Record{Topic: in, Key: []byte("k"), Value: []byte("v")}).FirstErr())
	return kc, cl
}

// committedOffset returns group's committed offset on partition 0 of in
// (-1: none).
func committedOffset(t *testing.T, cl *kgo.Client, group, in string) int64 {
	offs, err := kadm.NewClient(cl).FetchOffsets(context.Background(), group)
	require.NoError(t, err)
	if o, ok := offs.Lookup(in, 0); ok && o.Err == nil {
		return o.At
	}
	return -1
}

// TestTableWriteFailingWhileStoppingLeavesTheInputUncommitted: a table
// write that fails while the partition is stopping stops the callback and
// leaves its input to the next owner. Without StrictTableWrites goka
// (v1.1.16) only records the failure once its context is cancelled: the
// callback goes on, and goka commits the input whose write was lost. A
// write that succeeds on a cancelled context goes on as before.
func TestTableWriteFailingWhileStoppingLeavesTheInputUncommitted(t *testing.T) {
	t.Run("goka alone", func(t *testing.T) {
		wentOn, committed := runFailedWrite(t, false, true)
		require.True(t, wentOn, "goka's Fail returns on a cancelled context (if it stops now, StrictTableWrites' reason is gone)")
		require.Equal(t, int64(1), committed, "goka commits the input whose write failed")
	})
	t.Run("strict", func(t *testing.T) {
		wentOn, committed := runFailedWrite(t, true, true)
		require.False(t, wentOn, "the callback stops at the failed write")
		require.Equal(t, int64(-1), committed, "the input is left uncommitted")
	})
	t.Run("strict, the write succeeds", func(t *testing.T) {
		wentOn, committed := runFailedWrite(t, true, false)
		require.True(t, wentOn, "a write that succeeded on a cancelled context does not stop the callback")
		require.Equal(t, int64(1), committed, "its input is committed")
	})
}
