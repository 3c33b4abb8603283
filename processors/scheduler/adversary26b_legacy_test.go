package scheduler

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestAdv26bLegacyOwedRecordLosesFiresToRecordedCommand: commit 4c57be0
// reads a record with Through and no OwedAt as handled through the
// watermark once Applied is set, and keeps the old reading (owes what its
// Through says) only for records without Applied, which an earlier release
// wrote (docs/operations.md: "records written by earlier releases read as
// before: a job record without the time owes what its `Through` says").
// But a command that does not settle the job first copies the record and
// sets Applied on it without touching Through or OwedAt: a backfill start,
// a cancel_backfill, and a refused command recorded against the job's
// state (commands.go: next := *cur; next.Applied = applied; keepEntry).
// keepEntry only moves Through when the written record's due entry is
// before the local one, never when it is after. So a legacy record that
// still owes fires behind the watermark (a late put by the earlier
// release, the next advance not yet run) becomes, under the new reading,
// handled through the watermark: its owed fires are lost.
func TestAdv26bLegacyOwedRecordLosesFiresToRecordedCommand(t *testing.T) {
	pad := strings.Repeat("p", 20)
	base := adv24Base
	cases := []struct {
		name, cmd string
		expectErr bool
	}{
		{"none (control)", "", false},
		// Refused (to after the command's time) and recorded: Applied set.
		{"refused backfill", `{"v":1,"op":"backfill","from":"2026-03-01T09:00:00Z","to":"2026-03-01T11:00:00Z"}`, true},
		// Accepted backfill: a copy of the record with Applied set.
		{"backfill", `{"v":1,"op":"backfill","from":"2026-03-01T09:00:00Z","to":"2026-03-01T09:00:02Z"}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &partitionHarness{t: t, prod: &recordingProducer{}, now: base, chunk: 25000, budget: time.Hour}
			adv24Open(h)
			h.advance(base)
			h.drain()
			h.command("j", base, `{"v":1,"op":"put","job":{"every":"1s","payload":{"p":"A`+pad+`"},"misfire_policy":"fire_all","misfire_grace":"168h"}}`)
			h.drain()
			v, err := h.st.Get("j")
			require.NoError(t, err)
			rec, err := codecs.DecodeJobRecord(v)
			require.NoError(t, err)
			// As an earlier release wrote a late put owing j@09:59:51 ..
			// 10:00:00 (no OwedAt, no Applied).
			rec.NotBefore, rec.Through, rec.OwedAt, rec.Applied = base.Add(-10*time.Second), base.Add(-10*time.Second), time.Time{}, 0
			require.NoError(t, h.st.Set("j", codecs.EncodeJobRecord(rec)))
			due, err := h.st.DueOf("j")
			require.NoError(t, err)
			require.Equal(t, base.Add(-9*time.Second), due, "setup: the legacy record owes from 09:59:51")
			if c.cmd != "" {
				h.command("j", base, c.cmd)
				h.drain()
				v, err := h.st.Get("j")
				require.NoError(t, err)
				after, err := codecs.DecodeJobRecord(v)
				require.NoError(t, err)
				t.Logf("record after %s: Through %s OwedAt %s Applied %d", c.name, after.Through, after.OwedAt, after.Applied)
			}
			h.advance(base.Add(5 * time.Second))
			h.drain()
			h.advance(base.Add(10 * time.Second))
			h.drain()
			fired := h.fired()
			var missing []string
			for i := -9; i <= 10; i++ {
				id := "j@" + base.Add(time.Duration(i)*time.Second).Format(time.RFC3339)
				if len(fired[id]) == 0 {
					missing = append(missing, id)
				}
			}
			require.Empty(t, missing, "LOST: fires the legacy record owed (Through 09:59:50, no OwedAt, no Applied) never dispatched after a %s rewrote it with Applied", c.name)
		})
	}
}
