package scheduler

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
)

// The oracle computes, from the applied commands and the advances alone,
// what the scheduler must dispatch (must), what it may dispatch (may: the
// windows the contract leaves open, like an update applied between two
// continuations of an advance), and checks every dispatch as it is produced.
//
// Contract (docs/topics.md, issue 17): every incarnation of a job id (a put
// when no record exists) has F, the time its schedule is handled through.
// Create at record time ts: F = ts. An advance to T handles every owed time
// t in (F, T] of every active job by its misfire policy (within the grace
// when T - t <= grace) and sets F = T. Update at ts: F = max(F, ts), the
// job is active. Pause: advances skip the job; resume at ts: F = max(F, ts).
// Delete ends the incarnation. A manual fire dispatches once; a bucket
// trigger once per active job of the bucket.

// simDef is one definition of a job (one put).
type simDef struct {
	id      string
	inc     int // incarnation of the job id
	defn    int // definition number within the incarnation
	spec    schedule.Spec
	sched   schedule.Schedule
	grace   time.Duration
	policy  string
	bucket  string
	payload string
}

func (d *simDef) String() string {
	var s string
	switch {
	case d.spec.Every != 0:
		s = "every " + d.spec.Every.String()
	case d.spec.Cron != "":
		s = "cron " + fmt.Sprintf("%q", d.spec.Cron)
	default:
		s = "at " + simFmt(d.spec.At)
	}
	return fmt.Sprintf("%s grace=%s policy=%s bucket=%q payload=%s", s, d.grace, d.policy, d.bucket, d.payload)
}

// simOJob is the oracle's state of one job id.
type simOJob struct {
	id     string
	p      int32
	exists bool
	inc    int
	def    *simDef
	paused bool
	F      time.Time
	puts   int // puts applied to this incarnation
	// fuzzy: times up to it were owed while an advance was in progress;
	// the next advance owes them (must if within the grace) but their
	// misfire counts are not checked.
	fuzzy time.Time
	// lateUntil: created or resumed behind the shard's watermark; the
	// times up to it are owed late.
	lateUntil  time.Time
	lateUpdate bool      // an update applied with a record time before F
	lastPut    time.Time // record time of the last put or resume applied
	// finished: paused when its definition had no time left, so the
	// scheduler's record may be completed (a pause does not apply to a
	// completed job, whose handled time then follows the watermark).
	finished bool
	pausedAt time.Time // record time of the pause in effect
	// pauseOpen: the pause in effect was applied while a pass a callback
	// left open (simOracle.open) was under way: the job's times up to it
	// may have gone out with the paused definition.
	pauseOpen time.Time
	prevF     time.Time // F before the last advance that moved it
	// fBefore: F before each advance (by chain) that moved it, kept while
	// that advance is in progress or waiting for the pass under way: a
	// command consumed before such an advance's pass reaches the job
	// finds it where that advance found it, not at prevF (simulation seed
	// 4500006 x 400: a pause consumed while six advances waited behind a
	// long pass sent the times from before the first of them).
	fBefore     map[string]time.Time
	resumedFrom time.Time // a resume of a job paused while owing fires: where its pause found it
	owedAtPause bool      // the pause applied while the job owed fires up to its record time
	prePause    time.Time // F when the pause in effect was applied (where it found the job)
	// pauseLow: the pause was applied during an advance that may not have
	// reached the job: it may be handled only through this (after ts), so
	// a put or resume may owe the times after it.
	pauseLow time.Time
	// waitLow: F before the first advance still in progress on the
	// partition when the last one was delivered (the last one's own if none
	// was). Advances delivered meanwhile wait for the pass under way
	// (Scheduler.advance), so the job may be handled no further than this
	// when a command finds it.
	waitLow time.Time
	// deleted: how far the last deleted incarnation had been handled; a
	// re-put starts after it (the table keeps a tombstone).
	deleted time.Time
	// deletedHigh: the deleted incarnation may have been handled up to
	// this (paused with nothing left: the scheduler may have completed it
	// before the pause, and a completed job is handled through the shard's
	// time), so a re-put may or may not owe the times up to it.
	deletedHigh time.Time
	// startLow: the scheduler may have started this incarnation as early
	// as this, though F is where the deleted one's high mark put it (a
	// re-put after a delete of uncertain progress). Its own pause and
	// delete then carry the same uncertainty to the next incarnation
	// (seed 15 x 800: a re-put, pause, delete and re-put, each consumed
	// hours late). Moved up by advances, cleared once one reaches F.
	startLow time.Time
	// owedFrom: a late put or resume owed the times after this, and its
	// catch-up (the command path's, in chunks) may not have reached F: a
	// pause stops it where it got (firstUnsent).
	owedFrom time.Time

	carry int64 // skipped times counted by advances that dispatched none
	// recount: the partition changed hands (or restarted) during an
	// advance; its index moves were local, so the next owner may re-plan
	// (and re-count as missed) times already handled.
	recount bool
	trace   []simTraceLine
}

// Known open findings of this simulation (not issue 17's six): reported in
// the log and in docs/reliability.md, failing the test only with
// -sim.strict. Each is detected precisely where it happens; later
// violations of the same job incarnation are attributed to it.
const (
	simKnownSettle      = "new: settle claims the future"
	simKnownReuse       = "new: re-put reuses a fire_id"
	simKnownStaleSettle = "new: stale settle moves a job back"
)

var simKnownOpen = map[string]bool{simKnownSettle: true, simKnownReuse: true, simKnownStaleSettle: true}

// taint records a known open finding on job id.
func (o *simOracle) taint(id, bug, format string, args ...any) {
	j := o.jobs[id]
	if j == nil || o.tainted[simIncKey(id, j.inc)] != "" {
		return
	}
	o.violateBug(id, "known open", bug, format, args...)
	o.tainted[simIncKey(id, j.inc)] = bug
}

func simIncKey(id string, inc int) string { return id + "#" + fmt.Sprint(inc) }

// moved: partition p changed owner or restarted.
func (o *simOracle) moved(p int32) {
	for _, id := range o.sortedJobs(p) {
		o.jobs[id].recount = true
		// docs/reliability.md: after a rebalance or restart during an
		// advance the next owner may re-count as missed times already
		// handled (the advance's index moves were local). That holds for
		// the fires an advance already planned here but has not dispatched
		// yet, too: its redelivery or its next chunk plans them again from
		// the rebuilt index (seed 5181: the restart came in the first
		// delivery of an advance that overtook one in progress).
		for e := range o.pending[id] {
			if strings.HasPrefix(e.chain, "a") && e.missed >= 0 {
				e.missed = -1
				e.why += "; its partition restarted or moved before it went out"
			}
		}
	}
}

// simTraceLine is one line of a job's history; fire is set on dispatches.
type simTraceLine struct {
	step int
	text string
	fire string
}

// simExpect is one dispatch the oracle expects.
type simExpect struct {
	fireID  string
	payload string
	missed  int64 // -1: not checked
	// slack: the count may be up to this much higher (skipped times of
	// earlier advances that dispatched nothing, when a rebuild re-plans them).
	slack int64
	must  bool
	job   string
	inc   int
	p     int32
	chain string // the advance ("a" + T) or bucket trigger ("b" + id) that owes it; "" none
	step  int
	why   string
	tag   string // what made it owed: "late" (a late put or resume), "fuzzy" (during an advance), "big" (> 10,000 in one advance)
}

// simSeen is one produced dispatch event.
type simSeen struct {
	payload string
	missed  int64
	step    int
	sched   time.Time
	trigger string
}

// simViolation is one broken property.
type simViolation struct {
	step int
	job  string
	kind string
	msg  string
	fire string // the fire_id it is about, if any
	bug  string // which of issue 17's six bugs it looks like ("" unknown)
}

// simFireOf is the first fire_id (a word with an @) in msg.
func simFireOf(msg string) string {
	for _, w := range strings.Fields(msg) {
		if strings.Contains(w, "@") {
			return w
		}
	}
	return ""
}

type simOracle struct {
	maxCatchUp int
	jobs       map[string]*simOJob
	incs       map[string]int
	defs       map[string]*simDef // by payload
	expects    map[string][]*simExpect
	byPayload  map[string][]*simExpect        // every expectation, by payload
	pending    map[string]map[*simExpect]bool // by job: undispatched musts
	seen       map[string][]simSeen
	busy       []map[string]int // per partition: chains in progress
	wm         []time.Time      // per partition: the latest advance applied
	// open is, per partition, the T of the pass under way when a callback
	// of it began dispatching and never yielded (the shard record's
	// PassOpen: it died, or a produce failed), or whose cuts were too
	// many to keep (PassCutsLost), as the command being applied found it
	// (zero: none).
	open       []time.Time
	fanned     map[string]string              // fire_id → payload: the bucket fires the command being processed may send first (allowFanned)
	overtaking time.Time                      // the restored shard's time while commands overtake a crashed advance or fan-out (-sim.lateredeliver; zero: none)
	bucketTr   map[string]codecs.ShardTrigger // bucket chains by chain name
	violations []simViolation
	tainted    map[string]string // job#incarnation: the known open finding that hit it
	notes      []string          // findings that are not violations of the contract checked here
	step       int
	ops        map[string]int // counts of applied inputs by kind
}

func newSimOracle(partitions int32, maxCatchUp int) *simOracle {
	o := &simOracle{maxCatchUp: maxCatchUp, jobs: map[string]*simOJob{}, incs: map[string]int{}, defs: map[string]*simDef{},
		expects: map[string][]*simExpect{}, byPayload: map[string][]*simExpect{}, pending: map[string]map[*simExpect]bool{}, bucketTr: map[string]codecs.ShardTrigger{}, tainted: map[string]string{}, seen: map[string][]simSeen{}, ops: map[string]int{}}
	for range partitions {
		o.busy = append(o.busy, map[string]int{})
		o.wm = append(o.wm, time.Time{})
		o.open = append(o.open, time.Time{})
	}
	return o
}

func (o *simOracle) job(id string, p int32) *simOJob {
	j := o.jobs[id]
	if j == nil {
		j = &simOJob{id: id, p: p}
		o.jobs[id] = j
	}
	return j
}

func (o *simOracle) tracef(id, format string, args ...any) {
	j := o.jobs[id]
	if j == nil {
		return
	}
	j.trace = append(j.trace, simTraceLine{step: o.step, text: fmt.Sprintf(format, args...)})
}

func (o *simOracle) violate(job, kind, format string, args ...any) {
	o.violateBug(job, kind, "", format, args...)
}

func (o *simOracle) violateBug(job, kind, bug, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if bug == "" {
		switch kind {
		case "fire early":
			bug = "5 clock"
		case "two payloads":
			bug = "6 late update"
		case "unexpected fire", "misfire count":
			if j := o.jobs[job]; j != nil && j.lateUpdate {
				bug = "6 late update"
			}
		case "if_version", "completed early":
			bug = "4 delete+re-put"
		}
	}
	if j := o.jobs[job]; j != nil && !simKnownOpen[bug] {
		if t := o.tainted[simIncKey(job, j.inc)]; t != "" {
			bug = t
			msg += " (after: " + t + ")"
		}
	}
	o.violations = append(o.violations, simViolation{step: o.step, job: job, kind: kind, msg: msg, fire: simFireOf(msg), bug: bug})
	o.tracef(job, "VIOLATION %s: %s", kind, msg)
}

// busyT is the latest T of an advance in progress on p (zero: none).
func (o *simOracle) busyT(p int32) time.Time {
	var t time.Time
	for c, n := range o.busy[p] {
		if n <= 0 || !strings.HasPrefix(c, "a") {
			continue
		}
		ct, _ := time.Parse(time.RFC3339Nano, c[1:])
		if ct.After(t) {
			t = ct
		}
	}
	return t
}

func (o *simOracle) isBusy(p int32, chain string) bool { return chain != "" && o.busy[p][chain] > 0 }

func advChain(t time.Time) string { return "a" + t.UTC().Format(time.RFC3339Nano) }

func (o *simOracle) expect(e *simExpect) {
	e.step = o.step
	o.expects[e.fireID] = append(o.expects[e.fireID], e)
	o.byPayload[e.payload] = append(o.byPayload[e.payload], e)
	if e.must {
		for _, s := range o.seen[e.fireID] {
			if s.payload == e.payload {
				return // already dispatched (a repeated trigger)
			}
		}
		if o.pending[e.job] == nil {
			o.pending[e.job] = map[*simExpect]bool{}
		}
		o.pending[e.job][e] = true
	}
}

// loosen turns the undispatched musts of job id that an in-progress chain
// owes (or every one, if all) into mays.
func (o *simOracle) loosen(id string, p int32, all bool, why string) {
	for e := range o.pending[id] {
		if all || o.isBusy(p, e.chain) {
			e.must = false
			e.why += "; " + why
			delete(o.pending[id], e)
		}
	}
}

// times returns the schedule's times in (from, to].
func simTimes(s schedule.Schedule, from, to time.Time) []time.Time {
	if from.IsZero() {
		panic("sim: times from the zero time")
	}
	var ts []time.Time
	for t := s.Next(from); !t.IsZero() && !t.After(to); t = s.Next(t) {
		ts = append(ts, t)
	}
	return ts
}

// put applies a put at record time ts. d.payload is unique to the put.
func (o *simOracle) put(d *simDef, p int32, ts time.Time) {
	j := o.job(d.id, p)
	bt := o.busyT(p)
	existed := j.exists
	j.fBefore = nil // what advances in progress owe it is settled or starts here
	if !existed {
		o.incs[d.id]++
		j.exists, j.inc, j.paused, j.F, j.puts, j.fuzzy, j.finished = true, o.incs[d.id], false, simLater(ts, j.deleted), 0, time.Time{}, false
		d.inc, d.defn = j.inc, 1
		j.startLow, j.owedFrom = time.Time{}, time.Time{}
		if o.wm[p].After(ts) {
			j.owedFrom = j.F
		}
		if hi := simLater(ts, j.deletedHigh); hi.After(j.F) {
			j.startLow = j.F
			// The scheduler may start it after the deleted one's high mark:
			// the times up to it may not go out, and the misfire counts
			// of the next advance depend on it.
			for _, t := range simTimes(d.sched, j.F, hi) {
				o.expect(&simExpect{fireID: codecs.ScheduledFireID(d.id, t), payload: d.payload, missed: -1, job: d.id, inc: j.inc, p: p,
					why: "re-put after deleting a job that may have completed"})
			}
			j.F = hi
			j.recount = true
		}
		if bt.After(ts) {
			j.fuzzy = bt
		}
		j.lateUntil = time.Time{}
		if o.wm[p].After(ts) {
			j.lateUntil = o.wm[p]
		}
	} else {
		if ts.Before(j.F) {
			j.lateUpdate = true
		}
		d.inc, d.defn = j.inc, j.def.defn+1
		o.settleOwed(j, "owed when an update was applied", true)
		o.loosen(d.id, p, false, "updated during its advance")
		if !j.resumedFrom.IsZero() {
			for _, t := range simTimes(d.sched, j.resumedFrom, simLater(j.F, simLater(o.wm[p], bt))) {
				o.expect(&simExpect{fireID: codecs.ScheduledFireID(d.id, t), payload: d.payload, missed: -1, job: d.id, inc: j.inc, p: p,
					why: "update after a resume of a job paused while owing fires"})
			}
		}
		if !bt.IsZero() {
			// The update takes over where the old definition stopped in
			// the advance under way: the new definition may fire its
			// times up to bt that the old one had not reached.
			from := j.F
			if !j.prevF.IsZero() {
				from = simEarlier(j.prevF, j.F)
			}
			for _, t := range simTimes(d.sched, from, bt) {
				o.expect(&simExpect{fireID: codecs.ScheduledFireID(d.id, t), payload: d.payload, missed: -1, job: d.id, inc: j.inc, p: p,
					why: "update during an advance in progress"})
			}
		}
		if j.finished {
			// Completed or paused: either handled through now or through
			// the pause. The new definition's times in between may fire.
			// A completed job continues from the shard's time, even before
			// ts; a paused one from after ts: the times in between may fire.
			now := simLater(o.wm[p], bt)
			lo, hi := j.F, simLater(ts, now)
			if !now.IsZero() {
				lo = simEarlier(j.F, now)
			}
			for _, t := range simTimes(d.sched, lo, hi) {
				o.expect(&simExpect{fireID: codecs.ScheduledFireID(d.id, t), payload: d.payload, missed: -1, job: d.id, inc: j.inc, p: p,
					why: "put on a completed or paused job"})
			}
			j.F = simLater(lo, hi)
			if j.resumedFrom.IsZero() || lo.Before(j.resumedFrom) {
				j.resumedFrom = lo // the updates that follow may continue from there too
			}
		}
		// An update continues exactly where the old definition stopped
		// (docs/topics.md): times after it, even before ts, are owed by
		// the new definition. A paused job stays clear of its pause; a
		// completed one is put again like a new job, from its ts.
		if j.paused && j.owedAtPause {
			// docs/topics.md: a put on a paused job that still owed fires
			// from before its pause owes those and the paused interval
			// with them, under the new definition, as a resume does: from
			// wherever the pause's fires got (between the pause's F and
			// its record time), so the new definition's times from there
			// may go out, and the next advance's misfire counts depend on
			// where that was.
			now := simLater(o.wm[p], bt)
			for _, t := range simTimes(d.sched, j.prePause, simLater(simLater(j.F, ts), now)) {
				o.expect(&simExpect{fireID: codecs.ScheduledFireID(d.id, t), payload: d.payload, missed: -1, job: d.id, inc: j.inc, p: p,
					why: "put on a job paused while owing fires: its paused interval"})
			}
			j.owedAtPause = false
			j.recount = true
			j.resumedFrom = j.prePause // an update that follows continues from there too
		}
		if j.paused && !j.pauseLow.IsZero() {
			// Paused during an advance that may not have reached it.
			for _, t := range simTimes(d.sched, simLater(j.pauseLow, ts), simLater(j.F, ts)) {
				o.expect(&simExpect{fireID: codecs.ScheduledFireID(d.id, t), payload: d.payload, missed: -1, job: d.id, inc: j.inc, p: p,
					why: "put on a job paused during an advance that may not have reached it"})
			}
			j.recount = true
			if j.resumedFrom.IsZero() || j.pauseLow.Before(j.resumedFrom) {
				j.resumedFrom = simLater(j.pauseLow, ts)
			}
			j.pauseLow = time.Time{}
		}
		switch {
		case j.paused || j.finished:
			j.F = simLater(o.handled(j), ts)
		case !bt.IsZero() && j.def.sched.Next(simLater(j.F, bt)).IsZero():
			// An advance in progress (or waiting for the pass under way)
			// may have sent the old definition's last time and completed
			// the job, which is then put again from ts: the new
			// definition's times from where the old one stopped up to ts
			// may or may not go out (seed 400013 x 8000).
			h := o.handled(j)
			for _, t := range simTimes(d.sched, h, simLater(h, ts)) {
				o.expect(&simExpect{fireID: codecs.ScheduledFireID(d.id, t), payload: d.payload, missed: -1, job: d.id, inc: j.inc, p: p,
					why: "update of a job an advance in progress may have completed"})
			}
			j.F = simLater(h, ts)
			j.recount = true
		default:
			j.F = o.handled(j)
		}
		j.finished = false
		j.paused = false
		if bt.After(j.F) {
			j.fuzzy = simLater(j.fuzzy, bt)
		}
	}
	o.defs[d.payload] = d
	j.def = d
	j.puts++
	if d.sched.Next(j.F).IsZero() {
		// Nothing after F: the scheduler stores the job completed at once
		// (a one-shot time or an end at or before it).
		j.finished = true
	}
	// What the new definition owes up to the shard's time may go out at
	// once: a redelivery of this put after a crash that kept it is an
	// update of itself, which first dispatches what the job owes.
	o.settleOwed(j, "owed when the put was applied", false)
	j.lastPut = ts
	o.bucketMay(j)
	o.advanceMay(j, ts, "put during an advance in progress")
	o.tracef(d.id, "put applied (record time %s): incarnation %d def %d: %s; F=%s", simFmt(ts), j.inc, d.defn, d, simFmt(j.F))
}

func (o *simOracle) del(id string, p int32, ts time.Time) {
	j := o.job(id, p)
	if !j.exists {
		o.tracef(id, "delete applied (no job)")
		return
	}
	j.deleted = o.handled(j)
	j.deletedHigh = time.Time{}
	if now := o.overtaking; !now.IsZero() && !j.paused && j.deleted.After(now) {
		// It overtakes a crashed advance: unless the advance's callback
		// had durably written that it may fire (PassOpen) before it died,
		// the restored shard's time is its watermark, and the scheduler
		// has the job handled through that only (seed 575 x 800 with
		// -sim.lateredeliver: a re-put then owed the times in between,
		// fire_ids the deleted one never sent).
		j.deletedHigh, j.deleted = j.deleted, now
	}
	if j.paused && j.finished {
		j.deletedHigh = simLater(j.deleted, simLater(o.wm[p], o.busyT(p)))
	}
	if j.paused && !j.resumedFrom.IsZero() && j.resumedFrom.Before(j.deleted) {
		// Put while paused during an advance that may not have reached it
		// (resumedFrom): the scheduler may have it handled only from there.
		j.deletedHigh = simLater(j.deletedHigh, j.deleted)
		j.deleted = j.resumedFrom
	}
	if j.paused && !j.pauseLow.IsZero() && j.pauseLow.Before(j.deleted) {
		// Paused during advances that may not have reached it: the
		// scheduler may have it handled only through pauseLow, and a
		// re-put starts after that (seed 70163 x 3000: advances waiting
		// for the pass under way).
		j.deletedHigh = simLater(j.deletedHigh, j.deleted)
		j.deleted = j.pauseLow
	}
	if !j.startLow.IsZero() {
		// Started as early as startLow: handled no further than where its
		// pause found that (startLow at least), or the shard's time.
		low := j.startLow
		if !j.paused {
			low = simLater(low, simLater(o.wm[p], o.busyT(p)))
		}
		if low.Before(j.deleted) {
			j.deletedHigh = simLater(j.deletedHigh, j.deleted)
			j.deleted = low
		}
	}
	j.exists, j.owedFrom = false, time.Time{}
	o.loosen(id, p, false, "deleted during its advance")
	o.tracef(id, "delete applied (record time %s): incarnation %d ends", simFmt(ts), j.inc)
}

func (o *simOracle) pause(id string, p int32, ts time.Time) {
	j := o.job(id, p)
	if !j.exists || j.paused {
		o.tracef(id, "pause applied: no change")
		return
	}
	// A pause applies from its record time: times owed up to ts that are
	// not dispatched yet may still go out (the rest of an advance under
	// way keeps those of its own as it must, a resume the others). A job
	// that took over a paused interval and saw no advance since may still
	// owe times from where that began.
	low := j.F
	if !j.resumedFrom.IsZero() {
		low = simEarlier(low, j.resumedFrom)
	}
	for _, t := range simTimes(j.def.sched, low, ts) {
		o.expect(&simExpect{fireID: codecs.ScheduledFireID(id, t), payload: j.def.payload, missed: -1, job: id, inc: j.inc, p: p,
			why: "owed before a pause"})
		j.owedAtPause = true
	}
	from := o.owedFrom(j)
	if !from.IsZero() && from.Before(low) {
		// An advance under way has not reached the job (its fires are
		// still pending): the job still owes the times after prevF, and
		// the pause first dispatches those up to the earlier of ts and
		// the shard's time, planned by the misfire policy on their own
		// (docs/topics.md). A late time that the advance's fire_once
		// would have counted as missed (a later late time carrying it)
		// may then be the one that goes out (seed 4726). They are
		// dispatched by the pause, so the job owes nothing from before it.
		for _, t := range simTimes(j.def.sched, from, simEarlier(low, ts)) {
			o.expect(&simExpect{fireID: codecs.ScheduledFireID(id, t), payload: j.def.payload, missed: -1, job: id, inc: j.inc, p: p,
				why: "owed before a pause applied while the advance under way had not reached the job"})
		}
	}
	var unsent time.Time // the first time after ts an advance under way still owed it
	for e := range o.pending[id] {
		if o.isBusy(p, e.chain) && (strings.HasPrefix(e.chain, "b") || simFireTime(e.fireID).After(ts)) {
			e.must = false
			e.why += "; paused during its advance"
			delete(o.pending[id], e)
			if ft := simFireTime(e.fireID); strings.HasPrefix(e.chain, "a") && e.payload == j.def.payload && (unsent.IsZero() || ft.Before(unsent)) {
				unsent = ft
			}
		}
	}
	// Handled through ts: later times are not owed while paused. A job
	// that owes nothing up to the shard's time is handled through it
	// (docs/topics.md: a command first sends what the job owes up to the
	// shard's time), even when the pause's ts is before it.
	j.prePause = j.F
	j.pauseLow = time.Time{}
	if bt := o.busyT(p); !bt.IsZero() && !j.prevF.IsZero() && j.prevF.Before(j.F) {
		low := j.prevF
		if !j.waitLow.IsZero() && j.waitLow.Before(low) {
			low = j.waitLow // advances that waited may not have reached it either
		}
		j.pauseLow = simLater(ts, low)
	}
	if !j.owedFrom.IsZero() {
		// A catch-up under way (a late put's or resume's) stops at the
		// pause: the scheduler has the job handled through the last of
		// its fires dispatched (docs/topics.md), which may be far behind
		// F when the commands run hours behind the advances (seed 2500031
		// x 800: a resume's catch-up of 30 minutes, paused half way with
		// a ts before it, then deleted and put again).
		if first := o.firstUnsent(j, j.owedFrom, simLater(j.F, simLater(o.wm[p], o.busyT(p)))); !first.IsZero() {
			if low := simLater(ts, first.Add(-time.Nanosecond)); j.pauseLow.IsZero() || low.Before(j.pauseLow) {
				j.pauseLow = low
			}
		}
		j.owedFrom = time.Time{}
	}
	if !j.resumedFrom.IsZero() {
		// No advance since it took over a paused interval: the scheduler
		// may be handled through no further than where that began.
		j.prePause = simEarlier(j.F, j.resumedFrom)
	}
	if now := simLater(o.wm[p], o.busyT(p)); !now.IsZero() {
		// docs/topics.md: a paused job that still owed fires is handled
		// "through the last of them dispatched". Its owed times up to the
		// shard's time may already have gone out before the pause was
		// applied (a late put's or resume's catch-up, an advance): they
		// are handled, whatever the pause's ts, and a later update does
		// not owe them again (it would send their fire_ids with a second
		// payload).
		h := simLater(j.F, o.sentThrough(j, j.F, now))
		switch next := j.def.sched.Next(h); {
		case next.IsZero() || next.After(now):
			j.F = simLater(j.F, now)
		case next.After(ts):
			// It owes times after the pause only: handled up to just
			// before the first (the scheduler's handled-through is how far
			// it got through the schedule, and nothing of it lies between).
			j.F = simLater(j.F, next.Add(-time.Nanosecond))
		}
		if !unsent.IsZero() && !j.F.Before(unsent) {
			// The advances under way had not sent its times from unsent on
			// (the job was catching up behind them, a bound a pass at a
			// time): it may still have owed fires, so the pause, which
			// sends them up to ts, may leave it handled through the last
			// it dispatched, not through the shard's time (docs/topics.md;
			// seed 950377 x 800: the oracle had it handled through the
			// shard's time and read a later re-put's first times as not
			// owed).
			if low := simLater(ts, o.sentThrough(j, ts, unsent)); j.pauseLow.IsZero() || low.Before(j.pauseLow) {
				j.pauseLow = low
			}
		}
	}
	j.pauseOpen = time.Time{}
	if open := o.open[p]; !open.IsZero() && open.After(ts) {
		// docs/topics.md: a pass a callback left open (it died after
		// sending fires it had not recorded) may have sent the job's times
		// up to its T; the pause sends them first under this definition,
		// as if the pass had reached the job before it. Which ones it
		// sends depends on where the job's due entry was: each may go out
		// with this payload, and a later definition may owe each.
		for _, t := range simTimes(j.def.sched, simLater(j.F, ts), open) {
			o.expect(&simExpect{fireID: codecs.ScheduledFireID(id, t), payload: j.def.payload, missed: -1, job: id, inc: j.inc, p: p,
				why: "sent by a pause while a pass a crash left open was under way"})
		}
		if low := simLater(j.F, ts); low.Before(open) && (j.pauseLow.IsZero() || low.Before(j.pauseLow)) {
			j.pauseLow = low
		}
		j.F, j.pauseOpen = simLater(j.F, open), open
	}
	j.F = simLater(j.F, ts)
	j.finished = j.def.sched.Next(j.F).IsZero()
	j.paused, j.pausedAt = true, ts
	o.tracef(id, "pause applied (record time %s); F=%s", simFmt(ts), simFmt(j.F))
}

// owedFrom is where the earliest advance in progress (or waiting for the
// pass under way) found j, when one of them still owes it fires (zero:
// none does): the advances that waited behind a pass may each have moved
// F on delivery, but none of them has reached the job, and a later one
// takes over the fires an earlier one owed it (advance: "late for a later
// advance that overtook it").
func (o *simOracle) owedFrom(j *simOJob) time.Time {
	owes := false
	for e := range o.pending[j.id] {
		if e.inc == j.inc && strings.HasPrefix(e.chain, "a") && o.isBusy(j.p, e.chain) {
			owes = true
			break
		}
	}
	if !owes {
		return time.Time{}
	}
	from := j.prevF
	for c, f := range j.fBefore {
		if o.isBusy(j.p, c) && !f.IsZero() && (from.IsZero() || f.Before(from)) {
			from = f
		}
	}
	return from
}

// sentThrough is the latest time of j's current definition in (from, to]
// already dispatched as a scheduled fire with its payload (zero: none).
func (o *simOracle) sentThrough(j *simOJob, from, to time.Time) time.Time {
	var last time.Time
	for _, t := range simTimes(j.def.sched, from, to) {
		for _, s := range o.seen[codecs.ScheduledFireID(j.id, t)] {
			if s.payload == j.def.payload && s.trigger == codecs.TriggerSchedule {
				last = t
				break
			}
		}
	}
	return last
}

// firstUnsent is the first time of j's current definition in (from, to]
// not dispatched yet as a scheduled fire with its payload (zero: none).
func (o *simOracle) firstUnsent(j *simOJob, from, to time.Time) time.Time {
	for _, t := range simTimes(j.def.sched, from, to) {
		if !slices.ContainsFunc(o.seen[codecs.ScheduledFireID(j.id, t)], func(s simSeen) bool {
			return s.payload == j.def.payload && s.trigger == codecs.TriggerSchedule
		}) {
			return t
		}
	}
	return time.Time{}
}

func (o *simOracle) resume(id string, p int32, ts time.Time) {
	j := o.job(id, p)
	if !j.exists || !j.paused {
		o.tracef(id, "resume applied: no change")
		return
	}
	j.paused = false
	j.lastPut = ts
	from := simLater(j.F, ts)
	if !j.pauseLow.IsZero() {
		// Paused during an advance that may not have reached it.
		for _, t := range simTimes(j.def.sched, simLater(j.pauseLow, ts), from) {
			o.expect(&simExpect{fireID: codecs.ScheduledFireID(id, t), payload: j.def.payload, missed: -1, job: id, inc: j.inc, p: p,
				why: "resume of a job paused during an advance that may not have reached it"})
		}
		j.recount = true
		j.owedFrom = simLater(j.pauseLow, ts)
		j.pauseLow = time.Time{}
	}
	if j.owedAtPause {
		// docs/topics.md: fires still owed from before the pause are
		// dispatched on resume "together with the paused interval's":
		// whether they are still owed depends on where the pause found
		// the job's catch-up, so the paused interval may go out, under
		// this definition or the next one's if an update follows.
		for _, t := range simTimes(j.def.sched, j.F, simLater(from, simLater(o.wm[p], o.busyT(p)))) {
			o.expect(&simExpect{fireID: codecs.ScheduledFireID(id, t), payload: j.def.payload, missed: -1, job: id, inc: j.inc, p: p,
				why: "paused interval of a job that owed fires at its pause"})
		}
		j.resumedFrom = j.prePause // where the pause found it: it continues from there
		j.recount = true           // the next advance's misfire counts depend on where the pause's fires got
		o.notes = append(o.notes, fmt.Sprintf("op %d: resume of %s, paused while it owed fires: its paused interval may be dispatched", o.step, id))
		j.owedAtPause = false
	}
	// A late resume's catch-up owes the times after from; one of a job
	// that took over a paused interval (resumedFrom: where its pause found
	// it) may start there, far behind F (seed 8200176 x 1500 crashkeep: a
	// late put on a paused job, then a pause and a resume; the catch-up got
	// 10:16:15-10:18:55 of 10:16:15-10:40:42 before a late pause, and the
	// delete and re-put that followed owed the times after that).
	start := from
	if !j.resumedFrom.IsZero() && j.resumedFrom.Before(start) {
		start = j.resumedFrom
	}
	if j.owedFrom.IsZero() && simLater(o.wm[p], o.busyT(p)).After(start) {
		j.owedFrom = start
	}
	o.bucketMay(j)
	o.advanceMay(j, from, "resume during an advance in progress")
	j.F = from
	if j.def.sched.Next(j.F).IsZero() {
		// Nothing after it: the scheduler stores the job completed at once.
		j.finished = true
	}
	if o.wm[p].After(j.F) {
		j.lateUntil = o.wm[p]
	}
	if bt := o.busyT(p); bt.After(j.F) {
		j.fuzzy = simLater(j.fuzzy, bt)
	}
	o.tracef(id, "resume applied (record time %s); F=%s", simFmt(ts), simFmt(j.F))
}

// bucketMay: a job that became active (or changed) while a bucket fan-out
// is in progress on p may be fired by its remaining chunks.
func (o *simOracle) bucketMay(j *simOJob) {
	for chain, n := range o.busy[j.p] {
		tr, ok := o.bucketTr[chain]
		if n <= 0 || !ok || tr.Bucket != j.def.bucket {
			continue
		}
		pl := j.def.payload
		if tr.Payload != nil {
			pl = string(tr.Payload)
		}
		o.expect(&simExpect{fireID: codecs.TriggeredFireID(j.id, tr.TriggerID), payload: pl, missed: 0, job: j.id, inc: j.inc, p: j.p, chain: chain,
			why: "changed during a bucket fan-out"})
	}
}

// handled is how far the job's current definition has been handled when a
// command replaces or pauses it (docs/topics.md, "Updates, deletes and
// versions"): the shard's time (its watermark, or an advance in progress),
// unless it still owes times up to then: just before the first of them.
// A paused job stays where its pause left it.
func (o *simOracle) handled(j *simOJob) time.Time {
	if j.paused {
		return j.F
	}
	// A command first dispatches, under the current definition, what the
	// job owes up to the shard's time (97a64a6): it is then handled
	// through that time.
	return simLater(j.F, simLater(o.wm[j.p], o.busyT(j.p)))
}

// settleOwed: the times a command dispatches before it changes the job
// (its current definition's owed times up to the shard's time).
func (o *simOracle) settleOwed(j *simOJob, why string, update bool) {
	if j.paused || !j.exists {
		return
	}
	now := simLater(o.wm[j.p], o.busyT(j.p))
	for _, t := range simTimes(j.def.sched, j.F, now) {
		// docs/topics.md: an update first dispatches, under the old
		// definition, every fire the job still owes up to the shard's
		// time; one within its grace must go out (with no advance under
		// way, whose chunks may have sent it already).
		must := update && o.busyT(j.p).IsZero() && now.Sub(t) <= j.def.grace && !j.recount
		o.expect(&simExpect{fireID: codecs.ScheduledFireID(j.id, t), payload: j.def.payload, missed: -1, must: must, job: j.id, inc: j.inc, p: j.p, why: why})
	}
}

// advanceMay: the rest of an advance in progress on the job's partition
// may fire the job's current definition's times in (from, T].
func (o *simOracle) advanceMay(j *simOJob, from time.Time, why string) {
	bt := o.busyT(j.p)
	for _, t := range simTimes(j.def.sched, from, bt) {
		o.expect(&simExpect{fireID: codecs.ScheduledFireID(j.id, t), payload: j.def.payload, missed: -1, job: j.id, inc: j.inc, p: j.p, why: why})
	}
}

// fire applies a manual fire.
func (o *simOracle) fire(id string, p int32, trigger string, payload []byte) {
	j := o.job(id, p)
	if !j.exists {
		o.tracef(id, "fire %s applied: no job", trigger)
		return
	}
	pl := j.def.payload
	if payload != nil {
		pl = string(payload)
	}
	o.expect(&simExpect{fireID: codecs.TriggeredFireID(id, trigger), payload: pl, missed: 0, must: true, job: id, inc: j.inc, p: p, why: "manual fire"})
	o.tracef(id, "fire %s applied", trigger)
}

// bucket applies the first delivery of a bucket trigger on p.
func (o *simOracle) bucket(p int32, tr codecs.ShardTrigger) {
	chain := "b" + tr.TriggerID
	o.bucketTr[chain] = tr
	for _, id := range o.sortedJobs(p) {
		j := o.jobs[id]
		if !j.exists || j.def.bucket != tr.Bucket {
			continue
		}
		pl := j.def.payload
		if tr.Payload != nil {
			pl = string(tr.Payload)
		}
		// A job whose schedule has nothing left may be completed already:
		// completed jobs do not fire on bucket triggers.
		// So may one whose times up to the shard's time may all have gone
		// out (a redelivered put first dispatches what it owes, then
		// completes it): a must needs a time after the shard's time.
		must := !j.paused && !j.finished && !j.def.sched.Next(simLater(j.F, o.wm[p])).IsZero()
		if j.paused {
			continue
		}
		o.expect(&simExpect{fireID: codecs.TriggeredFireID(id, tr.TriggerID), payload: pl, missed: 0, must: must, job: id, inc: j.inc, p: p, chain: chain, why: "bucket trigger"})
		o.tracef(id, "bucket trigger %s (bucket %q) owes a fire (must=%v)", tr.TriggerID, tr.Bucket, must)
	}
}

func (o *simOracle) sortedJobs(p int32) []string {
	var ids []string
	for id, j := range o.jobs {
		if j.p == p {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// advance applies the first delivery of an advance to T on p.
func (o *simOracle) advance(p int32, T time.Time) {
	chain := advChain(T)
	o.wm[p] = simLater(o.wm[p], T)
	waits := !o.busyT(p).IsZero() // an advance in progress: this one may wait for it
	for _, id := range o.sortedJobs(p) {
		if j := o.jobs[id]; !waits || j.waitLow.IsZero() {
			j.waitLow = j.F // where this advance, or the first still in progress, found it
		}
	}
	for _, id := range o.sortedJobs(p) {
		j := o.jobs[id]
		if j.exists && !j.paused && !j.startLow.IsZero() && T.After(j.startLow) {
			j.startLow = T
			if !T.Before(j.F) {
				j.startLow = time.Time{}
			}
		}
		if !j.exists || j.paused || !T.After(j.F) {
			continue
		}
		d := j.def
		// Undispatched fires of an advance still in progress: this advance
		// handles them now, with its own lateness.
		overlap := false
		for e := range o.pending[id] {
			if o.isBusy(p, e.chain) && strings.HasPrefix(e.chain, "a") {
				overlap = true
				at := simFireTime(e.fireID)
				if T.Sub(at) > d.grace {
					// Counted as missed by whichever advance handles it,
					// with the times it would have counted as missed
					// itself (an advance that waited for the pass under
					// way never ran on its own: its misses go with the
					// pass that took it over).
					j.carry += 1 + max(e.missed, 0) + e.slack
					e.must, e.missed = false, -1
					e.why += "; late for a later advance that overtook it"
					delete(o.pending[id], e)
					continue
				}
				e.missed = -1
			}
		}
		for c := range j.fBefore {
			if !o.isBusy(p, c) {
				delete(j.fBefore, c)
			}
		}
		if j.fBefore == nil {
			j.fBefore = map[string]time.Time{}
		}
		j.fBefore[chain] = j.F
		times := simTimes(d.sched, j.F, T)
		if len(times) == 0 {
			j.prevF, j.F = j.F, T
			continue
		}
		var fuzzy []time.Time
		for len(times) > 0 && !times[0].After(j.fuzzy) {
			fuzzy, times = append(fuzzy, times[0]), times[1:]
		}
		unchecked := overlap || len(fuzzy) > 0 || j.recount
		for _, t := range fuzzy {
			o.expect(&simExpect{fireID: codecs.ScheduledFireID(id, t), payload: d.payload, missed: -1, must: T.Sub(t) <= d.grace,
				job: id, inc: j.inc, p: p, chain: chain, tag: "fuzzy", why: fmt.Sprintf("owed since an advance in progress, handled by advance %s", simFmt(T))})
		}
		fires, late := simPlan(times, T, d.grace, d.policy, o.maxCatchUp)
		if len(fires) > 0 {
			j.recount = false
		}
		tag := func(t time.Time) string {
			switch {
			case len(fires)+len(fuzzy) > maxFires:
				return "big"
			case !t.After(j.lateUntil):
				return "late"
			}
			return ""
		}
		if len(fires) > 0 && unchecked && len(late) > 0 {
			// The misfire outcome may differ with the times handled before: allow any late time.
			for _, t := range late {
				o.expect(&simExpect{fireID: codecs.ScheduledFireID(id, t), payload: d.payload, missed: -1, job: id, inc: j.inc, p: p, chain: chain, why: "late, overlapping advances"})
			}
		}
		carry := j.carry
		if len(fires) == 0 {
			j.carry += int64(len(late))
		} else if !overlap {
			j.carry = 0
		}
		for i, f := range fires {
			m := f.Missed
			var slack int64
			if i == 0 {
				slack = carry
			}
			must := T.Sub(f.At) <= d.grace
			if unchecked {
				m = -1
				must = must || f.At.After(j.fuzzy)
			}
			o.expect(&simExpect{fireID: codecs.ScheduledFireID(id, f.At), payload: d.payload, missed: m, slack: slack, must: true,
				job: id, inc: j.inc, p: p, chain: chain, tag: tag(f.At), why: fmt.Sprintf("advance %s (F was %s)", simFmt(T), simFmt(j.F))})
		}
		o.tracef(id, "advance %s: owes %d times after F=%s (%d fuzzy), dispatches %d, %d late (%s, grace %s)",
			simFmt(T), len(times)+len(fuzzy), simFmt(j.F), len(fuzzy), len(fires), len(late), d.policy, d.grace)
		j.prevF, j.F = j.F, T
		j.fuzzy, j.lateUntil, j.resumedFrom = time.Time{}, time.Time{}, time.Time{}
		if d.sched.Next(j.F).IsZero() {
			// Its last time is handled: the scheduler completes it once the
			// completion loops back (a put may find it completed or not).
			j.finished = true
			// A bucket fan-out under way that has not reached it may then
			// find it completed, and completed jobs do not fire
			// (docs/topics.md: its state when its chunk runs decides).
			for e := range o.pending[id] {
				if strings.HasPrefix(e.chain, "b") && o.isBusy(p, e.chain) {
					e.must = false
					e.why += "; its last time went out while the fan-out was under way"
					delete(o.pending[id], e)
				}
			}
		}
	}
}

// simPlan is the contract's misfire handling of the owed times (ascending)
// for an advance to T: late ones (T - t > grace) by policy, the rest all.
func simPlan(times []time.Time, T time.Time, grace time.Duration, policy string, maxCatchUp int) (fires []Fire, late []time.Time) {
	i := 0
	for i < len(times) && T.Sub(times[i]) > grace {
		i++
	}
	late = times[:i]
	var onTime []Fire
	for _, t := range times[i:] {
		onTime = append(onTime, Fire{At: t})
	}
	switch policy {
	case codecs.MisfireSkip:
		fires = onTime
		if len(fires) > 0 {
			fires[0].Missed = int64(len(late))
		}
	case codecs.MisfireFireAll:
		kept := late[max(0, len(late)-maxCatchUp):]
		for _, t := range kept {
			fires = append(fires, Fire{At: t})
		}
		fires = append(fires, onTime...)
		if m := len(late) - len(kept); m > 0 && len(fires) > 0 {
			fires[0].Missed += int64(m)
		}
	default:
		if len(late) > 0 {
			fires = append(fires, Fire{At: late[len(late)-1], Missed: int64(len(late) - 1)})
		}
		fires = append(fires, onTime...)
	}
	return fires, late
}

func simFireTime(fireID string) time.Time {
	i := strings.LastIndexByte(fireID, '@')
	t, _ := time.Parse(time.RFC3339Nano, fireID[i+1:])
	return t
}

// dispatched checks one produced dispatch event. curT is the T of the
// advance being processed (zero outside an advance); early, when set, is
// the latest scheduled_at allowed now (broker time plus the clock bound).
func (o *simOracle) dispatched(d codecs.Dispatch, curT, early time.Time) {
	pl := string(d.Payload)
	prev := o.seen[d.FireID]
	o.seen[d.FireID] = append(prev, simSeen{payload: pl, missed: d.Missed, step: o.step, sched: d.ScheduledAt, trigger: d.Trigger})
	if _, ok := o.jobs[d.JobID]; !ok {
		o.job(d.JobID, -1)
	}
	j := o.jobs[d.JobID]
	o.tracef(d.JobID, "dispatched %s %s missed=%d payload=%s", d.Trigger, d.FireID, d.Missed, pl)
	j.trace[len(j.trace)-1].fire = d.FireID
	for _, s := range prev {
		if s.payload != pl {
			bug := "6 late update"
			a, b := o.defs[s.payload], o.defs[pl]
			if a != nil && b != nil && a.inc != b.inc {
				bug = simKnownReuse
			}
			o.violateBug(d.JobID, "two payloads", bug, "fire_id %s dispatched with payload %s (op %d) and now %s", d.FireID, s.payload, s.step, pl)
			if bug == simKnownReuse && b.inc == j.inc && o.tainted[simIncKey(d.JobID, j.inc)] == "" {
				// The later violations of this incarnation (this fire is
				// not owed by it either) come from the same finding, not
				// from whatever else its history holds (seed 4232: a late
				// update earlier made them read "6 late update").
				o.tainted[simIncKey(d.JobID, j.inc)] = simKnownReuse
			}
			break
		}
	}
	var match *simExpect
	for _, e := range o.expects[d.FireID] {
		if e.payload == pl {
			match = e
		}
	}
	if fp, ok := o.fanned[d.FireID]; ok && fp == pl && d.Trigger == codecs.TriggerBucket {
		// A repeat of what the open fan-out may have sent, sent by the
		// command before it changed the job (allowFanned).
	} else if d.Trigger != codecs.TriggerManual {
		def := o.defs[pl]
		switch {
		case def == nil && d.Trigger == codecs.TriggerSchedule:
			o.violate(d.JobID, "unknown payload", "%s carries a payload no put had: %s", d.FireID, pl)
		case def != nil && (!j.exists || j.inc != def.inc):
			o.violate(d.JobID, "fire after delete", "%s of incarnation %d dispatched after it was deleted", d.FireID, def.inc)
		case j.paused && (d.Trigger != codecs.TriggerSchedule || d.ScheduledAt.After(simLater(j.pausedAt, j.pauseOpen))):
			o.violate(d.JobID, "fire while paused", "%s dispatched while the job is paused (since %s)", d.FireID, simFmt(j.pausedAt))
		}
	}
	if d.Trigger == codecs.TriggerSchedule {
		if curT.IsZero() || d.ScheduledAt.After(curT) {
			o.violate(d.JobID, "fire before its time", "%s dispatched by an advance to %s", d.FireID, simFmt(curT))
		}
		if !early.IsZero() && d.ScheduledAt.After(early) {
			o.violate(d.JobID, "fire early", "%s dispatched at broker time %s (bound %s)", d.FireID, simFmt(d.FiredAt), simFmt(early))
		}
		if def := o.defs[pl]; def != nil && !def.sched.Next(d.ScheduledAt.Add(-time.Nanosecond)).Equal(d.ScheduledAt) {
			o.violate(d.JobID, "not in schedule", "%s is not a time of %s", d.FireID, def)
		}
	}
	if match == nil {
		o.violate(d.JobID, "unexpected fire", "%s (missed=%d, payload %s) is not owed", d.FireID, d.Missed, pl)
		return
	}
	// Earlier times of the same definition that may have gone out and did
	// not (late ones the advances planned, while a command's catch-up the
	// advances do not touch was still under way) can no longer go out: a
	// fire that carries misfires carries theirs too (seeds 2500034 and
	// 2800046 x 800: a fire_once update dispatching the owed times of
	// several queued advances as one fire).
	unsent := func() (extra int64, unbounded bool) {
		for _, e := range o.byPayload[pl] {
			if e == match || !simFireTime(e.fireID).Before(d.ScheduledAt) || slices.ContainsFunc(o.seen[e.fireID], func(s simSeen) bool { return s.payload == pl }) {
				continue
			}
			if e.missed < 0 {
				unbounded = true
			}
			extra += 1 + max(e.missed, 0) + e.slack
		}
		return extra, unbounded
	}
	if match.missed >= 0 && len(prev) == 0 && (d.Missed < match.missed || d.Missed > match.missed+match.slack) {
		if extra, unbounded := unsent(); d.Missed < match.missed || !unbounded && d.Missed > match.missed+match.slack+extra {
			o.violate(d.JobID, "misfire count", "%s carries missed=%d, want %d (up to %d more) (%s)", d.FireID, d.Missed, match.missed, match.slack+extra, match.why)
		}
	}
	for _, e := range o.expects[d.FireID] {
		if e.payload == pl {
			delete(o.pending[d.JobID], e)
		}
	}
}

// finish reports every must that was never dispatched.
func (o *simOracle) finish() {
	ids := make([]string, 0, len(o.pending))
	for id := range o.pending {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		es := make([]*simExpect, 0, len(o.pending[id]))
		for e := range o.pending[id] {
			es = append(es, e)
		}
		sort.Slice(es, func(a, b int) bool {
			if es[a].step != es[b].step {
				return es[a].step < es[b].step
			}
			return es[a].fireID < es[b].fireID
		})
		for _, e := range es {
			if !e.must {
				continue
			}
			o.step = e.step
			bug := map[string]string{"late": "1 late put", "big": "2 > 10,000 fires", "fuzzy": "3 put during an advance"}[e.tag]
			if j := o.jobs[id]; bug == "" && j.inc > 1 {
				bug = "4 delete+re-put"
			}
			if t := o.tainted[simIncKey(id, e.inc)]; t != "" {
				bug = t
			}
			o.violateBug(id, "missing fire", bug, "%s (payload %s) owed by %s never dispatched", e.fireID, e.payload, e.why)
		}
	}
}

// report is a readable account of the first violation and its job's history.
func (o *simOracle) report(seed int64, cfg string) string {
	if len(o.violations) == 0 {
		return ""
	}
	// The first violation that is not a known open finding, if any.
	vs := o.violations
	var open []simViolation
	for _, x := range vs {
		if !simKnownOpen[x.bug] {
			open = append(open, x)
		}
	}
	if len(open) > 0 {
		vs = open
	}
	v := slices.MinFunc(vs, func(a, b simViolation) int { return a.step - b.step })
	var b strings.Builder
	kinds := map[string]int{}
	for _, x := range o.violations {
		kinds[x.kind+" (bug "+x.bug+")"]++
	}
	fmt.Fprintf(&b, "seed %d (%s): %d violations %v\nfirst at op %d, job %s: %s: %s\n", seed, cfg, len(o.violations), kinds, v.step, v.job, v.kind, v.msg)
	for _, x := range o.violations {
		if x.bug == "" && x.step != v.step {
			fmt.Fprintf(&b, "first violation not attributed to issue 17's bugs: op %d, job %s: %s: %s\n", x.step, x.job, x.kind, x.msg)
			break
		}
	}
	fmt.Fprintf(&b, "replay: go test ./processors/scheduler -run TestSim -sim.seed=%d -v\nhistory of %s:\n", seed, v.job)
	if j := o.jobs[v.job]; j != nil {
		// Every line but dispatches of other fires, which are counted.
		var lines []string
		other, otherStep := 0, -1
		flush := func() {
			if other > 0 {
				lines = append(lines, fmt.Sprintf("op %6d  (%d dispatches of other fires)", otherStep, other))
			}
			other = 0
		}
		violations := 0
		for _, l := range j.trace {
			if strings.HasPrefix(l.text, "VIOLATION") {
				if violations++; violations > 3 {
					continue // the first ones say it
				}
			}
			if l.fire != "" && l.fire != v.fire {
				if l.step != otherStep {
					flush()
				}
				other, otherStep = other+1, l.step
				continue
			}
			flush()
			lines = append(lines, fmt.Sprintf("op %6d  %s", l.step, l.text))
		}
		flush()
		if len(lines) > 120 && !*simDebug {
			fmt.Fprintf(&b, "  ... %d earlier lines\n", len(lines)-120)
			lines = lines[len(lines)-120:]
		}
		for _, l := range lines {
			b.WriteString("  " + l + "\n")
		}
	}
	return b.String()
}

func simFmt(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("15:04:05.000")
}

func simEarlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func simLater(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
