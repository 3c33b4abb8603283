// Adversary round 33 killed the discard of commit 88bb426 (a RemoveAll of
// the store's directory) in the middle: 111 of 256 subsets of the store's
// files left unlinked gave a store that never opened again (pebble's
// "could not open manifest file", "unknown to the objstorage provider").
// The discard is now one rename; these tests kill it at each step that is
// left: while an older discarded copy is removed (any subset of its files
// gone), and before the rename.

package store

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/testenv/datadir"
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
	datadir.CopyAsKilled(t, dir, crashed) // the data dir as a kill leaves it
	require.NoError(t, s.Close())
	return crashed
}

// TestInterruptedDiscardBeforeRename: killed after removing the older
// copy, before the rename: the store is still the marked one, and the next
// Open discards it, empty with no offset.
func TestInterruptedDiscardBeforeRename(t *testing.T) {
	crashed := crashedUnsettledStore(t)
	opts := Options{Indexer: testIndexer, Logger: quiet, Settled: func() error { return nil }}
	o1 := opts
	o1.FS = failingRenameFS{FS: vfs.Default}
	require.ErrorIs(t, New(crashed, o1).Open(), errCrash)
	requireOpensEmpty(t, crashed, opts)
	names, err := os.ReadDir(crashed + DiscardedSuffix)
	require.NoError(t, err)
	require.NotEmpty(t, names, "the discarded store is kept beside it")
}

// TestInterruptedDiscardOfOlderCopy: a discarded copy from an earlier
// discard is there, and the kill lands while it is being removed, after
// any subset of its files: the next Open still discards the marked store
// and opens empty.
func TestInterruptedDiscardOfOlderCopy(t *testing.T) {
	base := crashedUnsettledStore(t)
	files, err := os.ReadDir(base)
	require.NoError(t, err)
	n := min(len(files), 6)
	for mask := 0; mask < 1<<n; mask++ {
		dir := filepath.Join(t.TempDir(), "s")
		datadir.CopyAsKilled(t, base, dir)
		datadir.CopyAsKilled(t, base, dir+DiscardedSuffix) // an older discarded copy
		opts := Options{Indexer: testIndexer, Logger: quiet, Settled: func() error { return nil }}
		o1 := opts
		o1.FS = crashingRemoveFS{FS: vfs.Default, first: func(names []string) []string {
			sort.Strings(names)
			var out []string
			for i, nm := range names {
				if i < n && mask&(1<<i) != 0 {
					out = append(out, nm)
				}
			}
			return out
		}}
		require.ErrorIs(t, New(dir, o1).Open(), errCrash, "mask %b", mask)
		requireOpensEmpty(t, dir, opts)
	}
}

// failingRenameFS is the OS file system killed before a rename.
type failingRenameFS struct{ vfs.FS }

func (failingRenameFS) Rename(string, string) error { return errCrash }

// requireOpensEmpty opens the store at dir: it must open, empty, with no
// offset (goka restores it from the changelog's start).
func requireOpensEmpty(t *testing.T, dir string, opts Options) {
	t.Helper()
	s := New(dir, opts)
	require.NoError(t, s.Open())
	defer func() { require.NoError(t, s.Close()) }()
	off, err := s.GetOffset(-1)
	require.NoError(t, err)
	require.Equal(t, int64(-1), off)
	require.Empty(t, tableState(t, s))
}
