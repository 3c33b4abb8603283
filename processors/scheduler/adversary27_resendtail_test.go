package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAdv27ResentContinuationDuringRederive: 200 jobs every 20s, the pass
// to T spread over callbacks (1 KiB chunks, 1 ns budget). 61 advances wait
// while its continuation from c1 (past j040) is in flight, the 61st sends
// it again (R, from c1). The first continuation goes on until the pass's
// cursor is past j195 (a few jobs left), then a clean rebalance. The new
// owner gets the continuation first: it restores, fires the last few jobs
// (one chunk), and re-derives the ~196 entries behind the cursor. Before
// the change that was one callback which completed the pass, and R, next,
// found the watermark at T (skip). Now the restore and the rederive take a
// callback per 64 entries, and R, delivered after the first of them (the
// partition's other inputs are meant to run between them), continues from
// c1 over entries the old owner fired, not yet re-derived: it sent them
// again, after a clean rebalance (4-21 repeats, adversary round 27), with
// the same payload. Fixed: the restore moves the entries the pass handled
// through T, before any continuation runs on the new owner.
func TestAdv27ResentContinuationDuringRederive(t *testing.T) {
	T := adv24Base.Add(20 * time.Second)
	for _, after := range []int{1, 2, 3, 4, 5, 6} {
		t.Run(fmt.Sprintf("R after %d callbacks", after), func(t *testing.T) {
			h, keys, L, R := adv27Resend(t, false)
			pop := func() simOut { return adv27Pop(h) }
			run := func(l simOut) { adv27Deliver(h, l) }
			run(L)
			for h.shard().PassKey < "j195" {
				require.Len(t, h.loops, 1)
				run(pop())
			}
			require.False(t, h.shard().Advancing.IsZero())
			adv24Restore(h, keys...) // a clean rebalance: the table as the changelog has it
			for i := 0; i < after && len(h.loops) > 0; i++ {
				run(pop())
			}
			t.Logf("R delivered with the shard at watermark %s, advancing %s", h.shard().Watermark.Format(time.TimeOnly), h.shard().Advancing.Format(time.TimeOnly))
			run(R)
			h.drain()
			for _, a := range []time.Time{T.Add(20 * time.Second), T.Add(40 * time.Second)} {
				h.advance(a)
				h.drain()
			}
			h.requireOnePayload()
			got := h.fired()
			require.Len(t, got, 3*200, "each job at T, T+20s and T+40s")
			dups := adv27Dups(got)
			require.Empty(t, dups, "%d fires sent twice after a clean rebalance", len(dups))
		})
	}
}
