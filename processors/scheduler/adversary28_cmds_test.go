package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var adv28Cmds = map[string][]string{
	"payload":  {`{"v":1,"op":"put","job":{"every":"20s","payload":{"p":"B"}}}`},
	"every7j":  {`{"v":1,"op":"put","job":{"every":"7s","jitter":"2s","payload":{"p":"C"}}}`},
	"cron":     {`{"v":1,"op":"put","job":{"cron":"*/3 * * * * *","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"p":"E"}}}`},
	"pause":    {`{"v":1,"op":"pause"}`},
	"pauseres": {`{"v":1,"op":"pause"}`, `{"v":1,"op":"resume"}`},
	"resume":   {`{"v":1,"op":"resume"}`},
	"delete":   {`{"v":1,"op":"delete"}`},
	"delput":   {`{"v":1,"op":"delete"}`, `{"v":1,"op":"put","job":{"every":"20s","payload":{"p":"D"}}}`},
	"fire":     {`{"v":1,"op":"fire","trigger_id":"t-1"}`},
	"backfill": {`{"v":1,"op":"backfill","from":"2026-03-01T09:59:00Z","to":"2026-03-01T10:00:30Z"}`},
}

// adv28PrePause pauses a few jobs at base+9s, before the pass to base+20s:
// each owes its fires up to its pause (j007: 1s cut; j009: jitter; j011:
// 2s; j013: 1s cut; j008: cron).
func adv28PrePause(h *partitionHarness) {
	for _, k := range []string{"j007", "j008", "j009", "j011", "j013"} {
		h.command(k, adv24Base.Add(9*time.Second), `{"v":1,"op":"pause"}`)
	}
}

// TestAdv28CommandsMix: commands between callbacks of the new owner right
// after a clean handover in the middle of the pass (while it restores, or
// in its fan-out), with the continuation sent twice, on jobs of every kind
// in the mix (some paused before the pass), compared with the same history
// without the handover.
func TestAdv28CommandsMix(t *testing.T) {
	var m matrixShare
	defer m.flush(t)
	keys := []string{"j001", "j002", "j003", "j004", "j005", "j007", "j008", "j009", "j011", "j100", "j118"}
	for _, at := range []int{0, 1, 3} {
		for _, name := range slices.Sorted(maps.Keys(adv28Cmds)) {
			cmds := adv28Cmds[name]
			for _, key := range keys {
				m.run(t, fmt.Sprintf("%d/%s/%s", at, name, key), func(t *testing.T) {
					o := adv28Opts{mix: "mix", n: 120, k1: 2, k2: 60, resend: true, rAt: "loop", pre: adv28PrePause}
					h, ctrl, got, _ := adv28Commanded(t, o, at, key, cmds)
					adv28CheckExcept(t, h, ctrl, got, func(id string) bool {
						return (name == "delete" || name == "delput") && strings.HasPrefix(id, key+"@")
					})
				})
			}
		}
	}
}

// TestAdv28CommandsDuringRestore: 400 jobs every 20s, the handover once
// ~300 entries are behind the cursor, so the new owner's restore takes
// several callbacks; commands between them on a job already restored
// (j010), one not yet (j200, j290), and one past the cursor (j390), the
// continuation sent twice.
func TestAdv28CommandsDuringRestore(t *testing.T) {
	var m matrixShare
	defer m.flush(t)
	for _, at := range []int{0, 1, 2} {
		for _, name := range slices.Sorted(maps.Keys(adv28Cmds)) {
			cmds := adv28Cmds[name]
			for _, key := range []string{"j010", "j200", "j290", "j390"} {
				m.run(t, fmt.Sprintf("%d/%s/%s", at, name, key), func(t *testing.T) {
					o := adv28Opts{mix: "plain", n: 400, k1: 2, k2: 32, resend: true, rAt: "loop"}
					h, ctrl, got, phase := adv28Commanded(t, o, at, key, cmds)
					t.Logf("applied in phase %q", phase)
					adv28CheckExcept(t, h, ctrl, got, func(id string) bool {
						return (name == "delete" || name == "delput") && id == key+"@2026-03-01T10:00:20Z"
					})
				})
			}
		}
	}
}

// TestAdv28CommandsBeforeHandover: commands on the old owner on jobs the
// pass already fired (j010, j150: behind the cursor) or not yet (j390),
// at the pass's time or late (ts before the watermark), then a clean
// handover in the middle of the pass, the continuation sent twice.
func TestAdv28CommandsBeforeHandover(t *testing.T) {
	var m matrixShare
	defer m.flush(t)
	for _, late := range []bool{false, true} {
		for _, name := range slices.Sorted(maps.Keys(adv28Cmds)) {
			cmds := adv28Cmds[name]
			for _, key := range []string{"j010", "j150", "j390"} {
				for _, rAt := range []string{"first", "restore", "loop"} {
					m.run(t, fmt.Sprintf("late=%v/%s/%s/%s", late, name, key, rAt), func(t *testing.T) {
						o := adv28Opts{mix: "plain", n: 400, k1: 2, k2: 32, resend: true, rAt: rAt}
						o.during = func(h *partitionHarness) {
							ts := h.now
							if late {
								ts = adv24Base.Add(-5 * time.Second)
							}
							for _, c := range cmds {
								h.command(key, ts, c)
							}
						}
						_, ctrl := adv28Run(t, o)
						o.handover = true
						h, got := adv28Run(t, o)
						adv28Check(t, h, ctrl, got, false)
					})
				}
			}
		}
	}
}

// TestAdv28PausedDuringRestore: j010, j200, j290 and j390 every 2s
// fire_all, paused at base+9s (each owes its fires up to the pause), among
// 400 jobs every 20s; the handover mid-pass; resume, put, pause again or
// delete between the new owner's restore callbacks.
func TestAdv28PausedDuringRestore(t *testing.T) {
	var m matrixShare
	defer m.flush(t)
	paused := []string{"j010", "j200", "j290", "j390"}
	pre := func(h *partitionHarness) {
		for _, k := range paused {
			h.command(k, adv24Base, `{"v":1,"op":"put","job":{"every":"2s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"q":1}}}`)
			h.command(k, adv24Base.Add(9*time.Second), `{"v":1,"op":"pause"}`)
		}
	}
	cmds := map[string][]string{
		"resume":   {`{"v":1,"op":"resume"}`},
		"payload":  adv28Cmds["payload"],
		"every7j":  adv28Cmds["every7j"],
		"pauseres": {`{"v":1,"op":"resume"}`, `{"v":1,"op":"pause"}`, `{"v":1,"op":"resume"}`},
		"delput":   adv28Cmds["delput"],
		"backfill": adv28Cmds["backfill"],
	}
	for _, at := range []int{0, 1, 2, 5} {
		for _, name := range slices.Sorted(maps.Keys(cmds)) {
			cs := cmds[name]
			for _, key := range paused {
				for _, k2 := range []int{32, 36} {
					m.run(t, fmt.Sprintf("%d/%s/%s/%d", at, name, key, k2), func(t *testing.T) {
						o := adv28Opts{mix: "plain", n: 400, k1: 2, k2: k2, resend: true, rAt: "loop", pre: pre}
						h, ctrl, got, _ := adv28Commanded(t, o, at, key, cs)
						adv28CheckExcept(t, h, ctrl, got, func(id string) bool {
							return name == "delput" && id == key+"@2026-03-01T10:00:20Z"
						})
					})
				}
			}
		}
	}
}

// adv28Commanded runs o without and with the handover, cmds applied to
// key once in each, at the first callback from step at with a pass under
// way; it returns the handover's harness, the fires of both runs and the
// phase (adv27Phase) the handover's run applied them in.
func adv28Commanded(t *testing.T, o adv28Opts, at int, key string, cmds []string) (h *partitionHarness, ctrl, got map[string][]string, phase string) {
	t.Helper()
	applied := false
	o.hook = func(h *partitionHarness, ph string, step int) {
		if !applied && step >= at && !h.shard().Advancing.IsZero() {
			phase = ph
			for _, c := range cmds {
				h.command(key, h.now, c)
			}
			applied = true
		}
	}
	_, ctrl = adv28Run(t, o)
	require.True(t, applied)
	applied = false
	o.handover = true
	h, got = adv28Run(t, o)
	require.True(t, applied)
	return h, ctrl, got, phase
}

// adv28CheckExcept is adv28Check (no repeat) with the fire_ids except
// says may be lost or extra (a delete between two callbacks of the
// advance decides whether the times up to it go out); nil: none.
func adv28CheckExcept(t *testing.T, h *partitionHarness, ctrl, got map[string][]string, except func(id string) bool) {
	t.Helper()
	adv28Compare(t, h, ctrl, got, false, except)
}
