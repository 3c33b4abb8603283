package scheduler

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
	"github.com/chronos-scheduler/chronos/store"
)

// TestDecideDue is the table of what one due entry does in an advance:
// every10 fires at :00, :10, :20, ... of cmdT0's minute.
func TestDecideDue(t *testing.T) {
	t.Parallel()
	enc := func(r codecs.JobRecord) []byte { return codecs.EncodeJobRecord(&r) }
	job := every10()
	skip := every10()
	skip.MisfirePolicy, skip.MisfireGrace = codecs.MisfireSkip, 5*time.Second
	fast := codecs.Job{Spec: schedule.Spec{Every: time.Second}, MisfirePolicy: codecs.MisfireFireAll, MisfireGrace: time.Hour}
	bad := codecs.Job{Spec: schedule.Spec{Cron: "not a cron"}}
	// Several schedules (every10, every 20s, once at :15) without the
	// times in [:20, :30).
	set := codecs.Job{Spec: schedule.Spec{Every: 10 * time.Second, Also: []schedule.Spec{{Every: 20 * time.Second}, {At: cmdSec(15)}},
		Exclude: schedule.Exclusions{Ranges: []schedule.Range{{From: cmdSec(20), To: cmdSec(30)}}}}, MisfirePolicy: codecs.MisfireFireAll, MisfireGrace: time.Hour}
	setSkip := set
	setSkip.MisfirePolicy, setSkip.MisfireGrace = codecs.MisfireSkip, 5*time.Second
	const big = 1 << 30
	tests := []struct {
		name      string
		due       time.Time
		value     []byte
		t         time.Time
		bytesLeft int
		fires     []time.Time
		missed    int64
		moveTo    time.Time // zero: the entry is removed
		loop      *codecs.ShardTrigger
		cut       bool
	}{
		{name: "unreadable record: stale entry removed", due: cmdSec(10), value: []byte("junk"), t: cmdSec(10), bytesLeft: big},
		{name: "deleted job past its retention is purged", due: cmdSec(10), t: cmdSec(10), bytesLeft: big,
			value: enc(codecs.JobRecord{Version: 5, Status: codecs.StatusDeleted, Job: codecs.Job{Spec: job.Spec}}),
			loop:  &codecs.ShardTrigger{Kind: codecs.KindPurge, T: cmdSec(10), Version: 5}},
		{name: "completed job: stale entry removed", due: cmdSec(10), t: cmdSec(10), bytesLeft: big,
			value: enc(codecs.JobRecord{Version: 5, Status: codecs.StatusCompleted, Job: job})},
		{name: "schedule that no longer parses: removed", due: cmdSec(10), t: cmdSec(10), bytesLeft: big,
			value: enc(codecs.JobRecord{Version: 5, Status: codecs.StatusActive, Job: bad})},
		{name: "on time: one fire, due again at the next", due: cmdSec(10), t: cmdSec(10), bytesLeft: big,
			value: enc(codecs.JobRecord{Version: 5, Status: codecs.StatusActive, Job: job}),
			fires: []time.Time{cmdSec(10)}, moveTo: cmdSec(20)},
		{name: "one-shot: fires and completes", due: cmdSec(4), t: cmdSec(10), bytesLeft: big,
			value: enc(codecs.JobRecord{Version: 5, Status: codecs.StatusActive, Job: oneShot(cmdSec(4))}),
			fires: []time.Time{cmdSec(4)}, loop: &codecs.ShardTrigger{Kind: codecs.KindComplete, T: cmdSec(10), Version: 5}},
		{name: "a job that owed fires behind the shard settles", due: cmdSec(10), t: cmdSec(30), bytesLeft: big,
			value: enc(codecs.JobRecord{Version: 5, Status: codecs.StatusActive, Job: job, Through: cmdSec(5)}),
			fires: []time.Time{cmdSec(10), cmdSec(20), cmdSec(30)}, moveTo: cmdSec(40),
			loop: &codecs.ShardTrigger{Kind: codecs.KindSettle, T: cmdSec(30), Version: 5}},
		{name: "late past grace under skip: counted, the last one fires", due: cmdSec(10), t: cmdSec(52), bytesLeft: big,
			value: enc(codecs.JobRecord{Version: 5, Status: codecs.StatusActive, Job: skip}),
			fires: []time.Time{cmdSec(50)}, missed: 4, moveTo: cmdSec(60)},
		{name: "several schedules: their union once per instant, without the excluded", due: cmdSec(10), t: cmdSec(52), bytesLeft: big,
			value: enc(codecs.JobRecord{Version: 5, Status: codecs.StatusActive, Job: set}),
			fires: []time.Time{cmdSec(10), cmdSec(15), cmdSec(30), cmdSec(40), cmdSec(50)}, moveTo: cmdSec(60)},
		{name: "several schedules late under skip: excluded times are not counted as missed", due: cmdSec(10), t: cmdSec(52), bytesLeft: big,
			value: enc(codecs.JobRecord{Version: 5, Status: codecs.StatusActive, Job: setSkip}),
			fires: []time.Time{cmdSec(50)}, missed: 4, moveTo: cmdSec(60)},
		{name: "cut by the chunk's bytes: stays due at its first unsent fire", due: cmdSec(1), t: cmdSec(5), bytesLeft: 1,
			value: enc(codecs.JobRecord{Version: 5, Status: codecs.StatusActive, Job: fast}),
			fires: []time.Time{cmdSec(1)}, moveTo: cmdSec(2), cut: true,
			loop: &codecs.ShardTrigger{Kind: codecs.KindSettle, T: cmdSec(2).Add(-time.Nanosecond), Version: 5}},
		{name: "paused: only what it owed before its pause, then removed", due: cmdSec(10), t: cmdSec(60), bytesLeft: big,
			value: enc(codecs.JobRecord{Version: 5, Status: codecs.StatusPaused, Job: job, NotBefore: cmdSec(25), Through: cmdSec(5)}),
			fires: []time.Time{cmdSec(10), cmdSec(20)},
			loop:  &codecs.ShardTrigger{Kind: codecs.KindSettle, T: cmdSec(25), Version: 5}},
		{name: "paused, advance before its pause: due again at the next it owes", due: cmdSec(10), t: cmdSec(12), bytesLeft: big,
			value: enc(codecs.JobRecord{Version: 5, Status: codecs.StatusPaused, Job: job, NotBefore: cmdSec(25), Through: cmdSec(5)}),
			fires: []time.Time{cmdSec(10)}, moveTo: cmdSec(20),
			loop: &codecs.ShardTrigger{Kind: codecs.KindSettle, T: cmdSec(12), Version: 5}},
		{name: "paused and cut", due: cmdSec(1), t: cmdSec(60), bytesLeft: 1,
			value: enc(codecs.JobRecord{Version: 5, Status: codecs.StatusPaused, Job: fast, NotBefore: cmdSec(4), Through: cmdSec(0)}),
			fires: []time.Time{cmdSec(1)}, moveTo: cmdSec(2), cut: true,
			// T is how far its fires went (just before 2 s), not the pause.
			loop: &codecs.ShardTrigger{Kind: codecs.KindSettle, T: cmdSec(2).Add(-time.Nanosecond), Version: 5}},
	}
	cache := schedule.NewCache(16)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dec := decideDue(store.Due{At: tc.due, Key: "j"}, tc.value, tc.t, tc.bytesLeft, 100, cache, nil, nil)
			var fires []time.Time
			for _, f := range dec.Plan.Fires {
				fires = append(fires, f.At)
			}
			require.Equal(t, tc.fires, fires)
			require.Equal(t, tc.missed, dec.Plan.Missed)
			require.Equal(t, "j", dec.Move.Key)
			require.True(t, tc.moveTo.Equal(dec.Move.To), "moves to %s, want %s", dec.Move.To, tc.moveTo)
			require.Equal(t, tc.loop, dec.Loop)
			require.Equal(t, tc.cut, dec.Cut)
		})
	}
}

// TestDecideDueChunkingChangesNothing: for generated jobs and advances, a
// due job decided again and again with a small event budget (as chunks cut
// it, continuing from where each left it) dispatches exactly the fires and
// missed counts of one decision with an unbounded budget, and every cut
// stays due at or before T after what it sent.
func TestDecideDueChunkingChangesNothing(t *testing.T) {
	t.Parallel()
	cache := schedule.NewCache(64)
	policies := []string{codecs.MisfireFireOnce, codecs.MisfireSkip, codecs.MisfireFireAll}
	specs := []schedule.Spec{{Every: time.Second}, {Every: 7 * time.Second}, {Cron: "*/3 * * * * *"}, {At: cmdSec(40)}}
	for seed := uint64(1); seed <= 400; seed++ {
		rng := rand.New(rand.NewPCG(seed, 61))
		job := codecs.Job{Spec: specs[rng.IntN(len(specs))], MisfirePolicy: policies[rng.IntN(len(policies))],
			MisfireGrace: time.Duration(rng.IntN(120)) * time.Second, Payload: make([]byte, 2+rng.IntN(300))}
		for i := range job.Payload {
			job.Payload[i] = 'x'
		}
		job.Payload[0], job.Payload[len(job.Payload)-1] = '"', '"'
		status := codecs.StatusActive
		rec := codecs.JobRecord{Version: 3, Status: status, Job: job}
		if rng.IntN(3) == 0 {
			rec.Status, rec.NotBefore, rec.Through = codecs.StatusPaused, cmdSec(rng.IntN(200)), cmdSec(-1)
		}
		value := codecs.EncodeJobRecord(&rec)
		sched, err := cache.Get(job.Spec)
		require.NoError(t, err)
		due := sched.Next(cmdSec(-1))
		at := cmdSec(rng.IntN(300))
		where := fmt.Sprintf("seed %d (%+v, %s, grace %s, status %s, T %s)", seed, job.Spec, job.MisfirePolicy, job.MisfireGrace, rec.Status, at)

		whole := decideDue(store.Due{At: due, Key: "j"}, value, at, 1<<40, 5, cache, nil, nil)
		require.False(t, whole.Cut, where)
		var got []Fire
		var missed int64
		d := due
		budget := 1 + rng.IntN(3*(eventOverhead+len(job.Payload)+2))
		for step := 0; ; step++ {
			require.Less(t, step, 1000, where)
			dec := decideDue(store.Due{At: d, Key: "j"}, value, at, budget, 5, cache, nil, nil)
			for _, f := range dec.Plan.Fires {
				require.False(t, f.At.After(at), "%s: fire %s after T", where, f.At)
				if len(got) > 0 {
					require.True(t, f.At.After(got[len(got)-1].At), "%s: fire %s repeats or goes back", where, f.At)
				}
			}
			got = append(got, dec.Plan.Fires...)
			missed += dec.Plan.Missed
			require.Equal(t, d, dec.Move.From, "%s: the move starts from the entry decided", where)
			if !dec.Cut {
				require.Equal(t, whole.Move.Key, dec.Move.Key, where)
				require.Equal(t, whole.Move.To, dec.Move.To, where)
				require.Equal(t, whole.Loop == nil, dec.Loop == nil, where)
				break
			}
			require.False(t, dec.Move.To.After(at), where)
			require.True(t, dec.Move.To.After(dec.Plan.Fires[len(dec.Plan.Fires)-1].At), where)
			d = dec.Move.To
		}
		require.Equal(t, whole.Plan.Fires, got, where)
		require.Equal(t, whole.Plan.Missed, missed, where)
	}
}

func TestBucketEvent(t *testing.T) {
	t.Parallel()
	job := every10()
	enc := func(s codecs.Status, bucket string) []byte {
		j := job
		j.Bucket = bucket
		return codecs.EncodeJobRecord(&codecs.JobRecord{Version: 2, Status: s, Job: j})
	}
	tr := codecs.ShardTrigger{Kind: codecs.KindBucket, Bucket: "b", TriggerID: "run-7", T: cmdSec(3)}
	withPayload := tr
	withPayload.Payload = []byte(`{"over":true}`)
	tests := []struct {
		name    string
		value   []byte
		tr      codecs.ShardTrigger
		ok      bool
		payload string
	}{
		{"active in the bucket fires with its payload", enc(codecs.StatusActive, "b"), tr, true, `{"a":1}`},
		{"the trigger's payload wins", enc(codecs.StatusActive, "b"), withPayload, true, `{"over":true}`},
		{"paused does not fire", enc(codecs.StatusPaused, "b"), tr, false, ""},
		{"completed does not fire", enc(codecs.StatusCompleted, "b"), tr, false, ""},
		{"deleted does not fire", enc(codecs.StatusDeleted, "b"), tr, false, ""},
		{"moved to another bucket does not fire", enc(codecs.StatusActive, "c"), tr, false, ""},
		{"unreadable does not fire", []byte("junk"), tr, false, ""},
	}
	for _, tc := range tests {
		msg, ok := bucketEvent("j1", tc.value, tc.tr, cmdSec(4))
		require.Equal(t, tc.ok, ok, tc.name)
		if !ok {
			require.Equal(t, Msg{}, msg, tc.name)
			continue
		}
		require.Equal(t, "j1", msg.Key, tc.name)
		ev, err := codecs.DecodeDispatch(msg.Value)
		require.NoError(t, err, tc.name)
		require.Equal(t, codecs.TriggeredFireID("j1", "run-7"), ev.FireID, tc.name)
		require.Equal(t, codecs.TriggerBucket, ev.Trigger, tc.name)
		require.Equal(t, "run-7", ev.TriggerID, tc.name)
		require.True(t, cmdSec(3).Equal(ev.ScheduledAt), tc.name)
		require.True(t, cmdSec(4).Equal(ev.FiredAt), tc.name)
		require.Equal(t, "b", ev.Bucket, tc.name)
		require.JSONEq(t, tc.payload, string(ev.Payload), tc.name)
	}
}

// TestAdvancePass is the table of how a pass of an advance starts, yields
// after its budget and ends, on the shard record.
func TestAdvancePass(t *testing.T) {
	t.Parallel()
	adv := func(n int) codecs.ShardTrigger { return codecs.ShardTrigger{Kind: codecs.KindAdvance, T: cmdSec(n)} }
	cont := adv(20)
	cont.AfterAt, cont.AfterKey = cmdSec(12), "j3"
	starts := []struct {
		name      string
		tr        codecs.ShardTrigger
		shard     codecs.ShardRecord
		cursor    store.Due
		fromStart bool
		skip      bool
	}{
		{"already fired up to T", adv(10), codecs.ShardRecord{Watermark: cmdSec(10)}, store.Due{}, false, true},
		{"an old T", adv(5), codecs.ShardRecord{Watermark: cmdSec(10)}, store.Due{}, false, true},
		{"a new T", adv(20), codecs.ShardRecord{Watermark: cmdSec(10)}, store.Due{}, false, false},
		{"an old T while a pass is under way: a completed pass handled it", adv(5), codecs.ShardRecord{Watermark: cmdSec(10), Advancing: cmdSec(20)}, store.Due{}, false, true},
		{"an old continuation while a pass is under way", cont, codecs.ShardRecord{Watermark: cmdSec(25), Advancing: cmdSec(30)}, store.Due{}, false, true},
		{"a fresh trigger during another pass restarts from the start", adv(30), codecs.ShardRecord{Watermark: cmdSec(10), Advancing: cmdSec(20)}, store.Due{}, true, false},
		{"a continuation keeps its cursor", cont, codecs.ShardRecord{Watermark: cmdSec(10), Advancing: cmdSec(20)}, store.Due{At: cmdSec(12), Key: "j3"}, false, false},
	}
	for _, tc := range starts {
		cursor, fromStart, skip := passStart(tc.tr, tc.shard)
		require.Equal(t, tc.cursor, cursor, tc.name)
		require.Equal(t, tc.fromStart, fromStart, tc.name)
		require.Equal(t, tc.skip, skip, tc.name)
	}

	last := store.Due{At: cmdSec(12), Key: "j3"}
	mark, next := passYield(codecs.ShardRecord{Watermark: cmdSec(10)}, cmdSec(20), last, false, nil)
	require.Equal(t, &codecs.ShardRecord{Watermark: cmdSec(10), Advancing: cmdSec(20), PassAt: cmdSec(12), PassKey: "j3"}, mark, "the table learns an advance is under way, and how far it got")
	require.Equal(t, cont, next)
	mark, next = passYield(codecs.ShardRecord{Watermark: cmdSec(10), Advancing: cmdSec(20), PassAt: cmdSec(11), PassKey: "z"}, cmdSec(20), last, true, nil)
	require.Equal(t, &codecs.ShardRecord{Watermark: cmdSec(10), Advancing: cmdSec(20), PassAt: cmdSec(12), PassKey: "j3"}, mark, "the cursor moves on")
	require.Equal(t, adv(20), next, "from the start: no cursor")
	mark, _ = passYield(codecs.ShardRecord{Watermark: cmdSec(10), Advancing: cmdSec(20), PassAt: cmdSec(12), PassKey: "j4"}, cmdSec(20), last, true, nil)
	require.Equal(t, &codecs.ShardRecord{Watermark: cmdSec(10), Advancing: cmdSec(20), PassAt: cmdSec(12), PassKey: "j4"}, mark, "another pass to the same T got further: its cursor stays")
	mark, _ = passYield(codecs.ShardRecord{Watermark: cmdSec(10), Advancing: cmdSec(15), PassAt: cmdSec(14), PassKey: "a"}, cmdSec(20), last, true, nil)
	require.Equal(t, &codecs.ShardRecord{Watermark: cmdSec(10), Advancing: cmdSec(20), PassAt: cmdSec(12), PassKey: "j3", PassCutsLost: true}, mark,
		"a later pass: its own cursor, not the earlier pass's (still under way: only the cursor's time is known)")
	mark, _ = passYield(codecs.ShardRecord{Watermark: cmdSec(10), Advancing: cmdSec(30)}, cmdSec(20), last, false, nil)
	require.Nil(t, mark, "a later pass is recorded: never moved back")

	require.Equal(t, codecs.ShardRecord{Watermark: cmdSec(20)}, passDone(codecs.ShardRecord{Watermark: cmdSec(10), Advancing: cmdSec(20), PassAt: cmdSec(12), PassKey: "j3"}, cmdSec(20)))
	require.Equal(t, codecs.ShardRecord{Watermark: cmdSec(20), Advancing: cmdSec(30), PassAt: cmdSec(25), PassKey: "k"},
		passDone(codecs.ShardRecord{Watermark: cmdSec(10), Advancing: cmdSec(30), PassAt: cmdSec(25), PassKey: "k"}, cmdSec(20)), "the later pass keeps its cursor")
	require.Equal(t, codecs.ShardRecord{Watermark: cmdSec(25)}, passDone(codecs.ShardRecord{Watermark: cmdSec(25)}, cmdSec(20)), "never back")
}

// TestPassedThrough: an entry a store derived behind the cursor of the
// advance under way was handled by it through its T, or, for a job the
// pass cut short, up to where the cut left it, or, when the cuts were too
// many to keep, through the cursor's time; unless its record was written
// during that advance owing fires (OwedAt at the advance's T), or no
// advance is under way, or none has yielded.
func TestPassedThrough(t *testing.T) {
	t.Parallel()
	shard := codecs.ShardRecord{Watermark: cmdSec(10), Advancing: cmdSec(20), PassAt: cmdSec(15), PassKey: "m",
		PassCuts: []codecs.PassCut{{Key: "c", To: cmdSec(17)}, {Key: "k", To: cmdSec(15)}}}
	lost := shard
	lost.PassCuts, lost.PassCutsLost = nil, true
	rec := &codecs.JobRecord{Status: codecs.StatusActive}
	owed := &codecs.JobRecord{Status: codecs.StatusActive, OwedAt: cmdSec(20)}
	owedBefore := &codecs.JobRecord{Status: codecs.StatusActive, OwedAt: cmdSec(10)}
	ns := time.Nanosecond
	cases := []struct {
		name  string
		shard codecs.ShardRecord
		rec   *codecs.JobRecord
		key   string
		due   time.Time
		want  time.Time // zero: not handled by the pass
	}{
		{"before the cursor", shard, rec, "z", cmdSec(14), cmdSec(20)},
		{"at the cursor's time, key before it", shard, rec, "a", cmdSec(15), cmdSec(20)},
		{"the cursor itself", shard, rec, "m", cmdSec(15), cmdSec(20)},
		{"at the cursor's time, key after it", shard, rec, "n", cmdSec(15), time.Time{}},
		{"after the cursor", shard, rec, "a", cmdSec(16), time.Time{}},
		{"cut short", shard, rec, "c", cmdSec(12), cmdSec(17).Add(-ns)},
		{"cut short, left at the cursor's time", shard, rec, "k", cmdSec(11), cmdSec(15).Add(-ns)},
		{"cuts lost: the cursor's time", lost, rec, "a", cmdSec(12), cmdSec(15).Add(-ns)},
		{"cuts lost, the entry at the cursor's time", lost, rec, "a", cmdSec(15), cmdSec(15)},
		{"owed since before the advance", shard, owedBefore, "a", cmdSec(12), cmdSec(20)},
		{"written during the advance, owing", shard, owed, "a", cmdSec(12), time.Time{}},
		{"no entry", shard, rec, "a", time.Time{}, time.Time{}},
		{"no cursor", codecs.ShardRecord{Watermark: cmdSec(10), Advancing: cmdSec(20)}, rec, "a", cmdSec(12), time.Time{}},
		{"no advance under way", codecs.ShardRecord{Watermark: cmdSec(20), PassAt: cmdSec(15), PassKey: "m"}, rec, "a", cmdSec(12), time.Time{}},
	}
	for _, c := range cases {
		got, ok := passedThrough(c.shard, c.rec, c.key, c.due)
		require.Equal(t, !c.want.IsZero(), ok, c.name)
		require.Equal(t, c.want, got, c.name)
	}
}

// TestPassYieldCuts: the shard record keeps the jobs the pass cut short
// and has not handled through its T since, whichever callback or pass to
// the same T cut them; a new T starts afresh; past MaxPassCuts only the
// cursor's time is kept.
func TestPassYieldCuts(t *testing.T) {
	t.Parallel()
	// yield is one callback of a pass to at, as advance runs it: the cuts
	// so far (passCuts), its chunks' moves (noteCuts; to a zero time or
	// past at: handled through at), then passYield.
	yield := func(shard codecs.ShardRecord, at time.Time, last store.Due, fromStart bool, moves map[string]time.Time) *codecs.ShardRecord {
		cuts := passCuts(shard, at)
		for _, k := range slices.Sorted(maps.Keys(moves)) {
			noteCuts(cuts, []store.Move{{Key: k, To: moves[k]}}, at)
		}
		mark, _ := passYield(shard, at, last, fromStart, cuts)
		return mark
	}
	last := store.Due{At: cmdSec(12), Key: "j3"}
	mark := yield(codecs.ShardRecord{Watermark: cmdSec(10)}, cmdSec(20), last,
		false, map[string]time.Time{"a": cmdSec(14), "b": {}, "c": cmdSec(13)})
	require.Equal(t, []codecs.PassCut{{Key: "a", To: cmdSec(14)}, {Key: "c", To: cmdSec(13)}}, mark.PassCuts)
	mark = yield(*mark, cmdSec(20), store.Due{At: cmdSec(14), Key: "a"}, false, map[string]time.Time{"a": cmdSec(21), "c": cmdSec(16)})
	require.Equal(t, []codecs.PassCut{{Key: "c", To: cmdSec(16)}}, mark.PassCuts, "a handled through T since, c cut again")
	mark = yield(*mark, cmdSec(30), last, true, map[string]time.Time{"d": cmdSec(25)})
	require.True(t, mark.PassCutsLost, "a later T begun while the pass to 20 is under way: the earlier pass moves entries the table does not hear of")
	fresh0 := yield(codecs.ShardRecord{Watermark: cmdSec(20)}, cmdSec(30), last, false, map[string]time.Time{"d": cmdSec(25)})
	require.False(t, fresh0.PassCutsLost)
	require.Equal(t, []codecs.PassCut{{Key: "d", To: cmdSec(25)}}, fresh0.PassCuts, "a pass alone: its own cuts")
	many := map[string]time.Time{}
	for i := range codecs.MaxPassCuts + 1 {
		many[fmt.Sprintf("k%03d", i)] = cmdSec(25)
	}
	lost := yield(*mark, cmdSec(30), last, true, many)
	require.True(t, lost.PassCutsLost)
	require.Empty(t, lost.PassCuts)
	again := yield(*lost, cmdSec(30), last, true, map[string]time.Time{"d": {}})
	require.True(t, again.PassCutsLost, "lost for the rest of the pass")
	require.Equal(t, codecs.ShardRecord{Watermark: cmdSec(40)}, passDone(*lost, cmdSec(40)))
	fresh := yield(passDone(*lost, cmdSec(40)), cmdSec(50), last, false, nil)
	require.False(t, fresh.PassCutsLost, "the next pass alone starts afresh")

	cuts := map[string]time.Time{}
	noteCuts(cuts, []store.Move{{Key: "x", To: cmdSec(21)}, {Key: "y"}}, cmdSec(20))
	require.Empty(t, cuts, "no job cut: nothing kept")
}

// fakeCalendars holds each calendar's dates.
type fakeCalendars map[string][]schedule.Date

func (f fakeCalendars) HasDate(name string, d schedule.Date) bool {
	return slices.Contains(f[name], d)
}

// TestDecideDueCalendars: a time a named calendar holds is neither fired
// nor counted missed, and the entry moves to the schedule's next time
// without the calendar (so a later change of the calendar applies to it);
// an unknown calendar excludes nothing.
func TestDecideDueCalendars(t *testing.T) {
	t.Parallel()
	day := func(d int) time.Time { return time.Date(2026, 3, d, 9, 0, 0, 0, time.UTC) }
	job := codecs.Job{Spec: schedule.Spec{Cron: "0 9 * * *", Exclude: schedule.Exclusions{Calendars: []string{"hol"}}},
		MisfirePolicy: codecs.MisfireSkip, MisfireGrace: time.Hour}
	value := codecs.EncodeJobRecord(&codecs.JobRecord{Version: 1, Status: codecs.StatusActive, Job: job})
	cals := fakeCalendars{"hol": {{Year: 2026, Month: 3, Day: 10}, {Year: 2026, Month: 3, Day: 11}}}
	cache := schedule.NewCache(4)
	tests := []struct {
		name   string
		due, t time.Time
		cals   schedule.CalendarSource
		fires  []time.Time
		missed int64
		moveTo time.Time
	}{
		{"on a holiday: no fire, due at the next day", day(10), day(10), cals, nil, 0, day(11)},
		{"after a holiday: fires", day(12), day(12), cals, []time.Time{day(12)}, 0, day(13)},
		{"late across holidays under skip: only the other days (9th, 12th) count as missed", day(9), day(13).Add(30 * time.Minute), cals,
			[]time.Time{day(13)}, 2, day(14)},
		{"unknown calendar: fires", day(10), day(10), fakeCalendars{}, []time.Time{day(10)}, 0, day(11)},
		{"no calendar source: fires", day(10), day(10), nil, []time.Time{day(10)}, 0, day(11)},
	}
	for _, tc := range tests {
		dec := decideDue(store.Due{At: tc.due, Key: "j"}, value, tc.t, 1<<30, 100, cache, tc.cals, nil)
		var got []time.Time
		for _, f := range dec.Plan.Fires {
			got = append(got, f.At)
		}
		require.Equal(t, tc.fires, got, tc.name)
		require.Equal(t, tc.missed, dec.Plan.Missed, tc.name)
		require.True(t, tc.moveTo.Equal(dec.Move.To), "%s: moved to %v", tc.name, dec.Move.To)
	}
}
