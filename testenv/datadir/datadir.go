// Package datadir gives tests a data directory as a kill leaves it: a copy
// of a running instance's (or store's) files, taken while they are open.
// It imports nothing of Chronos, so that the store's own tests can use it.
package datadir

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// CopyAsKilled copies the files under src to dst as they are at this
// moment, what a kill of the process holding them would leave on disk:
// no flush, no close. Pebble's LOCK files are left out (a new process
// takes its own). It fails t on any error.
func CopyAsKilled(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
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
	})
	if err != nil {
		t.Fatalf("copying %s as a kill leaves it: %v", src, err)
	}
}
