// Adversary round 59: the index build's directory and errors (eb80657,
// store/indexbuild.go, Store.indexAll).
//
// Run:
//
//	go test -count 1 -run Adv59 ./store/
package store

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// adv59Junk fills dir (the store's index-build.tmp) with what an older
// crash may leave: a half-written run under a name the next build uses,
// a file that is no sstable, and a nested directory.
func adv59Junk(t *testing.T, fs vfs.FS, dir string) {
	t.Helper()
	require.NoError(t, fs.MkdirAll(fs.PathJoin(dir, "nested", "deeper"), 0o755))
	for _, name := range []string{"000001.sst", "000002.sst", "junk.txt", "nested/deeper/x.sst"} {
		f, err := fs.Create(fs.PathJoin(dir, name), vfs.WriteCategoryUnspecified)
		require.NoError(t, err)
		_, err = f.Write([]byte("not an sstable " + strings.Repeat("\xff", 100)))
		require.NoError(t, err)
		require.NoError(t, f.Sync())
		require.NoError(t, f.Close())
	}
}

// TestAdv59StaleBuildDirWithJunkIsReplaced (held): a store directory that
// holds a stale index-build.tmp with junk (a garbage 000001.sst, the name
// the next build's first file takes, a nested directory) is cleared by
// the next rebuild: the rebuild succeeds, its indexes equal the model, no
// junk is ingested, and the directory is gone afterwards and after a
// reopen.
//
//	go test -count 1 -run TestAdv59StaleBuildDirWithJunkIsReplaced ./store/
func TestAdv59StaleBuildDirWithJunkIsReplaced(t *testing.T) {
	adv58RunBytes(t, 600)
	mem := vfs.NewMem()
	s := New("/db", Options{FS: mem, Indexer: testIndexer, Logger: quiet, DeferIndexOnRecovery: true})
	require.NoError(t, s.Open())
	rng := rand.New(rand.NewPCG(59, 1))
	m := adv58Fill(t, s, rng, 400)
	adv59Junk(t, mem, "/db/"+indexBuildDir)
	require.NoError(t, s.MarkRecovered())
	adv58Check(t, s, m, rng, "deferred recovery over a stale build dir")
	adv59Junk(t, mem, "/db/"+indexBuildDir)
	require.NoError(t, s.RebuildIndexes(at(5)))
	adv58Check(t, s, m, rng, "live rebuild over a stale build dir")
	s = reopen(t, s)
	adv58Check(t, s, m, rng, "after a reopen")
}

// TestAdv59CloseErrorKeepsTheIndex (held): "errors from RemoveAll, OpenDir
// and Sync are reported, but never turn a successful rebuild into a lost
// index". After every run is ingested, the build's clean-up fails (the
// store directory cannot be opened for its sync): MarkRecovered reports
// the error; the store keeps serving the full index; a reopen (the
// rebuilding mark is still there) rebuilds and ends clean.
//
//	go test -count 1 -run TestAdv59CloseErrorKeepsTheIndex ./store/
func TestAdv59CloseErrorKeepsTheIndex(t *testing.T) {
	adv58RunBytes(t, 600)
	for _, failOp := range []string{"opendir", "removeall"} {
		mem := vfs.NewMem()
		fs := &adv58FS{FS: mem}
		s := New("/db", Options{FS: fs, Indexer: testIndexer, Logger: quiet, DeferIndexOnRecovery: true})
		require.NoError(t, s.Open())
		rng := rand.New(rand.NewPCG(59, 2))
		m := adv58Fill(t, s, rng, 300)
		ingested := false
		fs.setHook(func(op, path string) error {
			if op == "link" && strings.Contains(path, indexBuildDir) {
				ingested = true
			}
			if op == failOp && ingested && (path == "/db" || strings.HasSuffix(path, indexBuildDir)) {
				return errors.New("injected: " + op + " " + path)
			}
			return nil
		})
		err := s.MarkRecovered()
		fs.setHook(nil)
		if !ingested {
			t.Skipf("%s: the MemFS ingest copies instead of linking", failOp)
		}
		require.Error(t, err, "%s: the clean-up's failure is reported", failOp)
		t.Logf("%s: MarkRecovered: %v", failOp, err)
		due, _ := adv58Expect(m)
		got, err := s.DueUpTo(maxTime, Due{}, 0)
		require.NoError(t, err)
		require.Len(t, got, len(due), "%s: the ingested index is served after the failed clean-up", failOp)
		require.NoError(t, s.Close())
		s2 := New("/db", Options{FS: mem, Indexer: testIndexer, Logger: quiet, DeferIndexOnRecovery: true})
		require.NoError(t, s2.Open())
		adv58Check(t, s2, m, rng, failOp+": reopened after a failed clean-up")
		require.NoError(t, s2.Close())
	}
}

// TestAdv59LiveRebuildCrashLeavesBuildDir: "no build files (index-build.tmp
// inside the store dir) are left; they are removed before and after each
// rebuild" (docs/architecture.md, "The index pass as sorted sstables").
//
// A live RebuildIndexes (ensureIndex, or a format change) commits its
// "rebuilding" mark and the DeleteRanges of the indexes with the store's
// write options (NoSync unless Options.Sync), then creates
// /db/index-build.tmp and writes its runs. Nothing syncs the mark before
// the first ingest. Pebble syncs the store's directory whenever a
// background compaction finishes (compaction.go: objProvider.Sync), which
// makes the entry index-build.tmp durable. A power loss before the first
// ingest then keeps the build directory but loses the mark (and the
// DeleteRanges): the next Open finds a finished index and no mark,
// redoes nothing, and never removes the directory. It stays until some
// later rebuild, which on a live store may be never (with UnsyncedDataPercent
// > 0 the crash also keeps run files of up to 8 MiB each).
//
// Reproduction: a store (not deferred) with table data in two L0 files;
// RebuildIndexes with small runs; when it creates its first build file a
// compaction of the table's key range runs (it does not overlap the
// memtable, so no flush syncs the mark) and a crash clone is taken
// (UnsyncedDataPercent 0). The store opened on the clone has its old
// indexes (the rebuild's deletes are lost), no rebuilding mark, and
// /db/index-build.tmp. The deferred path is not affected (its mark is
// synced at Open). Fix ideas: remove a stale index-build.tmp at Open (the
// directory is only ever the build's), or sync the mark's batch before
// creating the directory. Sure it reproduces; low severity (disk space,
// an empty directory here).
// Fixed: Open removes a build directory left by a crash, under Pebble's lock.
//
//	go test -count 1 -run TestAdv59LiveRebuildCrashLeavesBuildDir ./store/
func TestAdv59LiveRebuildCrashLeavesBuildDir(t *testing.T) {
	adv58RunBytes(t, 600)
	mem := vfs.NewCrashableMem()
	fs := &adv58FS{FS: mem}
	opts := Options{FS: fs, Indexer: testIndexer, Logger: quiet}
	s := New("/db", opts)
	require.NoError(t, s.Open())
	require.NoError(t, s.MarkRecovered())
	rng := rand.New(rand.NewPCG(59, 3))
	adv58Fill(t, s, rng, 300)
	require.NoError(t, s.db.Flush())
	m := adv58Fill(t, s, rng, 300) // the same keys again: a second L0 file
	require.NoError(t, s.db.Flush())

	var clone *vfs.MemFS
	fs.setHook(func(op, path string) error {
		if op == "create" && strings.Contains(path, indexBuildDir) && clone == nil {
			// A background compaction finishes meanwhile (here: a manual
			// one of the table's keys, which the memtable does not hold).
			if err := s.db.Compact(context.Background(), []byte{prefixTable}, []byte{prefixTable + 1}, false); err != nil {
				return err
			}
			clone = mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
		}
		return nil
	})
	require.NoError(t, s.RebuildIndexes(at(5)))
	fs.setHook(nil)
	require.NoError(t, s.Close())
	require.NotNil(t, clone)

	s2 := New("/db", Options{FS: clone, Indexer: testIndexer, Logger: quiet})
	require.NoError(t, s2.Open())
	defer s2.Close()
	mark, err := s2.getRaw(metaKey(metaRebuilding))
	require.NoError(t, err)
	t.Logf("rebuilding mark after the crash: %v", mark != nil)
	require.Len(t, tableState(t, s2), len(m))
	_, err = clone.Stat("/db/" + indexBuildDir)
	if err == nil {
		names, _ := clone.List("/db/" + indexBuildDir)
		t.Logf("left in /db/%s: %v", indexBuildDir, names)
	}
	require.True(t, os.IsNotExist(err), "after a crash during a live rebuild, and an Open, the build directory is left: %v", err)
}
