package processors_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/processors/scheduler"
	"github.com/chronos-scheduler/chronos/schedule"
	"github.com/chronos-scheduler/chronos/testenv"
)

// batchRecorder passes batches to the real producer and records the
// largest one in bytes and how many there were.
type batchRecorder struct {
	scheduler.Producer
	mu       sync.Mutex
	batches  int
	maxBytes int
}

func (r *batchRecorder) ProduceSync(ctx context.Context, topic string, msgs []scheduler.Msg) error {
	size := 0
	for _, m := range msgs {
		size += len(m.Value)
	}
	r.mu.Lock()
	r.batches++
	r.maxBytes = max(r.maxBytes, size)
	r.mu.Unlock()
	return r.Producer.ProduceSync(ctx, topic, msgs)
}

// TestFanOutIsBoundedByChunkBytes registers payload-heavy jobs that owe
// many catch-up fires (fire_all, every fire within the grace) and a bucket
// fired with a large override payload, with a 16 KiB chunk byte budget:
// every owed fire is dispatched exactly once, in many produce batches, and
// no batch is larger than the budget plus one event.
func TestFanOutIsBoundedByChunkBytes(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 2)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	rec := &batchRecorder{Producer: scheduler.KgoProducer{Client: env.Client}}
	cfg := env.Config()
	cfg.Fanout.ChunkBytes = 16 << 10
	cfg.Producer = rec
	env.Start(cfg)

	t0 := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	put := t0.Add(-10 * time.Minute)
	payload := func(n int) []byte { return []byte(`"` + strings.Repeat("x", n) + `"`) }
	want := map[string]bool{}
	largest := 0
	for i := range 14 {
		id := fmt.Sprintf("heavy-%02d", i)
		size := 100 + i*i*120 // up to ~20 KiB: larger than the budget
		if i == 13 {
			size = 20 << 10
		}
		largest = max(largest, size)
		def := codecs.JobDef{Every: fmt.Sprintf("%ds", 1+i%5), MisfirePolicy: codecs.MisfireFireAll, MisfireGrace: "2h", Payload: payload(size)}
		env.Put(id, def, put)
		s, err := schedule.Parse(schedule.Spec{Every: time.Duration(1+i%5) * time.Second})
		require.NoError(t, err)
		for at := s.Next(put); !at.After(t0); at = s.Next(at) {
			want[codecs.ScheduledFireID(id, at)] = true
		}
	}
	for i := range 60 {
		id := fmt.Sprintf("member-%02d", i)
		env.Put(id, codecs.JobDef{Cron: "0 0 1 1 *", Bucket: "big"}, put)
		want[codecs.TriggeredFireID(id, "b-1")] = true
	}
	env.WaitApplied()
	trig, err := codecs.EncodeBucketTrigger(codecs.BucketTrigger{Bucket: "big", TriggerID: "b-1", Payload: payload(3000)})
	require.NoError(t, err)
	env.Produce(string(env.Layout.BucketTriggers()), "big", trig, t0)
	env.Tick(t0)

	dispatch.WaitLen(t, len(want), 5*time.Minute) // generous: the race detector on a shared 2-core machine
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.ShardTriggers()), time.Minute)
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)
	seen := map[string]int{}
	for _, d := range dispatch.Dispatches(t) {
		seen[d.FireID]++
		require.True(t, want[d.FireID], "unexpected fire %s", d.FireID)
	}
	for id := range want {
		require.Equal(t, 1, seen[id], "fire %s", id)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	t.Logf("%d fires in %d batches, largest %d bytes", len(want), rec.batches, rec.maxBytes)
	require.Greater(t, rec.batches, len(want)/100, "the fan-out was cut into byte-bounded batches")
	require.LessOrEqual(t, rec.maxBytes, cfg.Fanout.ChunkBytes+largest+512, "a batch is at most the budget plus one event")
}
