package history

import (
	"bytes"
	"sort"
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
)

// The merge functions fold one input into a job's history. Each is
// idempotent, and fires merge commutatively: whatever the order and the
// repetitions in which a job's dispatch events and results arrive, the
// history ends the same: the keep fires with the greatest (scheduled_at,
// fire_id suffix) among all seen, each with the earliest fired_at, and the
// outcome of its highest attempt (see mergeResult).

// fireKey orders fires: by scheduled time, then fire_id suffix.
type fireKey struct {
	at     time.Time
	suffix string
}

func (a fireKey) less(b fireKey) bool {
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	return a.suffix < b.suffix
}

// slot returns the fire for k in h, inserting it, or nil when h already
// keeps keep fires that all come after k (k is too old to be kept).
func slot(h *codecs.History, k fireKey, keep int) *codecs.FireEntry {
	i := sort.Search(len(h.Fires), func(i int) bool {
		return !(fireKey{h.Fires[i].ScheduledAt, h.Fires[i].Suffix}).less(k)
	})
	if i < len(h.Fires) && h.Fires[i].ScheduledAt.Equal(k.at) && h.Fires[i].Suffix == k.suffix {
		return &h.Fires[i]
	}
	if len(h.Fires) >= keep && i == 0 {
		return nil
	}
	h.Fires = append(h.Fires, codecs.FireEntry{})
	copy(h.Fires[i+1:], h.Fires[i:])
	h.Fires[i] = codecs.FireEntry{Suffix: k.suffix, ScheduledAt: k.at}
	if over := len(h.Fires) - keep; over > 0 {
		// More than keep (keep was lowered since the record was written):
		// the oldest go, the new one too if it is among them.
		h.Fires = append(h.Fires[:0], h.Fires[over:]...)
		if i -= over; i < 0 {
			return nil
		}
	}
	return &h.Fires[i]
}

// One fire, one entry: a fire is named by its fire_id, and a result may
// write its scheduled_at otherwise than the dispatch event (a triggered
// fire's time is not in its fire_id, so it cannot be checked when the
// result is read; seconds where the dispatch has milliseconds). A fire
// kept already is found by its suffix, wherever it is: a result joins it
// at its time; a dispatch event moves it to its own scheduled_at if no
// dispatch event was seen for it yet, or to an earlier one (so that the
// fire's time ends the same in any order of its dispatch events: the
// earliest). A result for a fire not kept yet places it at the result's
// scheduled_at until a dispatch event comes.

// keptIndex returns where the fire with suffix is kept in h (-1: not kept).
func keptIndex(h *codecs.History, suffix string) int {
	for i := range h.Fires {
		if h.Fires[i].Suffix == suffix {
			return i
		}
	}
	return -1
}

// dispatchMoves reports whether a dispatch event scheduled at t moves a
// kept fire (at, dispatched) (see above).
func dispatchMoves(at time.Time, dispatched bool, t time.Time) bool {
	return !at.Equal(t) && (!dispatched || t.Before(at))
}

// mergeDispatch folds a dispatch event of the job into h.
func mergeDispatch(h *codecs.History, suffix string, d codecs.Dispatch, keep int) {
	t := d.ScheduledAt.UTC()
	if i := keptIndex(h, suffix); i >= 0 && dispatchMoves(h.Fires[i].ScheduledAt, h.Fires[i].Dispatched, t) {
		e := h.Fires[i]
		h.Fires = append(h.Fires[:i], h.Fires[i+1:]...)
		if f := slot(h, fireKey{t, suffix}, keep); f != nil {
			*f = e
			f.ScheduledAt = t
			applyDispatch(f, d)
		}
		return
	} else if i >= 0 {
		t = h.Fires[i].ScheduledAt
	}
	if f := slot(h, fireKey{t, suffix}, keep); f != nil {
		applyDispatch(f, d)
	}
}

// applyDispatch folds a dispatch event into its fire's entry.
func applyDispatch(f *codecs.FireEntry, d codecs.Dispatch) {
	fired := d.FiredAt.UTC()
	if !f.Dispatched || fired.Before(f.FiredAt) {
		f.FiredAt = fired
	}
	f.Dispatched = true
	f.Missed = max(f.Missed, d.Missed)
	f.Trigger = max(f.Trigger, d.Trigger)
	f.Bucket = max(f.Bucket, codecs.Truncate(d.Bucket, 256))
}

// mergeResult folds a result into h. A higher attempt replaces the
// outcome; within the kept attempt, the start is the earliest reported and
// status, finish and error are those of the greatest result by (terminal
// before started, finished_at, status, error), so that the order of
// arrival does not matter.
func mergeResult(h *codecs.History, r codecs.Result, keep int) {
	t := r.ScheduledAt
	if i := keptIndex(h, r.Suffix); i >= 0 {
		t = h.Fires[i].ScheduledAt
	}
	if f := slot(h, fireKey{t, r.Suffix}, keep); f != nil {
		applyResult(f, r)
	}
}

// applyResult folds a result into its fire's entry (see mergeResult).
func applyResult(f *codecs.FireEntry, r codecs.Result) {
	errText := codecs.Truncate(r.Error, codecs.HistoryErrorBytes)
	switch {
	case r.Attempt < f.Attempt:
		return
	case r.Attempt > f.Attempt:
		f.Attempt, f.Status, f.StartedAt, f.FinishedAt, f.Error = r.Attempt, r.Status, r.StartedAt, r.FinishedAt, errText
		return
	}
	if !r.StartedAt.IsZero() && (f.StartedAt.IsZero() || r.StartedAt.Before(f.StartedAt)) {
		f.StartedAt = r.StartedAt
	}
	if outcomeLess(f.Status, f.FinishedAt, f.Error, r.Status, r.FinishedAt, errText) {
		f.Status, f.FinishedAt, f.Error = r.Status, r.FinishedAt, errText
	}
}

// outcomeLess orders the outcomes of one attempt.
func outcomeLess(s1 string, t1 time.Time, e1 string, s2 string, t2 time.Time, e2 string) bool {
	r1, r2 := s1 != codecs.StatusStarted, s2 != codecs.StatusStarted
	switch {
	case r1 != r2:
		return r2
	case !t1.Equal(t2):
		return t1.Before(t2)
	case s1 != s2:
		return s1 < s2
	}
	return e1 < e2
}

// mergeChange appends a command to h unless it was already applied (its
// offset is not after the last one), keeping the last keep.
func mergeChange(h *codecs.History, c codecs.Change, keep int) {
	if c.Offset <= h.CommandOffset {
		return
	}
	h.CommandOffset = c.Offset
	c = boundChange(c)
	h.Changes = append(h.Changes, c)
	if over := len(h.Changes) - keep; over > 0 {
		h.Changes = append(h.Changes[:0], h.Changes[over:]...)
	}
}

// boundChange cuts a change's strings to their bounds.
func boundChange(c codecs.Change) codecs.Change {
	c.Actor = codecs.Truncate(c.Actor, codecs.HistoryActorBytes)
	c.Detail = codecs.Truncate(c.Detail, codecs.HistoryDetailBytes)
	return c
}

// foldDispatch folds a dispatch event into the encoded record rec, in
// place (codecs.FoldFire) unless it moves its fire (see above): that rare
// case decodes, merges and encodes.
func foldDispatch(rec []byte, suffix string, d codecs.Dispatch, keep int) ([]byte, bool, error) {
	t := d.ScheduledAt.UTC()
	kept, dispatched, ok, err := codecs.FireBySuffix(rec, suffix)
	if err != nil {
		return nil, false, err
	}
	if ok && dispatchMoves(kept, dispatched, t) {
		h, err := codecs.DecodeHistory(rec)
		if err != nil {
			return nil, false, err
		}
		mergeDispatch(&h, suffix, d, keep)
		out := codecs.AppendHistory(nil, &h)
		return out, !bytes.Equal(out, rec), nil
	}
	if ok {
		t = kept
	}
	return codecs.FoldFire(rec, t, suffix, keep, func(f *codecs.FireEntry) { applyDispatch(f, d) })
}

// foldResult folds a result into the encoded record rec, in place.
func foldResult(rec []byte, r codecs.Result, keep int) ([]byte, bool, error) {
	t := r.ScheduledAt
	kept, _, ok, err := codecs.FireBySuffix(rec, r.Suffix)
	if err != nil {
		return nil, false, err
	}
	if ok {
		t = kept
	}
	return codecs.FoldFire(rec, t, r.Suffix, keep, func(f *codecs.FireEntry) { applyResult(f, r) })
}
