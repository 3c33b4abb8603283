//go:build adversary18

package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// commandRejects delivers a chronos-jobs record for job id at offset off
// (as commandAt) and returns the rejects it emitted.
func (h *partitionHarness) commandRejects(id string, ts time.Time, js string, off int64) []codecs.Reject {
	h.t.Helper()
	ctx := &simCtx{topic: h.s.cfg.Layout.Jobs(), key: id, table: h.st, ts: ts, offset: off, ctx: context.Background()}
	require.NoError(h.t, ctx.run(h.s.onCommand, []byte(js)))
	var out []codecs.Reject
	for _, o := range ctx.outs {
		switch {
		case o.Kind == simOutLoop:
			h.loops = append(h.loops, o)
		case o.Kind == simOutEmit && o.Topic == string(h.s.cfg.Layout.Rejects()):
			r, err := codecs.DecodeReject(o.Value)
			require.NoError(h.t, err)
			out = append(out, r)
		}
	}
	return out
}

// TestAdv18RepeatBeforePurgeHorizonLosesItsReject: promise (docs/topics.md,
// "Repeats after a crash"): "A reject is sent again when its command is
// repeated and is still the last one for its job (it is decided again,
// with the same answer); one whose command was followed by another command
// on the same job before the crash, and a backfill refusal, can be lost
// with the crash." (Only when the group's committed offsets expired does
// it say rejects of replayed commands are not sent again.)
//
// e3e7121 drops every command of a job without a record whose offset is
// before the shard's purge horizon (repeatedPurged), before checkCommand:
// also a command that was refused for want of its job, whose job never
// had a record and was never deleted, and that is still the last command
// of its job. Its reject was in flight when the process died (inputs.go
// produces it asynchronously and the commit waits for it, so the offset is
// not committed), and is now never sent.
//
// Inputs: shard at t0 after an outage; backlog: pause k @0 (k never
// existed: unknown_job), put d @1, delete d @2; the first tick advances
// the shard to t0+8d+1h, purging d's tombstone (Purged 3). The process dies
// before offset 0's reject is acknowledged; offsets 0-2 come again.
//
// Expected: offset 0 is decided again (k still has no command after it)
// and its unknown_job reject is sent again. Got: it is dropped as a
// repeat ("repeated"), no reject; the client that paused k never learns
// its command was refused. Before e3e7121 the reject is sent again.
// Severity: low-medium (a lost reject: a documented guarantee broken; no
// job state changes), new in e3e7121.
func TestAdv18RepeatBeforePurgeHorizonLosesItsReject(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC)
	h := newPartitionHarness(t, 1000, t0)
	h.advance(t0)
	h.drain()
	ts := t0.Add(-time.Minute)
	pauseK := `{"v":1,"op":"pause"}`
	first := h.commandRejects("k", ts, pauseK, 0)
	require.Len(t, first, 1, "pause of k, which never existed, is rejected")
	require.Equal(t, codecs.CodeUnknownJob, first[0].Code)
	h.commandAt("d", ts, `{"v":1,"op":"put","job":{"every":"1h"}}`, 1)
	h.commandAt("d", ts, `{"v":1,"op":"delete"}`, 2)
	h.drain()

	h.advance(t0.Add(codecs.DeletedRetention + time.Hour))
	h.drain()
	rec, err := h.st.Get("d")
	require.NoError(t, err)
	require.Nil(t, rec, "d's tombstone purged")

	// The crash: offset 0's reject was not acknowledged; offsets 0-2 again.
	again := h.commandRejects("k", ts, pauseK, 0)
	if len(again) != 1 {
		t.Errorf("the repeat of offset 0 (pause of k, still k's last command) sent %d rejects; want its unknown_job reject again", len(again))
	}
}
