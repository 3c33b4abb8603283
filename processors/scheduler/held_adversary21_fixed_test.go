package scheduler

import (
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// What held in adversary round 21 (2f7ff01): an empty-disk deferred
// recovery (with the reopen at MarkRecovered, threshold 16) records the
// table's watermark as IndexedUpTo, its due index is the one a rebuild of
// the final table gives, and its first advances send what a store whose
// index the first advance rebuilt sends; also with the last shard record
// unreadable (decodeShard's zero record: IndexedUpTo zero) and with no
// shard record at all.
func TestAdv21HeldDeferredRecoveryIndexMatchesRebuild(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit func(clog []simOut, shardKey string) []simOut
	}{
		{"changelog as written", func(c []simOut, _ string) []simOut { return c }},
		{"last shard record unreadable", func(c []simOut, k string) []simOut {
			return append(c, simOut{Kind: simOutTable, Key: k, Value: []byte{c[0].Value[0], 0xff, 0xff, 0xff}})
		}},
		{"no shard record", func(c []simOut, k string) []simOut {
			var out []simOut
			for _, r := range c {
				if r.Key != k {
					out = append(out, r)
				}
			}
			return out
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			h1 := &clogHarness{partitionHarness: newPartitionHarness(t, 2, t0)}
			h1.advance(t0)
			h1.drain()
			for i, id := range []string{"A1", "b", "c", "zz"} { // "A1" sorts before the shard key
				h1.command(id, t0, `{"v":1,"op":"put","job":{"every":"`+[]string{"10s", "30s", "1m", "20s"}[i]+`","misfire_policy":"fire_all","misfire_grace":"168h"}}`)
				h1.drain()
				h1.advance(t0.Add(time.Duration(i+1) * 25 * time.Second))
				h1.drain()
			}
			require.True(t, codecs.IsShardRecord(h1.clog[0].Value))
			clog := tc.edit(h1.clog, h1.shardKey())
			end := t0.Add(100 * time.Second)

			run := func(deferIdx bool) (map[string][]string, time.Time, map[string]time.Time) {
				now := end
				prod := &recordingProducer{}
				s := adv21Scheduler(t, vfs.NewMem(), prod, &now)
				s.cfg.Store.DeferIndexOnRecovery = deferIdx
				st, err := s.StorageBuilder()(string(s.cfg.Layout.SchedulerTable()), 0)
				require.NoError(t, err)
				require.NoError(t, st.Open())
				defer st.Close()
				adv21Replay(t, st, clog, len(clog))
				require.NoError(t, st.MarkRecovered())
				upTo, err := s.Store(0).IndexedUpTo()
				require.NoError(t, err)
				dues := map[string]time.Time{}
				for _, id := range []string{"A1", "b", "c", "zz"} {
					dues[id], err = s.Store(0).DueOf(id)
					require.NoError(t, err)
				}
				h := &partitionHarness{t: t, s: s, st: s.Store(0), prod: prod, now: now, chunk: 2, budget: time.Hour}
				for i := 1; i <= 3; i++ {
					h.advance(end.Add(time.Duration(i) * 40 * time.Second))
					h.drain()
				}
				return h.fired(), upTo, dues
			}
			// Deferred: the rebuild at MarkRecovered (2f7ff01: no second
			// one at the first advance). Not deferred: per-record indexing,
			// IndexedUpTo zero, the first advance rebuilds (if the table has
			// a watermark), as every recovery did before 2f7ff01.
			got, upTo, dues := run(true)
			want, _, _ := run(false)
			sh, err := h1.s.shard(0)
			require.NoError(t, err)
			t.Logf("indexed up to %s (owner 1's watermark %s), dues %v", upTo, sh.Watermark, dues)
			require.Equal(t, keysOf(want), keysOf(got))
		})
	}
}

func keysOf(m map[string][]string) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		out[k] = len(v)
	}
	return out
}
