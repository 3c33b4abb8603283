package clients

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/lovoo/goka/storage"
	"github.com/stretchr/testify/require"
)

// TestViewReadsWhileItFailsAdversary57: clients.View promises "a goka view
// whose Recovered and Get may be called while Run returns". That holds
// only when Chronos cancels the view. When goka's Run returns on its own
// (a storage error: here one partition's storage cannot be opened, as a
// view store whose directory cannot be opened or a full disk), goka's
// deferred close() sets v.partitions = nil inside goka's Run, before
// clients.View.Run reaches markClosing: readers (the /readyz poll, the
// chronos_ready / chronos_history_ready gauges, API reads) still read the
// slice without any exclusion. Under -race this test FAILS with a data
// race between goka's View.close and View.Recovered / View.hash.
//
//	go test -race -count 1 -run TestViewReadsWhileItFailsAdversary57 -timeout 5m ./clients/
//
// Without -race it checks only that Run returns the storage error and that
// the view then refuses reads (both hold). Fixed: View marks itself
// closing when a partition's storage cannot be built or opened, before
// goka sees the error (its guard around the builder).
func TestViewReadsWhileItFailsAdversary57(t *testing.T) {
	const topic = "view-table-fail"
	cfg := viewTopic(t, topic)
	errDisk := errors.New("adversary57: cannot open the partition's store")
	for _, failAfter := range []time.Duration{0, 5 * time.Millisecond, 50 * time.Millisecond} {
		mem := storage.MemoryBuilder()
		builder := func(topic string, partition int32) (storage.Storage, error) {
			if partition == 3 {
				time.Sleep(failAfter)
				return nil, errDisk
			}
			return mem(topic, partition)
		}
		v, err := NewView(cfg.Brokers, goka.Table(topic), new(codec.Bytes), builder,
			append(cfg.GokaViewOptions(), goka.WithViewAutoReconnect())...)
		require.NoError(t, err)
		var stop atomic.Bool
		var reads atomic.Int64
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					v.Recovered()
					_, _ = v.Get("k1")
					reads.Add(1)
				}
			}()
		}
		done := make(chan error, 1)
		go func() { done <- v.Run(context.Background()) }()
		select {
		case err = <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return after its storage failed")
		}
		time.Sleep(5 * time.Millisecond)
		stop.Store(true)
		wg.Wait()
		require.Error(t, err, "failAfter %s", failAfter)
		require.Contains(t, err.Error(), errDisk.Error())
		require.Positive(t, reads.Load())
		require.False(t, v.Recovered())
		require.ErrorIs(t, v.Err(), errDisk, "Err says why the view stopped")
		_, err = v.Get("k1")
		require.ErrorIs(t, err, ErrViewClosed)
	}
}
