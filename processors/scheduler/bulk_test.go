package scheduler

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
	"github.com/chronos-scheduler/chronos/store"
	"github.com/chronos-scheduler/chronos/topology"
)

// TestDecideBulkOracle decides bulk chunks over random keys (jobs of every
// status, in two buckets, shard records, missing values) with random byte
// budgets, continuing from each chunk's Last like the loopback does: the
// chunks together send exactly the commands a brute-force filter expects
// (the jobs of the target that hash to the partition and that the op
// changes), each once, in key order, and count exactly its matched jobs.
func TestDecideBulkOracle(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(14, 66))
	const parts = 3
	statuses := []codecs.Status{codecs.StatusActive, codecs.StatusPaused, codecs.StatusCompleted, codecs.StatusDeleted}
	for round := 0; round < 200; round++ {
		p := int32(rng.IntN(parts))
		n := rng.IntN(40)
		keys := make([]string, 0, n)
		vals := map[string][]byte{}
		recs := map[string]*codecs.JobRecord{}
		for i := 0; i < n; i++ {
			k := fmt.Sprintf("%c-%d", 'a'+rng.IntN(3), rng.IntN(1000))
			if _, dup := vals[k]; dup {
				continue
			}
			keys = append(keys, k)
			switch rng.IntN(8) {
			case 0:
				vals[k] = codecs.EncodeShardRecord(codecs.ShardRecord{})
			case 1:
				vals[k] = nil
			default:
				r := &codecs.JobRecord{Status: statuses[rng.IntN(len(statuses))], Version: 1,
					Job: codecs.Job{Spec: schedule.Spec{Every: 60e9}, Bucket: []string{"b", "c"}[rng.IntN(2)]}}
				vals[k], recs[k] = codecs.EncodeJobRecord(r), r
			}
		}
		sort.Strings(keys)
		op := []string{codecs.BulkPause, codecs.BulkResume, codecs.BulkDelete}[rng.IntN(3)]
		tr := codecs.ShardTrigger{Kind: codecs.KindBulk, Op: op, TriggerID: "t", Bucket: "b"}
		switch rng.IntN(3) {
		case 0:
			tr.Bucket = ""
			tr.Prefix = []string{"a", "b", "c"}[rng.IntN(3)]
		case 1:
			tr.Prefix = []string{"a", "b"}[rng.IntN(2)] // the bucket's jobs with it
		}
		var wantCmds []string
		var wantMatched int64
		for _, k := range keys {
			r := recs[k]
			if r == nil || r.Status == codecs.StatusDeleted || (tr.Bucket != "" && r.Job.Bucket != tr.Bucket) ||
				!strings.HasPrefix(k, tr.Prefix) {
				continue
			}
			wantMatched++
			changes := (op == codecs.BulkPause && r.Status == codecs.StatusActive) ||
				(op == codecs.BulkResume && r.Status == codecs.StatusPaused) || op == codecs.BulkDelete
			if changes && topology.Partition(k, parts) == p {
				wantCmds = append(wantCmds, k)
			}
		}
		budget := 1 + rng.IntN(300)
		var gotCmds []string
		var matched int64
		rest := keys
		for steps := 0; ; steps++ {
			require.Less(t, steps, len(keys)+2, "every chunk makes progress")
			values := make([][]byte, len(rest))
			for i, k := range rest {
				values[i] = vals[k]
			}
			c := decideBulk(tr, rest, values, 20, p, parts, budget)
			for _, m := range c.Commands {
				gotCmds = append(gotCmds, m.Key)
			}
			matched += c.Matched
			if !c.More {
				break
			}
			tr.AfterKey = c.Last
			i := sort.SearchStrings(rest, c.Last)
			require.Less(t, i, len(rest))
			rest = rest[i+1:]
		}
		require.Equal(t, wantCmds, gotCmds, "round %d", round)
		require.Equal(t, wantMatched, matched, "round %d", round)
	}
}

// TestCheckBarrier: a barrier is accepted only for a walked operation and
// with its nonce; an operation walked by a release before nonces (none in
// its queue entry) accepts its own barrier, also without one.
func TestCheckBarrier(t *testing.T) {
	t.Parallel()
	n1, err := newBulkNonce()
	require.NoError(t, err)
	n2, err := newBulkNonce()
	require.NoError(t, err)
	require.Len(t, n1, 32)
	require.NotEqual(t, n1, n2)
	head := codecs.ShardTrigger{Kind: codecs.KindBulk, TriggerID: "p", Walked: true, Nonce: n1}
	for _, c := range []struct {
		head  codecs.ShardTrigger
		nonce string
		ok    bool
	}{
		{head, n1, true},
		{head, n2, false},
		{head, "", false},
		{head, n1[:31], false},
		{func() codecs.ShardTrigger { h := head; h.Walked = false; return h }(), n1, false},
		{func() codecs.ShardTrigger { h := head; h.Nonce = ""; return h }(), "", true},
		{func() codecs.ShardTrigger { h := head; h.Nonce = ""; return h }(), n1, false},
	} {
		err := checkBarrier(c.head, codecs.ShardTrigger{Kind: codecs.KindBulk, TriggerID: "p", Nonce: c.nonce, Walked: true})
		if c.ok {
			require.NoError(t, err, "%+v %q", c.head, c.nonce)
			continue
		}
		var ce *codecs.Error
		require.ErrorAs(t, err, &ce, "%+v %q", c.head, c.nonce)
		require.Equal(t, codecs.CodeReservedID, ce.Code)
	}
	require.Empty(t, continuation(head).Nonce, "a continuation carries no nonce")
}

// TestShardHeadKeepsBulkState: an advance reads the shard record without
// its bulk state (decodeShard) and writes it back (passDone, passYield):
// the bulk operations, queued and finished, survive byte for byte.
func TestShardHeadKeepsBulkState(t *testing.T) {
	t.Parallel()
	w := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	bulk := codecs.BulkState{
		Queue: []codecs.ShardTrigger{{Kind: codecs.KindBulk, T: w, Op: codecs.BulkPause, Bucket: "b", TriggerID: "q", Step: 2, Nonce: "n"}},
		Done:  []codecs.BulkResult{{TriggerID: "d", Op: codecs.BulkDelete, Prefix: "p", T: w, Matched: 3, Changed: 2, Skipped: 1}},
	}
	for _, refs := range [][]codecs.BackfillRef{nil, {{Job: "j", ID: "b-0-1"}}} {
		raw := codecs.EncodeShardRecord(codecs.ShardRecord{Watermark: w, Backfills: refs, Bulk: bulk})
		head, err := codecs.DecodeShardHead(raw)
		require.NoError(t, err)
		require.True(t, head.Bulk.IsZero(), "the head leaves the bulk state undecoded")
		mark, _ := passYield(head, w.Add(2*time.Second), store.Due{}, false, nil)
		require.NotNil(t, mark)
		for _, rec := range []codecs.ShardRecord{*mark, passDone(head, w.Add(time.Second))} {
			got, err := codecs.DecodeShardRecord(codecs.EncodeShardRecord(rec))
			require.NoError(t, err)
			require.Equal(t, bulk, got.Bulk)
			require.Equal(t, refs, got.Backfills)
		}
	}
}

// TestBulkRepeat: a bulk command that conflicts because it was applied
// already (the job one version past its if_version, in the state it
// leaves) is a repeat; one that lost to another change is not.
func TestBulkRepeat(t *testing.T) {
	t.Parallel()
	v := uint64(7)
	rec := func(st codecs.Status, version uint64) *codecs.JobRecord {
		return &codecs.JobRecord{Status: st, Version: version}
	}
	for _, c := range []struct {
		op        string
		old, tomb *codecs.JobRecord
		repeat    bool
	}{
		{codecs.BulkPause, rec(codecs.StatusPaused, 8), nil, true},
		{codecs.BulkPause, rec(codecs.StatusActive, 8), nil, false}, // a put in between
		{codecs.BulkPause, rec(codecs.StatusPaused, 9), nil, false}, // paused again since
		{codecs.BulkResume, rec(codecs.StatusActive, 8), nil, true},
		{codecs.BulkResume, rec(codecs.StatusPaused, 8), nil, false},
		{codecs.BulkDelete, nil, rec(codecs.StatusDeleted, 8), true},
		{codecs.BulkDelete, rec(codecs.StatusActive, 8), nil, false}, // put again
		{codecs.BulkDelete, nil, rec(codecs.StatusDeleted, 9), false},
		{codecs.BulkDelete, nil, nil, false}, // purged
		{codecs.BulkPause, nil, nil, false},
	} {
		got := bulkRepeat(codecs.Command{Op: c.op, IfVersion: &v}, c.old, c.tomb)
		require.Equal(t, c.repeat, got, "%s old %+v tomb %+v", c.op, c.old, c.tomb)
	}
}

// TestCheckBulkTriggerLegacyReservedPrefix: an operation on a prefix under
// "__chronos/" (refused at every entrance now, queued by an earlier
// release) still passes the shard's check, so its continuations are not
// rejected and it finishes instead of blocking the queue; other checks
// still apply.
func TestCheckBulkTriggerLegacyReservedPrefix(t *testing.T) {
	t.Parallel()
	tr := codecs.ShardTrigger{Kind: codecs.KindBulk, Op: codecs.BulkDelete, TriggerID: "old"}
	for _, p := range []string{topology.ShardKeyPrefix, topology.ShardKeyPrefix + "shard/0", topology.ShardKeyPrefix + strings.Repeat("p", 256-len(topology.ShardKeyPrefix))} {
		tr.Prefix = p
		require.NoError(t, checkBulkTrigger(tr), "%q", p)
		require.Error(t, codecs.ValidatePrefix(p), "%q is refused at the entrances", p)
	}
	tr.Prefix = topology.ShardKeyPrefix + "a\x00"
	require.Error(t, checkBulkTrigger(tr), "a control character is still refused")
}
