package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestAdv27AdvancesDuringRestore: advances from the trigger topic (n of
// them, one a second after T; 61 of them resend the continuation) and the
// advance to T delivered again, between two callbacks of the new owner's
// restore or fan-out.
func TestAdv27AdvancesDuringRestore(t *testing.T) {
	T := adv24Base.Add(20 * time.Second)
	// Every case but under -race -short, where a fifth of them run (306 s
	// for all 40 under the race detector, 2026-12-03).
	m := matrixShare{every: 1, short: 1, raceShort: 5}
	defer m.flush(t)
	for _, cuts := range []bool{false, true} {
		for _, phaseAt := range []string{"loop", "restore"} {
			for _, n := range []int{0, 3, 61, 62, 125} {
				for _, again := range []bool{false, true} {
					m.run(t, fmt.Sprintf("cuts=%v/%s/n=%d/again=%v", cuts, phaseAt, n, again), func(t *testing.T) {
						apply := func(h *partitionHarness) {
							if again {
								h.deliver(h.s.onTrigger, h.s.cfg.Layout.ShardTriggers(), h.shardKey(), T, codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: T}))
							}
							for i := 1; i <= n; i++ {
								at := T.Add(time.Duration(i) * 100 * time.Millisecond)
								h.now = at
								h.deliver(h.s.onTrigger, h.s.cfg.Layout.ShardTriggers(), h.shardKey(), at, codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: at}))
							}
						}
						applied := false
						_, ctrl := adv27Run(t, 200, cuts, false, func(h *partitionHarness, phase string) {
							if !applied && h.shard().Watermark.Equal(T) {
								apply(h)
								applied = true
							}
						})
						applied = false
						var phases []string
						h, got := adv27Run(t, 200, cuts, true, func(h *partitionHarness, phase string) {
							phases = append(phases, phase)
							if !applied && phase == phaseAt {
								apply(h)
								applied = true
							}
						})
						require.True(t, applied)
						h.requireOnePayload()
						onlyCtrl, onlyGot := adv27Diff(ctrl, got)
						require.Empty(t, onlyCtrl, "fires of the control lost (only got: %v)", onlyGot)
						if !cuts {
							require.Empty(t, adv27Dups(got), "repeated after a clean handover")
						}
						require.True(t, h.shard().Advancing.IsZero(), "a pass stuck: %+v", h.shard())
						adv27RequireDerived(t, h)
					})
				}
			}
		}
	}
}
