package scheduler

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lovoo/goka"
	"github.com/lovoo/goka/storage"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/store"
	"github.com/chronos-scheduler/chronos/topology"
)

// Adversary round 21 (commit 2f7ff01: a rebuild the store starts itself
// records the shard's watermark in the table as IndexedUpTo).
//
// Claim: "the rebuilt index's entries are derived from exactly that
// watermark, so the index is current up to it and skipping the second
// rebuild loses nothing".
//
// Break: the rebuild at Open after a crash in the middle of a deferred
// recovery records the watermark of the table *as the crash left it*, W2.
// The store is not fresh any more, so goka then replays the changelog from
// the stored offset (during a recovery only committed every 30 s, none
// here) with the indexer running on every Set: the replay passes through
// the older shard record (W1) again, and the job records that follow it
// are indexed from W1 (the indexer's cached watermark, refreshed by the
// replayed shard record). The replay ends on the shard record W2 again:
// the table says W2, IndexedUpTo says W2, so rebuildIfBehind does not
// rebuild, and the job's entry derived from W1 is behind the watermark.
// The next advance plans fires from that entry (plannedFrom(..., d.At)):
// it dispatches b@12:01 again, which the previous owner already
// dispatched in its advance to W2. Before 2f7ff01 the Open rebuild kept
// the stored IndexedUpTo (zero: the crashed store was fresh), the first
// advance rebuilt the index from W2, and nothing repeated.
//
// Fixed: the indexer returns the shard record's watermark as the store's
// index time (store.Entry.HasIndexTime), and a Set of it lowers the stored
// IndexedUpTo to it when that is later. The replayed shard record W1 lowers
// IndexedUpTo to W1, the replay ends on W2, and the first advance rebuilds
// from W2. The same lowering fixes TestAdv21OwnWritesReplayedOverAdvancedIndex
// below, which was older than 2f7ff01.

// clogHarness is a partitionHarness whose deliveries also keep the table's
// changelog (every table write, in order).
type clogHarness struct {
	*partitionHarness
	clog []simOut
}

func (h *clogHarness) deliver(cb func(goka.Context, any), topic goka.Stream, key string, ts time.Time, msg []byte) {
	h.t.Helper()
	h.off++
	ctx := &simCtx{topic: topic, key: key, table: h.st, ts: ts, offset: h.off, ctx: context.Background()}
	require.NoError(h.t, ctx.run(cb, msg))
	for _, o := range ctx.outs {
		switch o.Kind {
		case simOutLoop:
			h.loops = append(h.loops, o)
		case simOutTable:
			h.clog = append(h.clog, o)
		}
	}
}

func (h *clogHarness) advance(t time.Time) {
	h.now = t
	h.deliver(h.s.onTrigger, h.s.cfg.Layout.ShardTriggers(), h.shardKey(), t,
		codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: t}))
}

func (h *clogHarness) command(id string, ts time.Time, js string) {
	h.deliver(h.s.onCommand, h.s.cfg.Layout.Jobs(), id, ts, []byte(js))
}

func (h *clogHarness) drain() {
	for len(h.loops) > 0 {
		l := h.loops[0]
		h.loops = h.loops[1:]
		h.deliver(h.s.onLoop, h.s.cfg.Layout.SchedulerLoop(), l.Key, h.now, l.Value)
	}
}

// adv21Scheduler is a one-partition scheduler whose store lives on fs under
// /data, deferring its index on recovery as the instance does.
func adv21Scheduler(t *testing.T, fs vfs.FS, prod Producer, now *time.Time) *Scheduler {
	t.Helper()
	s, err := New(Config{
		Layout:   topology.Layout{Names: topology.Names{Prefix: "p1."}, Partitions: 1, Replication: 1},
		DataDir:  "/data",
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		Store:    store.Options{FS: fs, DeferIndexOnRecovery: true, RecoveryL0CompactionThreshold: 16},
		Producer: prod,
		Now:      func() time.Time { return *now },
	})
	require.NoError(t, err)
	return s
}

// adv21Replay applies the changelog records after the store's offset, as
// goka's recovery does (offsets in memory only, as between the 30 s
// commits), up to (not including) index stop.
func adv21Replay(t *testing.T, st storage.Storage, clog []simOut, stop int) {
	t.Helper()
	off, err := st.GetOffset(-1)
	require.NoError(t, err)
	for i := int(off) + 1; i < stop; i++ {
		if clog[i].Value == nil {
			require.NoError(t, st.Delete(clog[i].Key))
		} else {
			require.NoError(t, st.Set(clog[i].Key, clog[i].Value))
		}
		require.NoError(t, st.SetOffset(int64(i)))
	}
}

// crashMode is how owner 2's recovery of the partition ends.
type crashMode int

const (
	noCrash          crashMode = iota // control: owner 3 recovers on a fresh data dir
	crashMidRecovery                  // owner 2 crashes after the last shard record, before MarkRecovered
	crashAfterMark                    // owner 2 recovers everything, MarkRecovered, crashes before its offset is synced
)

// TestAdv21CrashMidRecoveryThenReplayRepeatsAFire: see the file comment.
// The second crash mode needs no interrupted rebuild: MarkRecovered's
// rebuild ends with a synced commit (IndexedUpTo = the table's
// watermark), the offset MarkRecovered then persists is written without a
// sync, and a process crash loses it (Options.Sync: "even a process crash
// can lose the most recent writes"). The next start replays the changelog
// from the last offset committed during the recovery (none here) over the
// table it kept.
func TestAdv21CrashMidRecoveryThenReplayRepeatsAFire(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		mode crashMode
	}{
		{"control: recovery not interrupted", noCrash},
		{"crash mid-recovery, restart on the kept store", crashMidRecovery},
		{"crash just after MarkRecovered, restart on the kept store", crashAfterMark},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			t1, t2 := t0.Add(time.Minute), t0.Add(2*time.Minute)

			// Owner 1: W1 = 12:00, put b (every 1m), advance to W2 =
			// 12:01 (fires b@12:01), then a put of c (a record after the
			// last shard record: the recovery of owner 2 is still
			// replaying when it crashes mid-recovery).
			h1 := &clogHarness{partitionHarness: newPartitionHarness(t, 100, t0)}
			h1.advance(t0)
			h1.drain()
			h1.command("b", t0, `{"v":1,"op":"put","job":{"every":"1m","payload":{"id":"b"}}}`)
			h1.drain()
			h1.advance(t1)
			h1.drain()
			h1.command("c", t1, `{"v":1,"op":"put","job":{"every":"1h","payload":{"id":"c"}}}`)
			h1.drain()
			require.Len(t, h1.fired()["b@2026-03-01T12:01:00Z"], 1, "owner 1 dispatched b@12:01")
			clog := h1.clog
			shardKey := h1.shardKey()
			lastShard := -1
			for i, r := range clog {
				if r.Key == shardKey {
					lastShard = i
				}
			}
			require.Greater(t, lastShard, 0)
			require.Less(t, lastShard, len(clog)-1)

			// Owner 2: an instance with an empty data dir recovers the
			// partition (deferred index) and crashes. No offset was
			// committed during its recovery (the 30 s commit).
			fs := vfs.NewCrashableMem()
			now := t1
			s2 := adv21Scheduler(t, fs, &recordingProducer{}, &now)
			fs3 := vfs.FS(vfs.NewMem()) // control: a fresh data dir
			if tc.mode != noCrash {
				st2, err := s2.StorageBuilder()(string(s2.cfg.Layout.SchedulerTable()), 0)
				require.NoError(t, err)
				require.NoError(t, st2.Open())
				switch tc.mode {
				case crashMidRecovery:
					adv21Replay(t, st2, clog, lastShard+1)
					require.NoError(t, s2.Store(0).Sync())
				case crashAfterMark:
					adv21Replay(t, st2, clog, len(clog))
					require.NoError(t, st2.MarkRecovered())
				}
				// The data dir's parents were created long ago (their
				// entries are durable): only the store's WAL is at stake.
				for _, d := range []string{"/", "/data", "/data/" + string(s2.cfg.Layout.SchedulerTable())} {
					f, err := fs.OpenDir(d)
					require.NoError(t, err)
					require.NoError(t, f.Sync())
					require.NoError(t, f.Close())
				}
				fs3 = fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
				require.NoError(t, st2.Close())
			}

			// Owner 3 (the restarted instance) on the store the crash left:
			// Open (rebuilding an interrupted deferred index, if any), goka
			// recovers from the stored offset, then the clock advances.
			prod3 := &recordingProducer{}
			s3 := adv21Scheduler(t, fs3, prod3, &now)
			st3, err := s3.StorageBuilder()(string(s3.cfg.Layout.SchedulerTable()), 0)
			require.NoError(t, err)
			require.NoError(t, st3.Open())
			t.Cleanup(func() { _ = st3.Close() })
			adv21Replay(t, st3, clog, len(clog))
			require.NoError(t, st3.MarkRecovered())

			upTo, err := s3.Store(0).IndexedUpTo()
			require.NoError(t, err)
			due, err := s3.Store(0).DueOf("b")
			require.NoError(t, err)
			sh, err := s3.shard(0)
			require.NoError(t, err)
			t.Logf("after recovery: indexed up to %s, b due at %s, watermark %s", upTo, due, sh.Watermark)

			h3 := &partitionHarness{t: t, s: s3, st: s3.Store(0), prod: prod3, now: t1, chunk: 100, budget: time.Hour}
			h3.advance(t2)
			h3.drain()
			fired := h3.fired()
			require.Len(t, fired["b@2026-03-01T12:02:00Z"], 1, "the new owner dispatches b@12:02")
			require.Empty(t, fired["b@2026-03-01T12:01:00Z"],
				"b@12:01 dispatched again by the new owner (owner 1 dispatched it in its advance to 12:01, recorded in the changelog); fired: %v", fired)
		})
	}
}

// TestAdv21OwnWritesReplayedOverAdvancedIndex is the same mechanism without
// 2f7ff01 (it fails on the parent commit too; reported as pre-existing, and
// its reachability is less sure): an owner that advanced the shard itself
// (ApplyMoves stored IndexedUpTo = 12:01) crashes while the acks of its last
// changelog writes are in flight, so its persisted offset trails its table
// (here: no offset persisted at all since its recovery). The restart
// replays those writes over the kept table with the indexer running: b's
// entry is derived again under the replayed shard record of 12:00, the
// replay ends on the shard record of 12:01 = IndexedUpTo, nothing rebuilds,
// and the next advance sends b@12:01 again.
func TestAdv21OwnWritesReplayedOverAdvancedIndex(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	t1, t2 := t0.Add(time.Minute), t0.Add(2*time.Minute)
	fs := vfs.NewCrashableMem()
	now := t0
	prod := &recordingProducer{}
	s1 := adv21Scheduler(t, fs, prod, &now)
	st1, err := s1.StorageBuilder()(string(s1.cfg.Layout.SchedulerTable()), 0)
	require.NoError(t, err)
	require.NoError(t, st1.Open())
	require.NoError(t, st1.MarkRecovered())
	h1 := &clogHarness{partitionHarness: &partitionHarness{t: t, s: s1, st: s1.Store(0), prod: prod, now: t0, chunk: 100, budget: time.Hour}}
	h1.advance(t0)
	h1.drain()
	h1.command("b", t0, `{"v":1,"op":"put","job":{"every":"1m","payload":{"id":"b"}}}`)
	h1.drain()
	h1.advance(t1)
	h1.drain()
	require.Len(t, h1.fired()["b@2026-03-01T12:01:00Z"], 1, "owner 1 dispatched b@12:01")
	require.NoError(t, s1.Store(0).Sync())
	for _, d := range []string{"/", "/data", "/data/" + string(s1.cfg.Layout.SchedulerTable())} {
		f, err := fs.OpenDir(d)
		require.NoError(t, err)
		require.NoError(t, f.Sync())
		require.NoError(t, f.Close())
	}
	fs2 := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	require.NoError(t, st1.Close())

	now = t1
	prod2 := &recordingProducer{}
	s2 := adv21Scheduler(t, fs2, prod2, &now)
	st2, err := s2.StorageBuilder()(string(s2.cfg.Layout.SchedulerTable()), 0)
	require.NoError(t, err)
	require.NoError(t, st2.Open())
	t.Cleanup(func() { _ = st2.Close() })
	adv21Replay(t, st2, h1.clog, len(h1.clog))
	require.NoError(t, st2.MarkRecovered())
	upTo, err := s2.Store(0).IndexedUpTo()
	require.NoError(t, err)
	due, err := s2.Store(0).DueOf("b")
	require.NoError(t, err)
	t.Logf("after recovery: indexed up to %s, b due at %s", upTo, due)
	h2 := &partitionHarness{t: t, s: s2, st: s2.Store(0), prod: prod2, now: t1, chunk: 100, budget: time.Hour}
	h2.advance(t2)
	h2.drain()
	fired := h2.fired()
	require.Len(t, fired["b@2026-03-01T12:02:00Z"], 1, "the restarted owner dispatches b@12:02")
	require.Empty(t, fired["b@2026-03-01T12:01:00Z"], "b@12:01 dispatched again after the restart; fired: %v", fired)
}
