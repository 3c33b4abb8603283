package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestAdv17bRepeatAfterPurgeResurrectsDeletedJob: promise (docs/topics.md,
// "Repeats after a crash"): Chronos "applies each command once": a command
// consumed again after a crash "is not decided again and changes nothing";
// and "Updates, deletes and versions": a deleted job does not fire again.
//
// The repeat check needs the job's record: its offset is in it. A delete's
// tombstone is purged once the shard's time passes its NotBefore plus
// codecs.DeletedRetention (8 days) — a single advance does that after an
// outage (the shard's time jumps to the clock), in the same commit window
// as the commands before it. Then the record, and the offset it held, is
// gone, and every command of the job still uncommitted is decided again as
// if new.
//
// Inputs: the shard is at t0 = 12:30 (an outage since). Its backlog is consumed:
// put j (every 1h, fire_all, grace 168h, payload A) at offset 0, put j
// (payload B) at offset 1, delete j at offset 2 — none of j's fires is due
// yet at t0, so nothing goes out and j is a tombstone (Applied 3). The
// first clock tick advances the shard to t0+9d: the tombstone is due and
// purged. The process dies before committing offsets 0-2 (the commit
// interval is a second); they are consumed again.
//
// Expected: offsets 0-2 are repeats of commands already applied: nothing
// is dispatched, j stays gone (no fire of j after its delete, ever). Got:
// offset 0 finds no record and creates j again (payload A, owing every hour
// since t0); offset 1 is an update, which first dispatches what j owes
// under A up to the shard's time: 193 hourly fires (the last 8 days:
// j@2026-03-02T16:00Z ... , payload A), then offset 2 deletes it again.
// Severity: fires of a deleted job (193 fires the original run never sent,
// all for times after the job's delete: ghost fires), and commands applied
// twice. The same holds without a crash when the group's committed offsets
// are gone (an outage longer than offsets.retention.minutes, 7 days by
// default, restarts the group at the oldest offset, clients.go: while
// docs/topics.md asks for a chronos-jobs retention longer than any outage
// to survive): every job deleted more than 8 shard-days earlier is put
// again by its replayed put and lives until its replayed delete.
func TestAdv17bRepeatAfterPurgeResurrectsDeletedJob(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC)
	h := newPartitionHarness(t, 1000, t0)
	h.advance(t0)
	h.drain()
	cmds := []string{
		`{"v":1,"op":"put","job":{"every":"1h","payload":{"p":"A"},"misfire_policy":"fire_all","misfire_grace":"168h"}}`,
		`{"v":1,"op":"put","job":{"every":"1h","payload":{"p":"B"},"misfire_policy":"fire_all","misfire_grace":"168h"}}`,
		`{"v":1,"op":"delete"}`,
	}
	ts := t0.Add(-time.Minute)
	for i, js := range cmds {
		h.commandAt("j", ts, js, int64(i))
		h.drain()
	}
	require.Empty(t, h.fired(), "nothing of j was due before its delete")
	rec, err := h.st.Get("j")
	require.NoError(t, err)
	require.NotNil(t, rec, "j's tombstone")

	// The first tick after the outage: the tombstone's retention is past.
	h.advance(t0.Add(codecs.DeletedRetention + time.Hour))
	h.drain()
	rec, err = h.st.Get("j")
	require.NoError(t, err)
	require.Nil(t, rec, "j's tombstone purged")

	// The crash: offsets 0-2 are consumed again.
	for i, js := range cmds {
		h.commandAt("j", ts, js, int64(i))
		h.drain()
	}
	h.advance(t0.Add(codecs.DeletedRetention + 2*time.Hour))
	h.drain()
	if n := len(h.fired()); n > 0 {
		var some []string
		for id, ps := range h.fired() {
			if len(some) < 3 {
				some = append(some, id+" "+ps[0])
			}
		}
		t.Errorf("j, deleted at %s before any fire, dispatched %d fires after its commands were redelivered (e.g. %v); want none", t0.Format(time.RFC3339), n, some)
	}
	rec, err = h.st.Get("j")
	require.NoError(t, err)
	require.Nil(t, rec, "j stays gone after the repeats of its commands")

	// The next command, after the purge horizon, is new: j is put again.
	at := t0.Add(codecs.DeletedRetention + 2*time.Hour)
	h.commandAt("j", at, `{"v":1,"op":"put","job":{"every":"1h","payload":{"p":"C"}}}`, int64(len(cmds)))
	h.drain()
	rec, err = h.st.Get("j")
	require.NoError(t, err)
	require.NotNil(t, rec, "a put after the purge horizon creates j again")
	h.advance(at.Add(time.Hour))
	h.drain()
	require.Len(t, h.fired(), 1, "j put again fires once in its first hour")
}
