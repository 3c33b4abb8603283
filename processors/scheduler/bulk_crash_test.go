package scheduler

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestBulkChunkCommandsSurviveALostEmit: goka writes a callback's table
// changes (its changelog) and what it emits independently, so a process
// killed in between can leave a bulk step recorded in the shard record and
// the step's commands never written. The redelivered continuation then
// finds its step taken. Here every chunk's goka emits are lost (the
// harness keeps loopbacks only) and a continuation is delivered twice
// (the redelivery after the kill; up to 3 a walk), for seeded walks of 1-3 keys a chunk:
// every job of the bucket must still get its pause command, with the
// version the walk saw. Before the commands went through the Producer
// (acknowledged before the table write), TestBulkKill9Finishes lost 2 of
// 3000 in CI this way; here it lost every one.
func TestBulkChunkCommandsSurviveALostEmit(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0))
			h := newPartitionHarness(t, 1+rng.IntN(3), t0)
			h.advance(t0)
			n := 5 + rng.IntN(20)
			want := map[string]bool{}
			for i := range n {
				id := fmt.Sprintf("j%02d", i)
				bucket := "b"
				if rng.IntN(4) == 0 {
					bucket = "other"
				} else {
					want[id] = true
				}
				h.command(id, t0, fmt.Sprintf(`{"v":1,"op":"put","job":{"cron":"0 0 1 1 *","bucket":%q}}`, bucket))
			}
			h.bucketTrigger(codecs.ShardTrigger{Kind: codecs.KindBulk, T: t0, Op: codecs.BulkPause, Bucket: "b", TriggerID: "p1"})
			crashes := 0 // each leaves a spare continuation in flight until the walk ends
			for steps := 0; len(h.loops) > 0; steps++ {
				require.Less(t, steps, 8*n, "the walk does not end")
				l := h.loops[0]
				h.loops = h.loops[1:]
				h.deliver(h.s.onLoop, h.s.cfg.Layout.SchedulerLoop(), l.Key, h.now, l.Value)
				if crashes < 3 && rng.IntN(3) == 0 {
					crashes++
					h.deliver(h.s.onLoop, h.s.cfg.Layout.SchedulerLoop(), l.Key, h.now, l.Value)
				}
			}
			got := map[string]bool{}
			for _, m := range h.prod.msgs {
				if m.Headers[codecs.BulkHeader] == nil {
					continue
				}
				cmd, err := codecs.DecodeCommand([]byte(m.Key), m.Value, codecs.DefaultLimits())
				require.NoError(t, err)
				require.Equal(t, "pause", cmd.Op)
				require.NotNil(t, cmd.IfVersion)
				got[m.Key] = true
			}
			require.Equal(t, want, got, "every job of the bucket gets its pause command, whatever emits were lost")
			raw, err := h.st.Get(h.shardKey())
			require.NoError(t, err)
			q := h.s.decodeShardBulk(h.shardKey(), raw).Bulk.Queue
			require.Len(t, q, 1)
			require.True(t, q[0].Walked, "the walk is done, its barrier sent")
		})
	}
}
