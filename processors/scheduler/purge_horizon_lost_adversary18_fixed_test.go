package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestAdv18PurgeLoopbackWithoutItsHorizonResurrectsDeletedJob: promise
// (docs/topics.md, "Repeats after a crash"): each command is applied once,
// a repeat "changes nothing"; "Updates, deletes and versions": a deleted
// job does not fire again and does not come back.
//
// e3e7121 keeps the purge horizon (ShardRecord.Purged) "in the same
// callback" as the purge loopbacks the advance emits (fanout.go). The same
// callback is not atomic: goka writes the table's changelog and what a
// callback emits independently (bulk.go's own comment: "a process killed
// between the two could leave the step recorded and its commands lost"),
// and a crash leaves a prefix per destination. So the purge loopback can
// reach the loopback topic while the shard record carrying the horizon
// never reaches the changelog. The next owner restores j's tombstone and
// the shard record from before the advance (no horizon), consumes the
// purge loopback (j's tombstone goes, version matches) and then the
// redelivered advance, which no longer finds j's tombstone and so never
// raises the horizon. Nothing on the partition remembers j's offsets.
//
// Inputs: as TestAdv17bRepeatAfterPurgeResurrectsDeletedJob: shard at t0
// after an outage; put j (A) @0, put j (B) @1, delete j @2, nothing due;
// advance to t0+8d+1h emits j's purge loopback and writes Purged=3 locally.
// The process dies: the loopback is in Kafka, the shard record's write is
// not in the changelog, offsets 0-2 and the advance are not committed. A
// new owner restores (j's tombstone, the shard record before the advance),
// consumes the purge loopback, the advance again, then offsets 0-2 again.
//
// Expected: offsets 0-2 are repeats; nothing of j is dispatched; j stays
// gone. Got: the shard's Purged is 0 after the re-run advance; offset 0
// creates j again, offset 1 (an update) dispatches the ~193 hourly fires
// j owes under payload A, offset 2 deletes it again: the 17b ghost fires,
// through a crash window e3e7121 does not cover. Severity: high (fires of a
// deleted job, commands applied twice), needs a crash at the purging
// advance plus a lost commit window reaching back past the delete (the
// 17b premise).
func TestAdv18PurgeLoopbackWithoutItsHorizonResurrectsDeletedJob(t *testing.T) {
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

	// What the changelog holds: the shard record and j's tombstone as they
	// were before the purging advance.
	shardBefore, err := h.st.Get(h.shardKey())
	require.NoError(t, err)
	shardBefore = append([]byte(nil), shardBefore...)
	tomb, err := h.st.Get("j")
	require.NoError(t, err)
	require.NotNil(t, tomb)
	tomb = append([]byte(nil), tomb...)

	at := t0.Add(codecs.DeletedRetention + time.Hour)
	h.advance(at) // emits j's purge loopback; writes Purged locally
	require.Len(t, h.loops, 1, "j's purge loopback")
	require.Equal(t, uint64(3), h.shard().Purged, "the local shard record has the horizon")

	// The crash: the purge loopback reached Kafka; the shard record's
	// write did not reach the changelog. A new owner restores.
	h.open()
	require.NoError(t, h.st.Set(h.shardKey(), shardBefore))
	require.NoError(t, h.st.Set("j", tomb))

	h.drain() // the purge loopback: refused, the horizon is not in this table
	rec, err := h.st.Get("j")
	require.NoError(t, err)
	require.NotNil(t, rec, "j's tombstone stays until the horizon holds its offset")
	h.advance(at) // the advance, redelivered: the horizon, then the purge
	h.drain()
	require.Equal(t, uint64(3), h.shard().Purged, "the re-run advance writes the horizon")
	rec, err = h.st.Get("j")
	require.NoError(t, err)
	require.Nil(t, rec, "j's tombstone purged by the re-run advance")

	// Offsets 0-2 again.
	for i, js := range cmds {
		h.commandAt("j", ts, js, int64(i))
		h.drain()
	}
	h.advance(at.Add(time.Hour))
	h.drain()
	if n := len(h.fired()); n > 0 {
		var some []string
		for id, ps := range h.fired() {
			if len(some) < 3 {
				some = append(some, id+" "+ps[0])
			}
		}
		t.Errorf("j, deleted before any fire, dispatched %d fires after its commands were redelivered (e.g. %v); want none", n, some)
	}
	rec, err = h.st.Get("j")
	require.NoError(t, err)
	require.Nil(t, rec, "j stays gone after the repeats")
}
