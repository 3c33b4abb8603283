package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAdv27ResentContinuationCommands: as
// TestAdv27ResentContinuationAfterHandover (R delivered while the new
// owner fans out), with commands on jobs the old owner fired between R's
// cursor and its own: before the handover (on the old owner) and after it
// (on the new one, before R). No fire_id goes out twice (before round
// 27's fix the other jobs between the two cursors repeated, a commanded
// job never did), nor with two payloads.
func TestAdv27ResentContinuationCommands(t *testing.T) {
	T := adv24Base.Add(20 * time.Second)
	for _, when := range []string{"before", "after"} {
		for name, cmds := range adv27Cmds {
			t.Run(when+"/"+name, func(t *testing.T) {
				h, keys, L, R := adv27Resend(t, true)
				pop := func() simOut { return adv27Pop(h) }
				run := func(l simOut) { adv27Deliver(h, l) }
				run(L)
				for h.shard().PassKey <= "j140" {
					run(pop())
				}
				apply := func() {
					for _, k := range []string{"j080", "j120"} {
						for _, c := range cmds {
							h.command(k, h.now, c)
						}
					}
				}
				if when == "before" {
					apply()
				}
				adv24Restore(h, keys...)
				if when == "after" {
					apply()
				}
				held := true
				for steps := 0; len(h.loops) > 0 || held; steps++ {
					require.Less(t, steps, 10000)
					if held && (adv27Phase(h) == "loop" || len(h.loops) == 0) {
						held = false
						run(R)
						continue
					}
					run(pop())
				}
				for _, a := range []time.Time{T.Add(20 * time.Second), T.Add(40 * time.Second)} {
					h.advance(a)
					h.drain()
				}
				h.requireOnePayload()
				got := h.fired()
				for id, ps := range got {
					if len(ps) > 1 && (id[:4] == "j080" || id[:4] == "j120") {
						t.Errorf("commanded job's fire %s went out %d times: %q", id, len(ps), ps)
					}
				}
				require.Empty(t, adv27Dups(got), "repeated after a clean handover")
				for _, k := range []string{"j080", "j120"} {
					for id := range got {
						if id[:4] == k {
							t.Logf("%s: %q", id, got[id])
						}
					}
				}
			})
		}
	}
}
