//go:build adversary20

package store

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// TestAdversary20ReadOnFullDiskKillsProcess: a read of a recovering store
// now writes: acquire() commits the pending recovery batch. When that
// commit needs a new memtable (and so a new WAL file) on a full disk,
// pebble's rotateWAL panics while holding its mutex and the process dies
// with the unrecoverable "fatal error: sync: unlock of unlocked mutex",
// raised from inside Store.Get: recoverFatal cannot turn it into ErrFatal,
// OnFatal is never called, and the goroutine that kills the process is a
// reader (View.Get, a metrics scrape's OpenMemory). Before 91c80d1 a read
// never wrote (the Sets that wrote were the ones exposed). The brief's
// question "can a read path panic?": yes, fatally. Run in a child process
// (the crash would take the test binary down).
//
// Open (tagged). Since the fix of this round, the reads that need no data
// (metrics, memory, the offset) no longer commit the batch
// (acquireNoCommit), so a scrape cannot do it; a read of the table or its
// indexes during a recovery still does. Nothing in Chronos reads a
// recovering table (goka's view refuses Get until it has recovered, and a
// processor's callbacks run after), and on a full disk the recovery's own
// writes end the process the same way (processors/faults/diskfull_test.go). A
// read that does not commit would need the batch indexed (Pebble's indexed
// batch) and every read path to read through it.
func TestAdversary20ReadOnFullDiskKillsProcess(t *testing.T) {
	if os.Getenv("ADV20_CHILD") == "1" {
		fullDiskReadChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAdversary20ReadOnFullDiskKillsProcess$", "-test.v")
	cmd.Env = append(os.Environ(), "ADV20_CHILD=1")
	out, err := cmd.CombinedOutput()
	s := string(out)
	if err != nil {
		i := strings.Index(s, "fatal error")
		if i < 0 {
			i = strings.Index(s, "panic")
		}
		excerpt := s
		if i >= 0 {
			excerpt = s[i:min(len(s), i+4000)]
		}
		inGet := strings.Contains(s, "store.(*Store).Get(")
		t.Fatalf("the child process died (%v) in a read (Store.Get on the stack: %v) instead of the read returning ErrFatal:\n%s", err, inGet, excerpt)
	}
	t.Logf("child:\n%s", s)
}

// maxWAL is the newest WAL file name in /db.
func maxWAL(t *testing.T, fs vfs.FS) string {
	names, err := fs.List("/db")
	if err != nil {
		t.Fatal(err)
	}
	w := ""
	for _, n := range names {
		if strings.HasSuffix(n, ".log") && n > w {
			w = n
		}
	}
	return w
}

// rotationAt returns how many 1 KB records, each committed on its own (a
// read after each Set), a fresh store takes before its first memtable
// (and WAL) rotation.
func rotationAt(t *testing.T) int {
	mem := vfs.NewMem()
	s := New("/db", Options{FS: mem, Logger: func(string, ...any) {}})
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w0 := maxWAL(t, mem)
	pad := strings.Repeat("z", 1000)
	for i := 0; i < 100000; i++ {
		if err := s.Set(fmt.Sprint("a", i), []byte(pad)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get("a0"); err != nil {
			t.Fatal(err)
		}
		if maxWAL(t, mem) != w0 {
			return i
		}
	}
	t.Fatal("no rotation")
	return 0
}

func fullDiskReadChild(t *testing.T) {
	r := rotationAt(t)
	var full atomic.Bool
	fs := errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		if full.Load() && op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
			return syscall.ENOSPC
		}
		return nil
	}))
	var fatals atomic.Int32
	s := New("/db", Options{FS: fs, Logger: func(string, ...any) {}, OnFatal: func(error) { fatals.Add(1) }})
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("z", 1000)
	// goka replays a changelog into a fresh store, read now and then (each
	// read commits the batch), until the memtable has less room left than
	// one batch.
	for i := 0; i < r-150; i++ {
		if err := s.Set(fmt.Sprint("a", i), []byte(pad)); err != nil {
			t.Fatal(err)
		}
		if err := s.SetOffset(int64(i)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get("a0"); err != nil {
			t.Fatal(err)
		}
	}
	full.Store(true)
	// The replay goes on into the pending batch until it is just under
	// recoveryBatchBytes: these Sets write nothing.
	for i := 0; ; i++ {
		s.wmu.Lock()
		n := 0
		if s.pending != nil {
			n = s.pending.Len()
		}
		s.wmu.Unlock()
		if n > recoveryBatchBytes-1500 {
			break
		}
		if err := s.Set(fmt.Sprint("b", i), []byte(pad)); err != nil {
			t.Logf("Set b%d: %v", i, err)
			return
		}
	}
	// A reader (View.Get, a metrics scrape) commits the batch, which needs
	// a new memtable and WAL. The contract on a full disk: ErrFatal from
	// the call and OnFatal, not a process crash.
	_, err := s.Get("a1")
	t.Logf("Get on a full disk: %v (fatals reported: %d)", err, fatals.Load())
}
