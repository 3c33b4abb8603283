package history

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// input is one dispatch event or one result of a job.
type input struct {
	suffix string
	d      *codecs.Dispatch
	r      *codecs.Result
}

// genInputs makes the dispatch events and results of a job's fires: some
// fires only dispatched, some only reported on (a result before its
// dispatch, or its dispatch long gone), several attempts, statuses that
// disagree, and a few fires sharing a scheduled time.
func genInputs(rng *rand.Rand, job string) []input {
	base := time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC)
	var out []input
	for i := range 5 + rng.IntN(80) {
		at := base.Add(time.Duration(rng.IntN(40)) * time.Minute)
		suffix := at.Format(time.RFC3339Nano)
		trigger := codecs.TriggerSchedule
		if rng.IntN(4) == 0 {
			suffix, trigger = fmt.Sprintf("t%d", i), codecs.TriggerManual
		}
		for range rng.IntN(3) {
			fired := at.Add(time.Duration(rng.IntN(5000)) * time.Millisecond)
			out = append(out, input{suffix: suffix, d: &codecs.Dispatch{V: 1, FireID: job + "@" + suffix, JobID: job, Trigger: trigger,
				ScheduledAt: at, FiredAt: fired, Missed: int64(rng.IntN(3))}})
		}
		for range rng.IntN(5) {
			r := codecs.Result{JobID: job, Suffix: suffix, ScheduledAt: at, Attempt: 1 + rng.IntN(3),
				Status: []string{codecs.StatusStarted, codecs.StatusSucceeded, codecs.StatusFailed, codecs.StatusSkipped}[rng.IntN(4)]}
			start := at.Add(time.Duration(rng.IntN(3)) * time.Second)
			if r.Status == codecs.StatusStarted || rng.IntN(2) == 0 {
				r.StartedAt = start
			}
			if r.Status != codecs.StatusStarted {
				r.FinishedAt = start.Add(time.Duration(rng.IntN(3)) * time.Second)
			}
			if r.Status == codecs.StatusFailed {
				r.Error = []string{"boom", "disk full", strings.Repeat("é", 300)}[rng.IntN(3)]
			}
			out = append(out, input{suffix: suffix, r: &r})
		}
	}
	return out
}

// oracle computes a job's kept fires from the whole set of its inputs, by
// definition: the keep greatest (scheduled_at, suffix), each with the
// earliest fired_at of its dispatch events and the outcome of its highest
// attempt (earliest start; status, finish and error of the greatest result
// by terminal, finished_at, status, error).
func oracle(ins []input, keep int) []codecs.FireEntry {
	type key struct {
		at     int64
		suffix string
	}
	byKey := map[key][]input{}
	var keys []key
	for _, in := range ins {
		at := in.r
		var k key
		if at != nil {
			k = key{in.r.ScheduledAt.UnixNano(), in.suffix}
		} else {
			k = key{in.d.ScheduledAt.UnixNano(), in.suffix}
		}
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], in)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].at != keys[j].at {
			return keys[i].at < keys[j].at
		}
		return keys[i].suffix < keys[j].suffix
	})
	if len(keys) > keep {
		keys = keys[len(keys)-keep:]
	}
	out := []codecs.FireEntry{}
	for _, k := range keys {
		f := codecs.FireEntry{Suffix: k.suffix, ScheduledAt: time.Unix(0, k.at).UTC()}
		var results []codecs.Result
		for _, in := range byKey[k] {
			if d := in.d; d != nil {
				if !f.Dispatched || d.FiredAt.Before(f.FiredAt) {
					f.FiredAt = d.FiredAt
				}
				f.Dispatched = true
				f.Missed = max(f.Missed, d.Missed)
				f.Trigger = d.Trigger
			} else {
				results = append(results, *in.r)
			}
		}
		if len(results) > 0 {
			top := slices.MaxFunc(results, func(a, b codecs.Result) int { return a.Attempt - b.Attempt }).Attempt
			results = slices.DeleteFunc(results, func(r codecs.Result) bool { return r.Attempt != top })
			for i := range results {
				results[i].Error = codecs.Truncate(results[i].Error, codecs.HistoryErrorBytes)
			}
			rank := func(r codecs.Result) string {
				term := "0"
				if r.Status != codecs.StatusStarted {
					term = "1"
				}
				return fmt.Sprintf("%s|%030d|%s|%s", term, r.FinishedAt.UnixNano()+1e18, r.Status, r.Error)
			}
			best := slices.MaxFunc(results, func(a, b codecs.Result) int { return strings.Compare(rank(a), rank(b)) })
			f.Attempt, f.Status, f.FinishedAt, f.Error = top, best.Status, best.FinishedAt, best.Error
			for _, r := range results {
				if !r.StartedAt.IsZero() && (f.StartedAt.IsZero() || r.StartedAt.Before(f.StartedAt)) {
					f.StartedAt = r.StartedAt
				}
			}
		}
		out = append(out, f)
	}
	return out
}

// TestMergeMatchesOracle folds random interleavings of a job's dispatch
// events and results, with duplicates and records processed again (as
// after a crash), through the table encoding after each step, and compares
// the kept fires with the oracle's.
func TestMergeMatchesOracle(t *testing.T) {
	t.Parallel()
	for seed := range uint64(400) {
		rng := rand.New(rand.NewPCG(seed, 7))
		ins := genInputs(rng, "job-1")
		keep := 1 + rng.IntN(30)
		order := slices.Clone(ins)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		// Duplicates: some records delivered again, later.
		for range rng.IntN(len(order) + 1) {
			order = append(order, order[rng.IntN(len(order))])
		}
		var b []byte
		for _, in := range order {
			h, err := codecs.DecodeHistory(b)
			require.NoError(t, err)
			if in.d != nil {
				mergeDispatch(&h, in.suffix, *in.d, keep)
			} else {
				mergeResult(&h, *in.r, keep)
			}
			require.LessOrEqual(t, len(h.Fires), keep)
			b = codecs.AppendHistory(b[:0:0], &h)
		}
		h, err := codecs.DecodeHistory(b)
		require.NoError(t, err)
		require.Equal(t, oracle(ins, keep), h.Fires, "seed %d keep %d", seed, keep)
	}
}

// TestMergeChange keeps the last commands once each, whatever is
// processed again.
func TestMergeChange(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 3))
	for range 200 {
		keep := 1 + rng.IntN(10)
		n := rng.IntN(40)
		var h codecs.History
		h.CommandOffset = -1
		for off := range int64(n) {
			c := codecs.Change{Offset: off * 3, Op: codecs.OpPut, Actor: strings.Repeat("a", 200), Detail: strings.Repeat("d", 300)}
			mergeChange(&h, c, keep)
			// A crash makes goka process some recent records again.
			for back := rng.Int64N(3); back > 0 && off-back >= 0; back-- {
				mergeChange(&h, codecs.Change{Offset: (off - back) * 3, Op: codecs.OpDelete}, keep)
			}
		}
		var want []int64
		for off := max(0, n-keep); off < n; off++ {
			want = append(want, int64(off*3))
		}
		var got []int64
		for _, c := range h.Changes {
			got = append(got, c.Offset)
			require.Equal(t, codecs.OpPut, c.Op)
			require.LessOrEqual(t, len(c.Actor), codecs.HistoryActorBytes)
			require.LessOrEqual(t, len(c.Detail), codecs.HistoryDetailBytes)
		}
		require.Equal(t, want, got)
	}
}

// TestFoldMatchesDecodeMergeEncode folds random sequences of a job's
// dispatch events, results and commands into a record both ways: in place
// (codecs.FoldFire, codecs.FoldChange: what the group does) and by
// decoding the record, merging and encoding it again (the definition,
// checked against the oracle by TestMergeMatchesOracle). The records must
// be equal byte for byte after every step, whatever keep is, including
// keep lowered below what a record already holds.
func TestFoldMatchesDecodeMergeEncode(t *testing.T) {
	t.Parallel()
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 13))
		ins := genInputs(rng, "job-1")
		order := slices.Clone(ins)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for range rng.IntN(len(order) + 1) {
			order = append(order, order[rng.IntN(len(order))])
		}
		keepFires, keepChanges := 1+rng.IntN(30), 1+rng.IntN(8)
		var folded, merged []byte
		offset := int64(0)
		for step, in := range order {
			if rng.IntN(20) == 0 { // the setting changed between two records
				keepFires, keepChanges = 1+rng.IntN(30), 1+rng.IntN(8)
			}
			h, err := codecs.DecodeHistory(merged)
			require.NoError(t, err)
			var out []byte
			var changed bool
			switch {
			case rng.IntN(6) == 0:
				offset += rng.Int64N(3) - 1 // sometimes a command processed again
				c := codecs.Change{Offset: offset, At: time.Unix(offset, 0).UTC(), Op: codecs.OpPut,
					Actor: strings.Repeat("a", rng.IntN(200)), Detail: strings.Repeat("é", rng.IntN(200))}
				mergeChange(&h, c, keepChanges)
				out, changed, err = codecs.FoldChange(folded, boundChange(c), keepChanges)
			case in.d != nil:
				d := *in.d
				mergeDispatch(&h, in.suffix, d, keepFires)
				out, changed, err = foldDispatch(folded, in.suffix, d, keepFires)
			default:
				r := *in.r
				mergeResult(&h, r, keepFires)
				out, changed, err = foldResult(folded, r, keepFires)
			}
			require.NoError(t, err)
			want := codecs.AppendHistory(nil, &h)
			require.Equal(t, !slices.Equal(want, orEmpty(merged)), changed, "seed %d step %d: changed", seed, step)
			if changed {
				folded = out
			} else {
				require.Equal(t, folded, out, "seed %d step %d: unchanged record returned as is", seed, step)
			}
			require.Equal(t, want, orEmpty(folded), "seed %d step %d", seed, step)
			merged = want
		}
	}
}

// orEmpty is b, or for no record the encoding of an empty history (what
// both stand for).
func orEmpty(b []byte) []byte {
	if len(b) == 0 {
		return codecs.AppendHistory(nil, &codecs.History{CommandOffset: -1})
	}
	return b
}

// TestFoldRefusesUnreadableRecords: every strict prefix of a record, and
// a record with a byte changed into an invalid code, is refused as
// DecodeHistory refuses it, and the fold does not panic.
func TestFoldRefusesUnreadableRecords(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 5))
	for seed := range 100 {
		var h codecs.History
		h.CommandOffset = -1
		for _, in := range genInputs(rng, "job-1") {
			if in.d != nil {
				mergeDispatch(&h, in.suffix, *in.d, 20)
			} else {
				mergeResult(&h, *in.r, 20)
			}
		}
		mergeChange(&h, codecs.Change{Offset: 1, Op: codecs.OpPut, Actor: "a", Detail: "d"}, 5)
		b := codecs.AppendHistory(nil, &h)
		apply := func(*codecs.FireEntry) {}
		for range 20 {
			bad := slices.Clone(b[:rng.IntN(len(b))])
			if rng.IntN(2) == 0 {
				bad = slices.Clone(b)
				bad[rng.IntN(len(bad))] = byte(rng.IntN(256))
			}
			_, decodeErr := codecs.DecodeHistory(bad)
			_, _, fireErr := codecs.FoldFire(bad, time.Unix(0, 0), "x", 20, apply)
			_, _, changeErr := codecs.FoldChange(bad, codecs.Change{Offset: 1 << 40}, 5)
			if len(bad) == 0 {
				decodeErr = nil
			}
			require.Equal(t, decodeErr != nil, fireErr != nil, "seed %d: %x", seed, bad)
			require.Equal(t, decodeErr != nil, changeErr != nil, "seed %d: %x", seed, bad)
		}
	}
}

// TestTriggeredFireOneEntryInAnyOrder: a manual fire dispatched twice (a
// retry, at two scheduled times) and reported with a third scheduled_at
// (seconds where the dispatch had milliseconds) is one entry, in every
// order of the three: at the earliest dispatch time, dispatched, with the
// outcome. Before, the result made an entry of its own (round 13b).
func TestTriggeredFireOneEntryInAnyOrder(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 6, 1, 0, 0, 0, 123_000_000, time.UTC)
	d1 := codecs.Dispatch{V: 1, FireID: "j@m1", JobID: "j", Trigger: codecs.TriggerManual, ScheduledAt: at, FiredAt: at.Add(time.Millisecond)}
	d2 := d1
	d2.ScheduledAt, d2.FiredAt = at.Add(-time.Millisecond), at.Add(2*time.Millisecond)
	r := codecs.Result{JobID: "j", Suffix: "m1", ScheduledAt: at.Truncate(time.Second), Attempt: 1, Status: codecs.StatusSucceeded,
		StartedAt: at.Add(time.Second), FinishedAt: at.Add(2 * time.Second)}
	other := codecs.Dispatch{V: 1, FireID: "j@m0", JobID: "j", Trigger: codecs.TriggerManual, ScheduledAt: at.Add(-time.Hour), FiredAt: at.Add(-time.Hour)}
	steps := []func([]byte) ([]byte, bool, error){
		func(b []byte) ([]byte, bool, error) { return foldDispatch(b, "m1", d1, 50) },
		func(b []byte) ([]byte, bool, error) { return foldDispatch(b, "m1", d2, 50) },
		func(b []byte) ([]byte, bool, error) { return foldResult(b, r, 50) },
	}
	var first []byte
	for _, order := range [][]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}} {
		rec, _, err := foldDispatch(nil, "m0", other, 50)
		require.NoError(t, err)
		for _, i := range order {
			out, changed, err := steps[i](rec)
			require.NoError(t, err)
			if changed {
				rec = out
			}
		}
		h, err := codecs.DecodeHistory(rec)
		require.NoError(t, err)
		require.Len(t, h.Fires, 2, "order %v: %+v", order, h.Fires)
		f := h.Fires[1]
		require.Equal(t, "m1", f.Suffix, "order %v", order)
		require.True(t, f.ScheduledAt.Equal(d2.ScheduledAt), "order %v: at %s, want the earliest dispatch's", order, f.ScheduledAt)
		require.True(t, f.Dispatched, "order %v", order)
		require.True(t, f.FiredAt.Equal(d1.FiredAt), "order %v: fired_at %s, want the earliest", order, f.FiredAt)
		require.Equal(t, codecs.StatusSucceeded, f.Status, "order %v", order)
		if first == nil {
			first = rec
		}
		require.Equal(t, first, rec, "order %v: the record differs from the first order's", order)
	}
}
