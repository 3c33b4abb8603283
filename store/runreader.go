package store

import (
	"bytes"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// A run reader answers Get through one kept Pebble iterator while the
// keys asked for ascend (Options.RunReads). A point read (DB.Get) builds
// its view of every level for each key: for the history group, which
// reads a job's record for every dispatch event, that was ~8 µs of a
// fire's ~18 µs there, and the fan-out sends a chunk's events in key
// order, so the reads come in ascending runs. One iterator seeking
// forward (Pebble's SeekGE reuses its position for a later key) reads a
// run for a fraction of that.
//
// The iterator sees the table as it was when it was opened. What was
// written since is known by the writes' count (wseq, readcache.go: every
// write raises it when it begins and when it ends, with wmu held): Set
// and Delete note their key here before they write (wrote), so the
// iterator answers a key only if wseq has moved by exactly the noted
// writes and the key is not among them; any other write (a recovery's
// batch, index moves, a rebuild) leaves wseq ahead of the noted count
// and retires the iterator. Open, reopen and Close retire it too.
//
// A read of a key behind the iterator's last one (an executor's result
// among a chunk's dispatch events) is a point read and leaves the
// iterator where it is; runMinAscending ascending reads behind it (the
// next chunk's run) reopen it there.
//
// The iterator pins what it sees (the memtables and table files of its
// moment: a memtable flushed or a table compacted away since stays in
// memory or on disk while it is open), so it is retired after runMaxReads
// reads or runMaxWrites noted writes, as soon as a read finds it stale,
// and by a timer once it has answered no read
// for runIdle (adversary round 47: an idle history partition kept the
// tables compacted after its last read on disk until its next read).

const (
	// runMinAscending is how many reads in a row with ascending keys
	// open an iterator: a random order keeps point reads, which use the
	// Bloom filters an iterator cannot.
	runMinAscending = 8
	// runMaxReads is the most reads one iterator answers.
	runMaxReads = 4096
	// runMaxWrites is the most noted writes one iterator outlives.
	runMaxWrites = 1024
	// runIdle is how long an iterator that answers no read stays open
	// (between one and two of it).
	runIdle = time.Second
)

type runReader struct {
	mu     sync.Mutex
	it     *pebble.Iterator
	seq    uint64              // wseq when it was opened
	writes uint64              // writes noted since
	dirty  map[string]struct{} // their keys
	reads  int                 // reads it answered
	last   []byte              // the table key of the last read, whatever answered it
	next   []byte              // the buffer of the next one
	at     []byte              // the iterator's last seek key
	asc    int                 // reads in a row whose key was not below the one before
	hits   atomic.Uint64       // reads the iterator answered (tests, metrics)
	timer  *time.Timer         // retires an idle iterator (expire)
	seen   uint64              // hits at the timer's last look
}

// get is Get of key through the iterator; ok false: the caller reads from
// Pebble. The caller holds s.mu (read) and has committed a recovery's
// pending writes (acquire).
func (r *runReader) get(s *Store, key string) (v []byte, ok bool, err error) {
	if !r.mu.TryLock() {
		return nil, false, nil // another reader has it: a point read
	}
	defer r.mu.Unlock()
	r.next = append(append(r.next[:0], prefixTable), key...)
	ascending := len(r.last) > 0 && bytes.Compare(r.next, r.last) >= 0
	r.last, r.next = r.next, r.last
	if ascending {
		r.asc++
	} else {
		r.asc = 0
	}
	if r.it != nil && (r.reads >= runMaxReads || s.wseq.Load() != r.seq+2*r.writes) {
		r.closeLocked()
	}
	if r.it == nil {
		if r.asc < runMinAscending || !r.openLocked(s) {
			return nil, false, nil
		}
	} else if bytes.Compare(r.last, r.at) < 0 {
		if r.asc < runMinAscending {
			// Behind the iterator (a read out of the run, like an
			// executor's result among a chunk's dispatch events): a
			// point read, and the run goes on at the next key ahead.
			return nil, false, nil
		}
		// A new run began behind it (the next chunk): one from here.
		r.closeLocked()
		if !r.openLocked(s) {
			return nil, false, nil
		}
	}
	if _, written := r.dirty[key]; written {
		return nil, false, nil
	}
	r.reads++
	r.at = append(r.at[:0], r.last...)
	if !r.it.SeekGE(r.last) {
		if r.it.Error() != nil {
			r.closeLocked()
			return nil, false, nil // the point read reports it
		}
		r.hits.Add(1)
		return nil, true, nil
	}
	if !bytes.Equal(r.it.Key(), r.last) {
		r.hits.Add(1)
		return nil, true, nil
	}
	val, err := r.it.ValueAndErr()
	if err != nil {
		r.closeLocked()
		return nil, false, nil
	}
	r.hits.Add(1)
	return bytes.Clone(val), true, nil
}

// openLocked opens the iterator if no write is under way or begins while
// it opens (wseq even and unchanged): it then sees every write that ended
// before it.
func (r *runReader) openLocked(s *Store) bool {
	seq := s.wseq.Load()
	if seq%2 != 0 {
		return false
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixTable}, UpperBound: []byte{prefixTable + 1}})
	if err != nil {
		return false
	}
	if s.wseq.Load() != seq {
		_ = it.Close()
		return false
	}
	r.it, r.seq, r.writes, r.reads = it, seq, 0, 0
	r.at = r.at[:0]
	if r.dirty == nil {
		r.dirty = make(map[string]struct{})
	}
	clear(r.dirty)
	r.seen = r.hits.Load()
	if r.timer == nil {
		r.timer = time.AfterFunc(runIdle, r.expire)
	} else {
		r.timer.Reset(runIdle)
	}
	return true
}

// expire retires the iterator if it answered no read since the timer's
// last look, else looks again after runIdle.
func (r *runReader) expire() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.it == nil {
		return
	}
	if h := r.hits.Load(); h != r.seen {
		r.seen = h
		r.timer.Reset(runIdle)
		return
	}
	r.closeLocked()
}

// wrote notes a Set or Delete of key, after its beginWrite and before it
// writes anything (the caller holds wmu).
func (r *runReader) wrote(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.it == nil {
		return
	}
	r.writes++
	if r.writes > runMaxWrites {
		r.closeLocked()
		return
	}
	r.dirty[key] = struct{}{}
}

// retire closes the iterator (Open, reopen, Close: the caller holds s.mu
// for writing, so no read is under way).
func (r *runReader) retire() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closeLocked()
	r.last = r.last[:0]
	r.asc = 0
}

func (r *runReader) closeLocked() {
	if r.it == nil {
		return
	}
	if r.timer != nil {
		r.timer.Stop()
	}
	_ = r.it.Close()
	r.it = nil
	clear(r.dirty)
}

// notePut notes a Set or Delete of key for the run reader (see wrote).
func (s *Store) notePut(key string) {
	if s.runs != nil {
		s.runs.wrote(key)
	}
}

// retireRuns closes the run reader's iterator (see retire).
func (s *Store) retireRuns() {
	if s.runs != nil {
		s.runs.retire()
	}
}

// RunHits returns how many reads the run reader answered (Options.RunReads).
func (s *Store) RunHits() uint64 {
	if s.runs == nil {
		return 0
	}
	return s.runs.hits.Load()
}
