package clock

import (
	"context"
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

// startClock runs the clock group on goka's tester (no broker).
func startClock(t *testing.T, cfg Config) (*tester.Tester, *Clock) {
	t.Helper()
	tt := tester.New(t)
	c, err := New(cfg)
	require.NoError(t, err)
	p, err := goka.NewProcessor(nil, c.Graph(), goka.WithTester(tt))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return tt, c
}

// TestClockAnnouncesOnlyForwardAndBounded drives the clock group with
// generated ticks (hosts ahead of and behind the broker, clocks jumping
// back, duplicates, junk) and checks every announcement against a model:
// each tick announces min(tick, broker time + MaxAhead) truncated to the
// resolution if that is after the last announced time, to every shard;
// nothing else is announced; junk is rejected and changes nothing.
func TestClockAnnouncesOnlyForwardAndBounded(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewSource(seed))
		layout := topology.Layout{Partitions: int32(1 + rng.Intn(6)), Replication: -1}
		res := []time.Duration{10 * time.Millisecond, time.Second, 5 * time.Second}[rng.Intn(3)]
		maxAhead := []time.Duration{time.Second, 3 * time.Second, -1}[rng.Intn(3)]
		tt, c := startClock(t, Config{Layout: layout, Resolution: res, MaxAhead: maxAhead, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		triggers := tt.NewQueueTracker(string(layout.ShardTriggers()))
		rejects := tt.NewQueueTracker(string(layout.Rejects()))
		keys, err := topology.ShardKeys(layout.Partitions)
		require.NoError(t, err)

		broker := time.Date(2026, 3, 29, 0, 59, 0, 0, time.UTC)
		var last, dropped time.Time // dropped: the latest tick dropped since the last announcement
		var announcedAt time.Time   // the broker's time of the last announcement
		junk := 0
		for i := 0; i < 200; i++ {
			broker = broker.Add(time.Duration(rng.Intn(1500)) * time.Millisecond)
			if rng.Intn(20) == 0 {
				junk++
				tt.Consume(string(layout.Clock()), TickKey, []byte(`{"time":`), tester.WithTime(broker))
				continue
			}
			skew := time.Duration(rng.Intn(20_000)-8_000) * time.Millisecond
			if rng.Intn(15) == 0 {
				skew = time.Duration(rng.Intn(3)+1) * time.Hour // a host far ahead
			}
			tick := broker.Add(skew)
			tt.Consume(string(layout.Clock()), TickKey, codecs.EncodeInternal(codecs.Tick{Time: tick, Instance: "h"}), tester.WithTime(broker))

			want := tick
			if maxAhead >= 0 && tick.After(broker.Add(maxAhead)) {
				want = broker.Add(maxAhead)
			}
			want = want.Truncate(res).UTC()
			if !want.After(last) {
				_, _, ok := triggers.Next()
				require.False(t, ok, "seed %d tick %d: %s announced nothing new after %s", seed, i, want, last)
				if want.After(dropped) {
					dropped = want
				}
				wantAhead := last.Sub(dropped)
				if !announcedAt.IsZero() && !broker.Before(announcedAt) && broker.Sub(announcedAt) < AheadGrace(res) {
					wantAhead = 0 // announced within the grace: the clock moves
				}
				require.Equal(t, wantAhead, c.Ahead(), "seed %d tick %d: the table is ahead of the latest dropped tick by", seed, i)
				continue
			}
			last, dropped, announcedAt = want, time.Time{}, broker
			require.Zero(t, c.Ahead(), "announcing: nothing ahead")
			for _, k := range keys {
				key, v, ok := triggers.Next()
				require.True(t, ok, "seed %d tick %d: no advance to %s for %s", seed, i, want, k)
				require.Equal(t, k, key)
				tr, err := codecs.DecodeShardTrigger(v.([]byte))
				require.NoError(t, err)
				require.Equal(t, codecs.KindAdvance, tr.Kind)
				require.True(t, tr.T.Equal(want), "seed %d tick %d: announced %s, want %s", seed, i, tr.T, want)
			}
			require.True(t, c.LastAnnounced().Equal(want))
		}
		_, _, ok := triggers.Next()
		require.False(t, ok)
		n := 0
		for {
			if _, _, ok := rejects.Next(); !ok {
				break
			}
			n++
		}
		require.Equal(t, junk, n, "seed %d: every junk tick has its reject", seed)
	}
}
