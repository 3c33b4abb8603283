package router

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/tester"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/topology"
)

// TestRouterSendsEachTriggerToEveryShard drives the router group on goka's
// tester (no broker) with generated bucket triggers, valid and not: each
// valid one becomes one "fire bucket" shard trigger per partition, carrying
// the bucket, the trigger id (derived from the record's position when
// absent), the payload and the record's time; each invalid one (junk, a
// tombstone, a bucket that is too long or empty, a payload over the limit)
// becomes one reject and nothing else.
func TestRouterSendsEachTriggerToEveryShard(t *testing.T) {
	for seed := int64(1); seed <= 10; seed++ {
		rng := rand.New(rand.NewSource(seed))
		layout := topology.Layout{Partitions: int32(1 + rng.Intn(8)), Replication: -1}
		lim := codecs.DefaultLimits()
		lim.MaxPayload = 256
		r, err := New(Config{Layout: layout, Limits: lim, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		require.NoError(t, err)
		tt := tester.New(t)
		p, err := goka.NewProcessor(nil, r.Graph(), goka.WithTester(tt), goka.WithNilHandling(goka.NilProcess)) // as the instance runs it
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()

		shards := tt.NewQueueTracker(string(layout.ShardTriggers()))
		rejects := tt.NewQueueTracker(string(layout.Rejects()))
		keys, err := topology.ShardKeys(layout.Partitions)
		require.NoError(t, err)
		in := string(layout.BucketTriggers())
		ts := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		for i := 0; i < 100; i++ {
			ts = ts.Add(time.Duration(rng.Intn(5000)) * time.Millisecond)
			bucket := fmt.Sprintf("b%d", rng.Intn(5))
			var raw []byte
			valid := true
			bt := codecs.BucketTrigger{Bucket: bucket}
			switch rng.Intn(8) {
			case 0:
				raw, valid = []byte(`{"v":1,"bucket":`), false
			case 1:
				raw, valid = nil, false // a tombstone
			case 2:
				bt.Bucket, valid = "", false
			case 3:
				bt.Payload, valid = []byte(fmt.Sprintf(`"%0300d"`, 1)), false // over MaxPayload
			case 4:
				bt.TriggerID = fmt.Sprintf("run-%d", i)
			case 5:
				bt.Payload = []byte(fmt.Sprintf(`{"n":%d}`, i))
			}
			if raw == nil && (valid || bt.Bucket == "" || bt.Payload != nil) {
				raw, err = codecs.EncodeBucketTrigger(bt)
				require.NoError(t, err)
			}
			offset := int64(i) // one partition on the tester's input queue
			tt.Consume(in, bucket, raw, tester.WithTime(ts))
			if !valid {
				_, _, ok := rejects.Next()
				require.True(t, ok, "seed %d trigger %d (%q): no reject", seed, i, raw)
				_, _, ok = shards.Next()
				require.False(t, ok, "seed %d trigger %d: an invalid trigger reached the shards", seed, i)
				continue
			}
			wantID := bt.TriggerID
			if wantID == "" {
				wantID = fmt.Sprintf("b-0-%d", offset)
			}
			for _, k := range keys {
				key, v, ok := shards.Next()
				require.True(t, ok, "seed %d trigger %d: nothing for %s", seed, i, k)
				require.Equal(t, k, key)
				tr, err := codecs.DecodeShardTrigger(v.([]byte))
				require.NoError(t, err)
				require.Equal(t, codecs.KindBucket, tr.Kind)
				require.Equal(t, bt.Bucket, tr.Bucket)
				require.Equal(t, wantID, tr.TriggerID, "seed %d trigger %d", seed, i)
				require.Equal(t, string(bt.Payload), string(tr.Payload))
				require.True(t, tr.T.Equal(ts), "seed %d trigger %d: T %s, want the record's time %s", seed, i, tr.T, ts)
			}
			_, _, ok := shards.Next()
			require.False(t, ok)
			_, _, ok = rejects.Next()
			require.False(t, ok)
		}
		cancel()
		require.NoError(t, <-done)
	}
}
