package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// indexBuildDir is where a rebuild writes its sstables before it ingests
// them: inside the store's directory (Pebble ignores it), removed before
// and after each rebuild.
const indexBuildDir = "index-build.tmp"

// indexBuildRunBytes bounds the due and bucket entries a rebuild holds in
// memory: past it, they are sorted and written as one sstable, and the
// next run starts. Runs overlap one another (each covers all times), so
// more runs are more level-0 files for Pebble to compact after the
// ingest; fewer are more memory while several partitions rebuild at once.
// A variable for tests.
var indexBuildRunBytes = 8 << 20

// indexBuild writes a rebuild's index entries (updateIndex's operations
// for records that had none) as sorted sstables, ingested together at the
// end: no memtable, WAL or flush for them, and the reverse entries, which
// come in key order, land where no compaction rewrites them. It is a
// batchWriter that only sets.
type indexBuild struct {
	fs       vfs.FS
	storeDir string
	dir      string
	opts     sstable.WriterOptions
	// rev writes the reverse entries as they come (the table is iterated
	// in key order, so they are sorted) to revPath.
	rev     *sstable.Writer
	revPath string
	// arena holds the due and bucket keys of the current run, spans
	// where each is; files are the runs written.
	arena []byte
	spans [][2]uint32
	files []string
	n     int // files created
}

func newIndexBuild(fs vfs.FS, storeDir string, opts sstable.WriterOptions) (*indexBuild, error) {
	dir := fs.PathJoin(storeDir, indexBuildDir)
	if err := fs.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &indexBuild{fs: fs, storeDir: storeDir, dir: dir, opts: opts}, nil
}

func (b *indexBuild) create() (*sstable.Writer, string, error) {
	b.n++
	path := b.fs.PathJoin(b.dir, fmt.Sprintf("%06d.sst", b.n))
	f, err := b.fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, "", err
	}
	return sstable.NewWriter(objstorageprovider.NewFileWritable(f), b.opts), path, nil
}

// Set adds an index entry: a reverse entry to the sorted file, a due or
// bucket entry to the current run.
func (b *indexBuild) Set(key, value []byte, _ *pebble.WriteOptions) error {
	if key[0] == prefixReverse {
		if b.rev == nil {
			w, path, err := b.create()
			if err != nil {
				return err
			}
			b.rev, b.revPath = w, path
		}
		return b.rev.Set(key, value)
	}
	if len(value) != 0 {
		return fmt.Errorf("store: index build: a value for %q", key)
	}
	start := len(b.arena)
	b.arena = append(b.arena, key...)
	b.spans = append(b.spans, [2]uint32{uint32(start), uint32(len(b.arena))})
	if len(b.arena)+8*len(b.spans) >= indexBuildRunBytes {
		return b.spill()
	}
	return nil
}

// Delete is never called: a rebuild starts from no entries.
func (b *indexBuild) Delete(key []byte, _ *pebble.WriteOptions) error {
	return fmt.Errorf("store: index build: a delete of %q", key)
}

// spill sorts the current run and writes it as one sstable.
func (b *indexBuild) spill() error {
	if len(b.spans) == 0 {
		return nil
	}
	key := func(s [2]uint32) []byte { return b.arena[s[0]:s[1]] }
	slices.SortFunc(b.spans, func(x, y [2]uint32) int { return bytes.Compare(key(x), key(y)) })
	w, path, err := b.create()
	if err != nil {
		return err
	}
	var prev []byte
	for _, s := range b.spans {
		k := key(s)
		if prev != nil && bytes.Equal(k, prev) {
			continue // the same entry twice (a record's due key is unique)
		}
		if err := w.Set(k, nil); err != nil {
			return errors.Join(err, w.Close())
		}
		prev = k
	}
	if err := w.Close(); err != nil {
		return err
	}
	b.files = append(b.files, path)
	b.arena, b.spans = b.arena[:0], b.spans[:0]
	return nil
}

// ingest writes what is left and ingests every file into db.
func (b *indexBuild) ingest(db *pebble.DB) error {
	var rev []string
	if b.rev != nil {
		err := b.rev.Close()
		b.rev = nil
		if err != nil {
			return err
		}
		rev = []string{b.revPath}
	}
	if err := b.spill(); err != nil {
		return err
	}
	// Pebble ingests in one call only files that do not overlap: the runs
	// overlap one another (not the reverse entries' file, which goes with
	// the first), so each run is an ingest of its own.
	if len(b.files) == 0 && len(rev) > 0 {
		return db.Ingest(context.Background(), rev)
	}
	for i, run := range b.files {
		paths := []string{run}
		if i == 0 {
			paths = append(paths, rev...)
		}
		if err := db.Ingest(context.Background(), paths); err != nil {
			return err
		}
	}
	return nil
}

// close removes the build's files (after an ingest, Pebble has its own
// links or copies) and syncs the store's directory, so that a crash after
// it does not bring them back (Pebble synced the directory with them in
// it during the ingest; adversary round 58).
func (b *indexBuild) close() error {
	if b.rev != nil {
		_ = b.rev.Close()
		b.rev = nil
	}
	if err := b.fs.RemoveAll(b.dir); err != nil {
		return err
	}
	d, err := b.fs.OpenDir(b.storeDir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
