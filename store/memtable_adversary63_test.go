package store

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The job view's store options: Pebble's 4 MiB memtables and the store's
// 8 MiB cache (views.NewJobs sets neither). 807405f halved them and
// 1b16a2e took that back (an empty-disk recovery of 10M jobs 8 s slower);
// round 63 found the halving also flushed every large job on its own, so
// these tests now hold the shipped sizes to "no write flushed on its own".
const (
	adv63JobsMem, adv63JobsCache = 4 << 20, 8 << 20
	// adv63MaxRecord is a job record at the largest --max-payload the
	// default --batch-bytes (1 MiB) allows: 1 MiB − 4 KiB of payload plus
	// the record's other fields (~300 bytes).
	adv63MaxRecord = 1<<20 - 4<<10 + 300
)

type adv63Run struct {
	flushes, l0Tables int64
	took              time.Duration
}

// adv63Write writes the records rec(i) for i < n into a job-view-like store
// (testIndexer, indexes deferred to MarkRecovered, key filter), first as a
// recovery (batched, committed every recoveryBatchBytes), then after
// MarkRecovered one by one; it checks every record after a reopen.
func adv63Write(t *testing.T, mem uint64, cache int64, n int, rec func(i int) []byte) (recovery, after adv63Run) {
	dir := t.TempDir()
	opts := Options{MemTableSize: mem, CacheSize: cache, Indexer: testIndexer, DeferIndexOnRecovery: true, KeyFilter: true, Logger: quiet}
	s := New(dir, opts)
	require.NoError(t, s.Open())
	run := func(prefix string) adv63Run {
		f0 := s.db.Metrics().Flush.Count
		start := time.Now()
		for i := range n {
			require.NoError(t, s.Set(fmt.Sprintf("%s-%06d", prefix, i), rec(i)))
		}
		took := time.Since(start)
		m := s.db.Metrics()
		return adv63Run{flushes: m.Flush.Count - f0, l0Tables: m.Levels[0].TablesCount, took: took}
	}
	recovery = run("r")
	require.NoError(t, s.MarkRecovered())
	after = run("a")
	require.NoError(t, s.Close())
	s = New(dir, opts)
	require.NoError(t, s.Open())
	defer s.Close()
	for _, prefix := range []string{"r", "a"} {
		for i := range n {
			v, err := s.Get(fmt.Sprintf("%s-%06d", prefix, i))
			require.NoError(t, err)
			require.True(t, bytes.Equal(rec(i), v), "%s-%d: %d bytes read, %d written", prefix, i, len(v), len(rec(i)))
		}
	}
	// The listing by bucket (the indexes deferred to MarkRecovered) has
	// every key.
	total := 0
	for b := range 3 {
		keys, err := s.BucketKeys(fmt.Sprintf("b%d", b), "", 100000)
		require.NoError(t, err)
		total += len(keys)
	}
	require.Equal(t, 2*n, total, "keys listed by bucket")
	return recovery, after
}

// TestAdversary63JobViewLargeRecordsAtItsMemtable writes jobs with
// the largest payload the default --batch-bytes allows, interleaved with
// ordinary ones (every 8th record large), into a job-view-like store at
// the new 2 MiB memtables and the old 4 MiB, and records Pebble's flushes:
// a batch over half a memtable is flushed on its own. A recovery batch
// (256 KiB of small records plus one large) is ~1.3 MiB: under half the old
// memtable, over half the new. The data must survive either way.
func TestAdversary63JobViewLargeRecordsAtItsMemtable(t *testing.T) {
	const n = 256
	small := bytes.Repeat([]byte("s"), 40<<10)
	large := bytes.Repeat([]byte("L"), adv63MaxRecord)
	rec := func(i int) []byte {
		p := small
		if i%8 == 7 {
			p = large
		}
		return append([]byte(fmt.Sprintf("|b%d|", i%3)), p...)
	}
	written := int64(n/8*adv63MaxRecord + (n-n/8)*(40<<10))
	r, after := adv63Write(t, adv63JobsMem, adv63JobsCache, n, rec)
	t.Logf("%d records (%d of %d bytes) at 4 MiB memtables: recovery %d flushes (%d L0 tables) in %v, after recovery %d flushes in %v",
		n, n/8, adv63MaxRecord, r.flushes, r.l0Tables, r.took.Round(time.Millisecond), after.flushes, after.took.Round(time.Millisecond))
	// 2 MiB memtables (807405f) made 30 and 31-32 flushes of this, 4 MiB 9
	// and 10-11: a recovery batch (256 KiB + one large record) over half a
	// memtable is flushed on its own. At 4 MiB the bytes written explain
	// the flushes.
	assert.LessOrEqual(t, r.flushes, written/adv63JobsMem+3, "recovery: batches flushed on their own")
	assert.LessOrEqual(t, after.flushes, written/adv63JobsMem+3, "after recovery: writes flushed on their own")
}

// TestAdversary63JobViewOverOneMiBPayloads: with --batch-bytes 2 MiB and
// --max-payload 1.5 MiB (allowed: max payload + 4 KiB ≤ batch bytes), a job
// write to the view is under half of its 4 MiB memtable, so none is a flush
// of its own (at 807405f's 2 MiB, every one was: 64 flushes for 64 writes).
func TestAdversary63JobViewOverOneMiBPayloads(t *testing.T) {
	const n = 64
	large := bytes.Repeat([]byte("P"), 1536<<10)
	rec := func(i int) []byte { return append([]byte(fmt.Sprintf("|b%d|", i%3)), large...) }
	r, after := adv63Write(t, adv63JobsMem, adv63JobsCache, n, rec)
	t.Logf("%d records of 1.5 MiB at 4 MiB memtables: recovery %d flushes (%d L0 tables) in %v, after %d flushes in %v",
		n, r.flushes, r.l0Tables, r.took.Round(time.Millisecond), after.flushes, after.took.Round(time.Millisecond))
	require.LessOrEqual(t, after.flushes, int64(n/2+2), "after recovery: writes flushed on their own")
}

// TestAdversary63HistoryMemtablesAtTheLargestRecords: the history stores at
// --history-fires 1000 --history-changes 200 (memtables of 4 × 1,000,000
// bytes, Config.historyMemTableBytes) take the largest records (~1 MB:
// historyRecordBytes) without a flush of their own, in a recovery batch
// (256 KiB + one record) and after; and the history view's 1 MiB memtables
// at the defaults (records ≤ ~55 KB). Holds if the flushes are no more
// than the bytes written over the memtable size.
func TestAdversary63HistoryMemtablesAtTheLargestRecords(t *testing.T) {
	for _, c := range []struct {
		name   string
		mem    uint64
		record int
	}{
		{"fires 1000 changes 200", 4 * (1000*900 + 200*500), 1000*900 + 200*500 + 256 + 1<<10},
		{"history view defaults", 1 << 20, 50*900 + 20*500 + 256 + 1<<10},
	} {
		t.Run(c.name, func(t *testing.T) {
			const n = 48
			rec := func(i int) []byte {
				return append([]byte("||"), bytes.Repeat([]byte{byte('a' + i%26)}, c.record)...)
			}
			dir := t.TempDir()
			opts := Options{MemTableSize: c.mem, CacheSize: 1 << 20, KeyFilter: true, Logger: quiet}
			s := New(dir, opts)
			require.NoError(t, s.Open())
			for i := range n {
				require.NoError(t, s.Set(fmt.Sprintf("rec-%d", i), rec(i)))
			}
			rf := s.db.Metrics().Flush.Count
			require.NoError(t, s.MarkRecovered())
			f0 := s.db.Metrics().Flush.Count
			for i := range n {
				require.NoError(t, s.Set(fmt.Sprintf("aft-%d", i), rec(i)))
			}
			af := s.db.Metrics().Flush.Count - f0
			// A memtable takes mem/record − 1 records (its arena's
			// overhead); a record flushed on its own would make it one.
			perMemtable := max(int(c.mem)/c.record-1, 1)
			t.Logf("%s: memtable %d, record %d: recovery %d flushes, after %d flushes for %d records (%d a memtable)", c.name, c.mem, c.record, rf, af, n, perMemtable)
			require.LessOrEqual(t, int(rf), n/perMemtable+2)
			require.LessOrEqual(t, int(af), n/perMemtable+2)
			s = reopen(t, s)
			for i := range n {
				v, err := s.Get(fmt.Sprintf("aft-%d", i))
				require.NoError(t, err)
				require.Equal(t, rec(i), v)
			}
		})
	}
}
