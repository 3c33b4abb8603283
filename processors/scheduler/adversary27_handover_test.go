package scheduler

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/store"
)

// adv27Keys are the jobs of adv27Run.
func adv27Keys(n int) []string {
	var keys []string
	for i := range n {
		keys = append(keys, fmt.Sprintf("j%03d", i))
	}
	return keys
}

// adv27Phase says where the pass stands on h's store: "restore" while
// restoreCuts has entries left, "rederive" once rederive has yielded,
// "loop" between two callbacks of the fan-out of a pass this store
// inherited, once the restore is done. Since the restore moves the
// entries the pass handled through its T (round 27's fix), the rederive
// of adv27Run's passes has nothing to move and never yields: "loop" is
// where commands and advances meet the new owner between callbacks.
func adv27Phase(h *partitionHarness) string {
	if _, pending := h.s.passes.restoreFrom(0); pending && !h.shard().PassAt.IsZero() {
		return "restore"
	}
	if h.shard().Advancing.IsZero() {
		return ""
	}
	if after := h.s.passes.rederiveFrom(0); after != (store.Due{}) {
		return "rederive"
	}
	h.s.passes.mu.Lock()
	cur := h.s.passes.by[0]
	h.s.passes.mu.Unlock()
	if cur.inherited && cur.restored {
		return "loop"
	}
	return ""
}

// adv27Run: n jobs every 20s (cuts: every other one every 1s fire_all with
// a 200-byte payload, cut after 2 fires), the pass to base+20s, a clean
// handover once the cursor is past j140, and hook called after every
// loopback delivered with the phase (it may hand over again, or apply
// commands). Then two more advances. Returns fired.
func adv27Run(t *testing.T, n int, cuts, handover bool, hook func(h *partitionHarness, phase string)) (*partitionHarness, map[string][]string) {
	h := adv24Harness(t)
	keys := adv27Keys(n)
	for i, k := range keys {
		def := `{"every":"20s"}`
		if cuts && i%2 == 1 {
			def = `{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"p":"` + strings.Repeat("x", 200) + `"}}`
		}
		h.command(k, adv24Base, `{"v":1,"op":"put","job":`+def+`}`)
	}
	h.drain()
	T := adv24Base.Add(20 * time.Second)
	h.advance(T)
	for steps := 0; len(h.loops) > 0; steps++ {
		require.Less(t, steps, 100000)
		if sh := h.shard(); handover && sh.PassAt.Equal(T) && sh.PassKey > "j140" {
			adv24Restore(h, keys...)
			handover = false
		}
		l := h.loops[0]
		h.loops = h.loops[1:]
		h.deliver(h.s.onLoop, h.s.cfg.Layout.SchedulerLoop(), l.Key, h.now, l.Value)
		if hook != nil && !handover {
			hook(h, adv27Phase(h))
		}
	}
	for _, at := range []time.Time{T.Add(20 * time.Second), T.Add(40 * time.Second)} {
		h.advance(at)
		h.drain()
	}
	return h, h.fired()
}

func adv27Dups(fired map[string][]string) []string {
	var d []string
	for id, ps := range fired {
		if len(ps) > 1 {
			d = append(d, id)
		}
	}
	sort.Strings(d)
	return d
}

func adv27RequireDerived(t *testing.T, h *partitionHarness) {
	t.Helper()
	kept, err := dueEntries(h.st)
	require.NoError(t, err)
	indexed, err := h.st.IndexedUpTo()
	require.NoError(t, err)
	require.NoError(t, h.st.RebuildIndexes(indexed))
	rebuilt, err := dueEntries(h.st)
	require.NoError(t, err)
	require.Equal(t, rebuilt, kept, "the due index is not the one a rebuild gives")
}

// TestAdv27SecondHandover: a second clean handover while the new owner
// restores, or between two callbacks of its fan-out: after the first
// callback in that phase and after the last.
func TestAdv27SecondHandover(t *testing.T) {
	for _, cuts := range []bool{false, true} {
		for _, at := range []string{"restore", "loop"} {
			in := 0 // callbacks in phase at, without the second handover
			adv27Run(t, 200, cuts, true, func(h *partitionHarness, phase string) {
				if phase == at {
					in++
				}
			})
			require.Positive(t, in, "cuts=%v: no callback in phase %s", cuts, at)
			for _, nth := range slices.Compact([]int{1, in}) {
				t.Run(fmt.Sprintf("cuts=%v/%s/%d", cuts, at, nth), func(t *testing.T) {
					_, ctrl := adv27Run(t, 200, cuts, false, nil)
					seen, done := 0, false
					var phases []string
					h, got := adv27Run(t, 200, cuts, true, func(h *partitionHarness, phase string) {
						phases = append(phases, phase)
						if phase == at && !done {
							seen++
							if seen == nth {
								adv24Restore(h, adv27Keys(200)...)
								done = true
							}
						}
					})
					t.Logf("phases: %v", strings.Join(phases, ","))
					if !done {
						t.Fatalf("no %d-th callback in phase %s", nth, at)
					}
					require.Empty(t, adv24Missing(ctrl, got), "lost")
					h.requireOnePayload()
					if !cuts {
						require.Empty(t, adv27Dups(got), "repeated after clean handovers")
					}
					adv27RequireDerived(t, h)
				})
			}
		}
	}
}
