package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// adv17Rejects delivers a chronos-jobs record at offset off and returns
// the codes of the rejects it wrote to chronos-rejects.
func (h *partitionHarness) adv17Rejects(id string, ts time.Time, js string, off int64) []string {
	h.t.Helper()
	ctx := &simCtx{topic: h.s.cfg.Layout.Jobs(), key: id, table: h.st, ts: ts, offset: off, ctx: context.Background()}
	require.NoError(h.t, ctx.run(h.s.onCommand, []byte(js)))
	var codes []string
	for _, o := range ctx.outs {
		switch {
		case o.Kind == simOutLoop:
			h.loops = append(h.loops, o)
		case o.Kind == simOutEmit && o.Topic == string(h.s.cfg.Layout.Rejects()):
			r, err := codecs.DecodeReject(o.Value)
			require.NoError(h.t, err)
			codes = append(codes, r.Code)
		}
	}
	return codes
}

// TestAdv17RepeatBeforeADeleteRejectedUnknownJob: promise (docs/topics.md,
// "Repeats after a crash"): a command at or before its job record's offset
// "is a repeat and changes nothing"; "One case is left: a conditional
// command followed, before the crash, by another command that changed the
// same job is checked again on its repeat and can be rejected
// (`version_conflict`) although it was applied". No other applied command
// is rejected on its repeat.
//
// Job j is put (offset 0). A pause (offset 1, no if_version) is applied;
// so is a manual fire (offset 2, dispatched); then a delete (offset 3)
// leaves a tombstone, Applied 4. The process dies before committing
// offsets 1-3; they are consumed again. The pause and the fire are before
// Applied-1 and are checked: the job is a tombstone, so both are rejected
// `unknown_job` to chronos-rejects although both were applied (the pause
// changed the job, the fire went out). Neither is conditional.
//
// Expected: offsets 1 and 2 are dropped as repeats (no reject, counted
// `repeated`). Got: two `unknown_job` rejects. Severity: spurious reject
// (an applied command reported as refused).
func TestAdv17RepeatBeforeADeleteRejectedUnknownJob(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	h := newPartitionHarness(t, 100, now)
	h.advance(now)
	h.drain()
	cmds := []string{
		`{"v":1,"op":"put","job":{"every":"1m","payload":{"p":1}}}`,
		`{"v":1,"op":"pause"}`,
		`{"v":1,"op":"fire","trigger_id":"t-1"}`,
		`{"v":1,"op":"delete"}`,
	}
	for i, js := range cmds {
		require.Empty(t, h.adv17Rejects("j", now, js, int64(i)), "first delivery of offset %d", i)
		h.drain()
	}
	require.Len(t, h.fired()["j@t-1"], 1, "the manual fire went out")
	// The crash: offsets 1-3 again.
	for i := 1; i < len(cmds); i++ {
		if codes := h.adv17Rejects("j", now, cmds[i], int64(i)); len(codes) > 0 {
			t.Errorf("offset %d (%s), applied before the crash, rejected %v on its redelivery", i, cmds[i], codes)
		}
		h.drain()
	}
}
