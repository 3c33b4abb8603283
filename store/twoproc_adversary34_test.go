package store

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"
)

// Adversary round 34: the discard ran before Pebble took the store's
// LOCK, so it moved aside a store another process had open (two
// instances on one --data-dir, whose default is ./.chronos; or a partition
// that moved to another process before the old owner's close finished).
// The old owner then closed settled and its settle() removed the mark of
// the *new* store in the directory by its path. The new owner, killed,
// left a store with a write its changelog lacked and no mark: the next
// Open trusted it. The discard now takes Pebble's lock first, and a
// close removes its mark before it releases the lock.

const adv34ChildEnv = "CHRONOS_ADV34_CHILD_DIR"

// TestAdv34ChildHolder is the other process: it opens the store, recovers,
// writes (acknowledged), says READY, waits for a line on stdin, closes
// settled and says CLOSED.
func TestAdv34ChildHolder(t *testing.T) {
	dir := os.Getenv(adv34ChildEnv)
	if dir == "" {
		t.Skip("helper process only")
	}
	s := New(dir, Options{Indexer: testIndexer, Logger: quiet, Settled: func() error { return nil }})
	require.NoError(t, s.Open())
	require.NoError(t, s.Set(keyN(1), val(at(1), "")))
	require.NoError(t, s.SetOffset(0))
	require.NoError(t, s.MarkRecovered())
	require.NoError(t, s.Set(keyN(1), val(at(2), "")))
	require.NoError(t, s.SetOffset(1))
	require.NoError(t, s.Sync())
	fmt.Println("READY")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	require.NoError(t, s.Close())
	fmt.Println("CLOSED")
}

// TestAdv34SecondProcessWaitsForTheLiveStore: the new owner of a store
// another process still has open neither discards it nor opens it; once
// the old owner has closed it settled, the store is kept.
func TestAdv34SecondProcessWaitsForTheLiveStore(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "chronos-scheduler-table", "0")

	cmd := exec.Command(os.Args[0], "-test.run=^TestAdv34ChildHolder$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), adv34ChildEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	waitLine := func(want string) {
		t.Helper()
		deadline := time.After(60 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				require.True(t, ok, "child ended before %s", want)
				t.Logf("child: %s", l)
				if l == want {
					return
				}
			case <-deadline:
				t.Fatalf("no %s from the child", want)
			}
		}
	}
	waitLine("READY")

	// Pebble alone refuses a second process on the open store (its LOCK).
	po := &pebble.Options{}
	_, perr := pebble.Open(dir, po)
	require.Error(t, perr, "pebble's LOCK held by the other process")
	t.Logf("pebble.Open on the live store from a second process: %v", perr)

	// This process's store (a new owner) opens on the same dir: refused
	// while the other process holds it, as Pebble's own Open is.
	opts := Options{Indexer: testIndexer, Logger: quiet, Settled: func() error { return nil }}
	discarded := false
	opts.OnDiscarded = func(string) { discarded = true }
	require.ErrorContains(t, New(dir, opts).Open(), "locked", "a store another process has open is not discarded under it")
	_, err = os.Stat(dir + DiscardedSuffix)
	require.True(t, os.IsNotExist(err), "nothing moved aside")

	// The old owner closes settled: its mark goes, under its lock; the new
	// owner's Open then keeps the store, the old owner's writes in it.
	_, err = fmt.Fprintln(stdin, "close")
	require.NoError(t, err)
	waitLine("CLOSED")
	s2 := New(dir, opts)
	require.NoError(t, s2.Open())
	defer s2.Close()
	require.False(t, discarded, "a settled store is kept")
	v, err := s2.Get(keyN(1))
	require.NoError(t, err)
	require.Equal(t, val(at(2), ""), v)
}
