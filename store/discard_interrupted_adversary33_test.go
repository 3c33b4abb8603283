//go:build adversary33

package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// crashingRemoveFS is the OS file system whose RemoveAll removes only the
// directory entries first (in order) removes, and then "crashes" (returns
// an error, as a process killed in the middle of os.RemoveAll leaves the
// directory): os.RemoveAll unlinks in readdir order, which on ext4/xfs is
// hash order, so any subset of a store's files can be gone when a kill
// lands mid-discard.
type crashingRemoveFS struct {
	vfs.FS
	first func(names []string) []string
}

var errCrash = errors.New("killed in the middle of RemoveAll")

func (f crashingRemoveFS) RemoveAll(dir string) error {
	names, err := f.FS.List(dir)
	if err != nil {
		return err
	}
	for _, n := range f.first(names) {
		if err := f.FS.Remove(f.FS.PathJoin(dir, n)); err != nil {
			return err
		}
	}
	return errCrash
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if d.Name() == "LOCK" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	}))
}

// crashedUnsettledStore builds, on disk, a scheduler-like store as a kill
// leaves it: recovered from a changelog of 50 records (offsets 0..49), the
// memtable flushed (the mark, the index version and the recovered table in
// an sstable), then writes of its own: key-00001 and key-00002 acknowledged
// (offsets 50, 51), and key-00003 written to the store only (its
// changelog write never acknowledged: the store is ahead).
func crashedUnsettledStore(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "live")
	opts := Options{Indexer: testIndexer, Logger: quiet, Settled: func() error { return errors.New("never closed") }}
	s := New(dir, opts)
	require.NoError(t, s.Open())
	for i := 0; i < 50; i++ {
		require.NoError(t, s.Set(keyN(i), val(at(i), "")))
		require.NoError(t, s.SetOffset(int64(i)))
	}
	require.NoError(t, s.MarkRecovered())
	require.NoError(t, s.db.Flush()) // a memtable flush, as pebble does on its own when it fills
	require.NoError(t, s.Set(keyN(1), val(at(1001), "")))
	require.NoError(t, s.SetOffset(50))
	require.NoError(t, s.Set(keyN(2), val(at(1002), "")))
	require.NoError(t, s.SetOffset(51))
	require.NoError(t, s.Set(keyN(3), val(at(1003), ""))) // ahead: never acknowledged
	require.NoError(t, s.Sync())
	crashed := filepath.Join(t.TempDir(), "crashed")
	copyTree(t, dir, crashed) // the data dir as a kill leaves it
	require.NoError(t, s.Close())
	return crashed
}

// TestAdv33InterruptedDiscardKeepsAheadStore: the next Open must discard
// the unsettled store. A kill in the middle of that discard (RemoveAll
// having unlinked pebble's marker, MANIFEST and OPTIONS files, not yet the
// WAL) leaves a directory that the Open after it takes for a *fresh* DB
// while pebble replays the leftover WAL into it: the store opens holding
// the unacknowledged write (ahead of its changelog), no mark, an offset of
// 51 (so goka restores only past 51) and none of the 47 other recovered
// records. Expected: an empty store with no offset (restored from 0).
func TestAdv33InterruptedDiscardKeepsAheadStore(t *testing.T) {
	crashed := crashedUnsettledStore(t)
	names, err := os.ReadDir(crashed)
	require.NoError(t, err)
	var ls []string
	for _, n := range names {
		ls = append(ls, n.Name())
	}
	sort.Strings(ls)
	t.Logf("crashed store files: %v", ls)

	opts := Options{Indexer: testIndexer, Logger: t.Logf, Settled: func() error { return nil }}
	// Open #1 starts the discard and is killed after unlinking the
	// metadata files (one readdir order among many).
	o1 := opts
	o1.FS = crashingRemoveFS{FS: vfs.Default, first: func(names []string) []string {
		var out []string
		for _, n := range names {
			if strings.HasPrefix(n, "marker.") || strings.HasPrefix(n, "MANIFEST-") || strings.HasPrefix(n, "OPTIONS-") {
				out = append(out, n)
			}
		}
		return out
	}}
	s1 := New(crashed, o1)
	require.ErrorIs(t, s1.Open(), errCrash)

	// Open #2 after the restart.
	s2 := New(crashed, opts)
	require.NoError(t, s2.Open())
	defer s2.Close()
	off, err := s2.GetOffset(-1)
	require.NoError(t, err)
	state := tableState(t, s2)
	t.Logf("after the interrupted discard: offset %d, table %d keys: %v", off, len(state), sortedKeys(state))
	require.Equal(t, int64(-1), off, "an unsettled store must be restored from offset 0 (goka reads from off+1)")
	require.Empty(t, state, "the store must be empty (nothing kept from the unsettled store)")
}

// TestAdv33InterruptedDiscardUnopenable: the other half of the orders: the
// kill lands after RemoveAll unlinked an sstable but not the MANIFEST. The
// store then fails to open at every restart (pebble's consistency check),
// and the partition can never be assigned here again until an operator
// removes the directory by hand.
func TestAdv33InterruptedDiscardUnopenable(t *testing.T) {
	crashed := crashedUnsettledStore(t)
	opts := Options{Indexer: testIndexer, Logger: quiet, Settled: func() error { return nil }}
	o1 := opts
	o1.FS = crashingRemoveFS{FS: vfs.Default, first: func(names []string) []string {
		for _, n := range names {
			if strings.HasSuffix(n, ".sst") {
				return []string{n}
			}
		}
		return nil
	}}
	require.ErrorIs(t, New(crashed, o1).Open(), errCrash)
	for restart := 0; restart < 3; restart++ {
		s := New(crashed, opts)
		err := s.Open()
		if err == nil {
			_ = s.Close()
		}
		require.NoError(t, err, "restart %d: the store must open (discarded, empty)", restart)
	}
}

// TestAdv33InterruptedDiscardEverySubset: every subset of the store's files
// that a kill in the middle of the discard's RemoveAll can leave unlinked
// (os.RemoveAll unlinks in readdir order, arbitrary on ext4/xfs). After
// each, the next Open must give an empty store with no offset. Lists the
// subsets after which it does not (fails to open, or keeps data).
func TestAdv33InterruptedDiscardEverySubset(t *testing.T) {
	base := crashedUnsettledStore(t)
	var bad []string
	var total int
	for mask := 0; mask < 1<<10; mask++ {
		dir := filepath.Join(t.TempDir(), "s")
		copyTree(t, base, dir)
		opts := Options{Indexer: testIndexer, Logger: quiet, Settled: func() error { return nil }}
		o1 := opts
		var listed []string
		o1.FS = crashingRemoveFS{FS: vfs.Default, first: func(names []string) []string {
			sort.Strings(names)
			listed = names
			var out []string
			for i, n := range names {
				if mask&(1<<i) != 0 {
					out = append(out, n)
				}
			}
			return out
		}}
		require.ErrorIs(t, New(dir, o1).Open(), errCrash)
		if mask >= 1<<len(listed) {
			break
		}
		total++
		var removed []string
		for i, n := range listed {
			if mask&(1<<i) != 0 {
				removed = append(removed, n)
			}
		}
		s := New(dir, opts)
		if err := s.Open(); err != nil {
			bad = append(bad, "unlinked "+strings.Join(removed, ",")+": Open fails: "+err.Error())
			continue
		}
		off, err := s.GetOffset(-1)
		require.NoError(t, err)
		if st := tableState(t, s); len(st) != 0 || off != -1 {
			bad = append(bad, "unlinked "+strings.Join(removed, ",")+": kept data")
		}
		require.NoError(t, s.Close())
	}
	t.Logf("files at the discard: %d subsets tried", total)
	for _, b := range bad {
		t.Log(b)
	}
	require.Empty(t, bad, "%d of %d interrupted discards leave a store that does not open empty", len(bad), total)
}
