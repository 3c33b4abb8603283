package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lovoo/goka"
	"github.com/lovoo/goka/storage"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/processors/clock"
	"github.com/chronos-scheduler/chronos/schedule"
	"github.com/chronos-scheduler/chronos/store"
	"github.com/chronos-scheduler/chronos/topology"
)

// A deterministic simulation of the scheduler group against an oracle
// (issue 17): seeded random histories of commands, advances, bucket
// triggers, lag between the topics, small chunks, rebalances, crashes
// between a callback's effects and its commit, producer errors and skewed
// clocks, run through the real callbacks on real Pebble stores (in memory),
// with a model of every topic. No broker, no goroutines, no wall clock: a
// seed replays the same history.
//
//	go test ./processors/scheduler -run TestSim                         # CI: 200 seeds x 300 ops (50 with -short, 10 with -race, 3 with both)
//	go test ./processors/scheduler -run TestSim -sim.seeds=2000 -sim.ops=600
//	go test ./processors/scheduler -run TestSim -sim.seed=17 -v         # replay one seed

var (
	simSeeds     = flag.Int("sim.seeds", 200, "simulation: number of seeds")
	simOps       = flag.Int("sim.ops", 300, "simulation: operations per seed")
	simFirst     = flag.Int64("sim.first", 1, "simulation: first seed")
	simSeed      = flag.Int64("sim.seed", 0, "simulation: replay this one seed (0: run -sim.seeds seeds)")
	simDebug     = flag.Bool("sim.debug", false, "simulation: log every delivery (with -sim.seed)")
	simCrashKeep = flag.Bool("sim.crashkeep", false, "simulation: a crashed instance may keep local writes its changelog never got")
	simStrict    = flag.Bool("sim.strict", false, "simulation: fail on the known open findings too")
	simAll       = flag.Bool("sim.all", false, "simulation: report every failing seed, not only the first")
	// simSmallChunks: 35 of seeds 1-400 x 800 failed with it until the
	// fixes of 2026-12-03; seed 15 still does (docs/reliability.md).
	simSmallChunks = flag.Bool("sim.smallchunks", true, "simulation: fan out in 1 KiB chunks for a third of the seeds")
	// simLateRedeliver: goka consumes each input topic on its own, so after
	// a crash commands may be applied before an advance (a trigger or its
	// continuation) that crashed is delivered again; by default the
	// simulation delivers it again first (bucket triggers always: the
	// oracle fixes a bucket's members when its trigger first arrives, and
	// their pass-start gap is open, docs/reliability.md).
	// TestSimLateRedeliver runs its own seeds with it; off by default for
	// TestSim so that the seeds it names keep their histories.
	simLateRedeliver = flag.Bool("sim.lateredeliver", false, "simulation: after a crashed advance or bucket fan-out (trigger or continuation), up to 2 pending commands of its partition are applied before it is delivered again")
	// simClockBound is how far ahead of the broker's time a fire may be
	// dispatched when the clock group drives the advances.
	simClockBound = flag.Duration("sim.clockbound", clock.DefaultMaxAhead, "simulation: allowed lead of scheduled_at over broker time")
)

// TestSimCrashKeep runs seeded histories in which a crashed instance may
// restart on a store that holds writes its changelog never got (goka writes
// the local store first; Pebble's WAL survives a process crash), as
// -sim.crashkeep does for TestSim. On the code before commands' repeats
// wrote their record again (adversary 17), seeds 500001-500040 x 800
// failed 5 of 40 (500001, 500021, 500026, 500032, 500034).
func TestSimCrashKeep(t *testing.T) {
	t.Parallel()
	n := simExtraSeeds()
	for seed := int64(500001); seed < 500001+int64(n); seed++ {
		simCrashKeepSeed(t, seed, 800)
	}
	// Regression: a job cut at its per-advance bound (more than 10,000
	// fires owed), then a crash, the store restored from the changelog: the
	// continuation skipped its entry, derived behind the cursor, and the
	// pass completed past its remaining 1,396 fires (restoreCuts).
	simCrashKeepSeed(t, 700077, 1500)
	if !(simRace && testing.Short()) { // about 3 minutes under -race
		// Oracle regression: a late resume of a job that had taken over a
		// paused interval (a late put on the paused job) catches up from
		// where the pause found it, far behind the advances the oracle
		// counted; a late pause, a delete and a re-put then owe the times
		// after the last fire the catch-up sent (simOracle.resume). The
		// oracle had counted three such fires of the re-put as not owed.
		simCrashKeepSeedChunks(t, 8200176, 1500, true)
		// A bucket fan-out's end kept by the store and lost by the
		// changelog (a restart on the same data dir): the fan-out stayed
		// open in the changelog, and a command on a new owner sent a
		// member's fire with a changed payload (adversary round 31; these
		// failed on 0ebb88b, before a chunk's end was written durably and
		// written again when its trigger is delivered again).
		for _, seed := range []int64{950217, 950227, 950471, 950553} {
			simCrashKeepSeedChunks(t, seed, 800, true)
		}
		// Oracle regression: a late pause of a job catching up behind the
		// advances it counted (one late fire an advance) leaves it handled
		// where its own fires got, not through the shard's time; a put,
		// a pause, a delete and a re-put then owe the times after that
		// (simOracle.pause, unsent; the oracle had read three of them as
		// not owed).
		simCrashKeepSeedChunks(t, 950377, 800, true)
	}
}

// TestSimLateRedeliver runs seeded histories in which commands may be
// applied before an advance that crashed is delivered again
// (-sim.lateredeliver), as goka may: a crash after a pass's first fires and
// before its shard record reached the changelog, then a put (or a pause
// and a put) applied first, sent those fire_ids again with the put's
// payload until the pass's callbacks wrote that they may send fires
// (PassOpen) before sending them (2026-12-04: 11 of seeds 1-100 x 800
// failed, seed 22 by this break; 30042 x 3000 is the mid-pass crash of
// docs/reliability.md). A crashed bucket fan-out's chunk is overtaken the
// same way (seeds 100 and 193 x 800 sent a member's fire with two payloads
// until a chunk wrote that it was open, FanoutRef.Open, before its fires).
func TestSimLateRedeliver(t *testing.T) {
	t.Parallel()
	n := simExtraSeeds()
	run := func(seed int64, ops int) {
		// Chunks drawn as TestSim draws them (-sim.smallchunks, its
		// default), where these seeds were found.
		w := newSimWorldChunks(t, seed, ops, true)
		w.cfg.lateRedeliver = true
		w.run()
		for _, v := range w.oracle.violations {
			if !simKnownOpen[v.bug] {
				t.Error(w.oracle.report(seed, w.cfg.String()))
				break
			}
		}
	}
	for seed := int64(600001); seed < 600001+int64(n); seed++ {
		run(seed, 800)
	}
	run(22, 800)
	run(100, 800) // a bucket fan-out's lost chunk: two payloads before FanoutRef.Open
	if !simRace {
		run(30042, 3000)
		run(193, 800) // the same
		// Oracle regressions: a delete overtaking a crashed advance whose
		// start was not durable (575: the scheduler has the deleted job
		// handled through the restored watermark, and a re-put owes the
		// times after it).
		run(575, 800)
		run(30218, 3000)
	}
}

// simExtraSeeds is how many seeds TestSimCrashKeep and TestSimLateRedeliver
// run: 40, scaled down where time matters (the race detector slows the
// simulation about 30 times).
func simExtraSeeds() int {
	switch {
	case simRace && testing.Short():
		return 1
	case simRace:
		return 4
	case testing.Short():
		return 10
	}
	return 40
}

func simCrashKeepSeed(t *testing.T, seed int64, ops int) {
	simCrashKeepSeedChunks(t, seed, ops, false)
}

// simCrashKeepSeedChunks is simCrashKeepSeed with small chunks drawn as
// TestSim draws them (-sim.smallchunks, its default).
func simCrashKeepSeedChunks(t *testing.T, seed int64, ops int, small bool) {
	w := newSimWorldChunks(t, seed, ops, small)
	w.cfg.crashKeep = true
	w.run()
	for _, v := range w.oracle.violations {
		if !simKnownOpen[v.bug] {
			t.Error(w.oracle.report(seed, w.cfg.String()))
			break
		}
	}
}

func TestSim(t *testing.T) {
	t.Parallel()
	seeds := []int64{}
	if *simSeed != 0 {
		seeds = append(seeds, *simSeed)
	} else {
		n := *simSeeds
		if !simFlagSet("sim.seeds") {
			// Scaled down where time matters: the race detector slows the
			// simulation about 30 times.
			switch {
			case simRace && testing.Short():
				n = 3
			case simRace:
				n = 10
			case testing.Short():
				n = 50
			}
		}
		for i := range n {
			seeds = append(seeds, *simFirst+int64(i))
		}
	}
	var total simTotals
	failed := 0
	bugSeeds := map[string][]int64{}
	for _, seed := range seeds {
		w := newSimWorldChunks(t, seed, *simOps, *simSmallChunks)
		w.run()
		total.add(w)
		seen := map[string]bool{}
		for _, v := range w.oracle.violations {
			if b := "bug " + v.bug; !seen[b] {
				seen[b] = true
				bugSeeds[b] = append(bugSeeds[b], seed)
			}
		}
		failing := 0
		for _, v := range w.oracle.violations {
			if *simStrict || !simKnownOpen[v.bug] {
				failing++
			}
		}
		switch rep := w.oracle.report(seed, w.cfg.String()); {
		case failing > 0:
			failed++
			t.Error(rep)
			if !*simAll && *simSeed == 0 {
				break
			}
		case rep != "" && *simSeed != 0:
			t.Logf("known open findings only:\n%s", rep)
		case *simSeed != 0:
			t.Logf("seed %d (%s): no violation", seed, w.cfg)
		}
		if failed > 0 && !*simAll && *simSeed == 0 {
			break
		}
	}
	t.Logf("simulation: %d histories (%d with deferred indexing on recovery), %d operations, %d inputs delivered, %d dispatch events, %d crashes, %d rebalances, %d recoveries interrupted, %d due indexes compared with a rebuild; %d seeds failed, %d violations (known open findings included)",
		total.histories, total.deferred, total.ops, total.inputs, total.dispatches, total.crashes, total.rebalances, total.interrupted, total.derivedChecks, failed, total.violations)
	kinds := map[string][]string{}
	for _, n := range total.notes {
		k := "conditional commands applied by a crashed delivery, then rejected on redelivery"
		if strings.Contains(n, "paused interval") {
			k = "resumes of jobs paused while they owed fires (their paused interval may be dispatched, as docs/topics.md says)"
		}
		kinds[k] = append(kinds[k], n)
	}
	for k, ns := range kinds {
		t.Logf("%d %s, e.g. %s", len(ns), k, ns[0])
	}
	bugs := make([]string, 0, len(bugSeeds))
	for b := range bugSeeds {
		bugs = append(bugs, b)
	}
	sort.Strings(bugs)
	for _, b := range bugs {
		s := bugSeeds[b]
		t.Logf("%s: %d seeds, first %v", b, len(s), s[:min(len(s), 12)])
	}
}

// simRegressions are seeds that found a bug in the scheduler (or in the
// oracle's reading of docs/topics.md), each fixed in the commit its message
// names; they run in every test run, under -short and -race too, whatever
// -sim.first and -sim.seeds say.
var simRegressions = []struct {
	seed    int64
	ops     int
	what    string
	rebuild bool // with the rebuild after a command during an advance (rebuildRng)
	small   bool // with small chunks (1 KiB for a third of the seeds, newSimWorldChunks), as TestSim draws them
}{
	{33, 300, "a put on a paused job re-sent the pre-pause fires an advance had sent, with the new payload (record's stale Through)", false, false},
	{65, 300, "a put on a paused job re-sent the pre-pause fires an advance had sent, with the new payload (record's stale Through)", false, false},
	{507, 300, "a late re-put after deleting a paused job lost the times the paused job never sent (tombstone at the shard's time)", false, false},
	{355, 300, "an update of a job owing more than one plan's fires (10,000) gave the rest to the new definition (wrong payload, old fires lost)", false, false},
	{26, 1000, "a pass begun while another was under way skipped, after its cursor, entries an index rebuild (crash, wiped store) put back behind it; the watermark passed them", false, false},
	{55, 300, "a put applied between two continuations of an advance left its entry behind the cursor; the advance then wrote the watermark past it and the index rebuilt before the next advance dropped it (issue 17 bug 3)", true, false},
	{2820, 300, "oracle: a late pause applied after a late put's catch-up had sent every owed time up to the shard's time handed the job over before those times, so the update that followed was required to send them again with its payload (TestSimOracleLatePauseAfterCatchUp)", true, false},
	{4726, 300, "oracle: a pause applied while an advance under way had not reached the job sends the late time the job owes up to the pause's ts (fire_once on its own), which the advance's plan had counted as missed (TestSimOracleMidAdvancePauseSendsItsLateTime)", true, false},
	{5181, 300, "oracle: a restart in the first delivery of an advance that overtook one in progress re-counts as missed the times the first advance sent (its index moves were local); the count had been fixed before the restart (TestSimOracleRestartInOvertakingAdvance)", true, false},
	{7794, 800, "a settle of an old version arrived after a late pause on an empty store had handled the job only as far as its unsettled record said; a put then re-sent two fire_ids with its payload (sentRecord; the seed's history changed with the fix of 9077)", true, false},
	{9077, 800, "a bucket continuation handled twice (a crash kept it) fired a member again after an update changed its payload (the shard record names each fan-out; TestBucketContinuationTwiceFiresEachMemberOnce)", true, false},
	{8959, 800, "a late pause of a one-shot job whose last time an advance under way had sent (no due entry, its complete in flight) handled it only through the pause's ts; a put then re-sent that time with its payload (and, with advances waiting for the pass under way, a crash that kept the pass's shard record and lost its continuation stopped the partition until the advance delivered again ran the pass again)", true, false},
	{110079, 3000, "a pass begun while earlier ones were under way fired a job's catch-up; after they completed and a crash wiped the store, the derived entry lay after the later pass's cursor and a late pause then a put re-sent the catch-up with the put's payload (passes no longer overlap: ShardRecord.Queued)", true, false},
	{70043, 3000, "the start of a pass that had waited arrived after a fresh advance had begun a pass to a later T (taking the waiting one with it) and ran beside it from the start of the index; a crash that wiped the store between the two lost a fire behind the later pass's cursor (Scheduler.advance skips such a start)", true, false},
	{70163, 3000, "oracle: a job paused while advances waited for the pass under way, then deleted late and put again late: the deleted incarnation may be handled only where the first of those advances found it (simOracle.del, waitLow)", true, false},
	{400013, 3600, "oracle: an update of a one-shot job whose last time an advance in progress (or waiting) may have sent and completed: the new definition starts from where the old one stopped, or from its ts if the job completed", true, false},
	{160, 800, "oracle: an advance that waited for the pass under way never runs on its own; the misses its fire would have carried go with the pass that takes it over (simOracle.advance's carry)", true, false},
	{110033, 3000, "oracle: a late pause while advances wait for the pass under way may find the job handled only where the first of them found it, so a put after it owes the new definition's times from there (simOJob.waitLow)", true, false},
	{700096, 100, "a job cut at its per-advance bound (11,116 fires owed), then a crash that wiped the store: the advance delivered again continued from the cursor, behind which the job's entry was derived from its unsettled record, and completed past its last 1,116 fires (restoreCuts)", false, false},
	{4232, 300, "oracle: the known open finding \"re-put reuses a fire_id\" (a crash lost the deleted incarnation's handled time) was reported for its second violation as \"6 late update\" (TestSimOracleReuseLabelsItsIncarnation)", true, false},
	{15, 800, "oracle: a re-put after deleting a job of uncertain progress starts anywhere between the two marks; its own pause and delete carry that range to the next incarnation (simOJob.startLow)", true, true},
	{2500031, 800, "oracle: a pause stops a late resume's catch-up where it got (hours behind the advances the oracle had counted): the job is handled through the last fire it sent, and a re-put after a delete owes the times after that (simOJob.owedFrom)", true, true},
	{2500034, 800, "oracle: a fire_once update dispatched as one fire the owed times of several advances that had not sent theirs while a late put's catch-up was under way; the fire carries their misses too (simOracle.dispatched's unsent)", true, true},
	{2800046, 800, "oracle: the same as 2500034 with 3 partitions, crashes, rebalances and deferred indexing", true, true},
	{190, 800, "a resume written while advances were queued behind the pass under way owed since the last queued T; the pass to it fired the job, a crash lost its settle and wiped the store, and the entry derived from the record, behind the next pass's cursor, was taken for handled (restoredThrough)", true, true},
	{4100273, 280, "a late pause (ts 10:16:15.152) of an every-5s, grace-3s skip job sent 10:16:15 on time against its ts, which the advance to 10:16:19, waiting for the pass under way, had skipped as late: a command plans a time after the watermark against the first advance announced at or after it (passOf)", true, true},
	{4500006, 400, "oracle: a late pause consumed while six advances waited behind a long pass (a catch-up of hours, one fire a chunk) sent the fire_once times up to its ts coalesced against the first of them, as that advance's pass would plan them; the oracle had applied those advances on delivery and owed the times from where the last of them found the job (simOJob.fBefore, simOracle.owedFrom)", true, true},
}

func TestSimRegressions(t *testing.T) {
	t.Parallel()
	for _, r := range simRegressions {
		if simRace && testing.Short() && r.ops > 1000 {
			// Under -race -short only the shorter histories: the race
			// detector slows the one-goroutine simulation about 30 times
			// (all of them took 134 s under it, 20 s without, 2026-12-03),
			// and the long ones run in every run without -race.
			t.Logf("seed %d x %d: not under -race -short", r.seed, r.ops)
			continue
		}
		w := newSimWorldChunks(t, r.seed, r.ops, r.small)
		if r.small && w.cfg.chunkBytes == 0 {
			t.Fatalf("seed %d no longer draws small chunks", r.seed)
		}
		if !r.rebuild {
			w.rebuildRng = nil
		}
		w.run()
		failing := 0
		for _, v := range w.oracle.violations {
			if *simStrict || !simKnownOpen[v.bug] {
				failing++
			}
		}
		if failing > 0 {
			t.Errorf("regression seed %d (%s):\n%s", r.seed, r.what, w.oracle.report(r.seed, w.cfg.String()))
		}
	}
}

func simFlagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

type simTotals struct {
	histories, ops, inputs, dispatches, crashes, rebalances, violations int
	derivedChecks, deferred, interrupted                                int
	notes                                                               []string
}

func (t *simTotals) add(w *simWorld) {
	t.histories++
	t.ops += w.ops
	t.inputs += w.inputs
	t.dispatches += w.dispatches
	t.crashes += w.crashes
	t.rebalances += w.rebalances
	t.derivedChecks += w.derivedChecks
	if w.cfg.deferIndex {
		t.deferred++
	}
	t.interrupted += w.interrupted
	t.violations += len(w.oracle.violations)
	t.notes = append(t.notes, w.oracle.notes...)
}

// simConfig is the shape of one history, drawn from its seed.
type simConfig struct {
	partitions  int32
	instances   int
	ids         int
	chunk       int
	budget      time.Duration
	maxCatchUp  int
	clock       bool
	skewed      bool // one host's clock runs ahead (clock mode)
	crash       float64
	rebalance   float64
	produceFail float64
	wCmd, wTrig int  // delivery weights of the command and trigger topics (loop: 10)
	deferIndex  bool // the stores defer indexing on recovery (store.Options.DeferIndexOnRecovery)
	crashKeep   bool // a crashed instance may restart on a store holding writes its changelog never got
	// lateRedeliver: commands may overtake a crashed advance (-sim.lateredeliver)
	lateRedeliver bool
	chunkBytes    int // the fan-out's chunk bytes (0: the default; see newSimWorldChunks)
}

func (c simConfig) String() string {
	return fmt.Sprintf("partitions=%d ids=%d chunk=%d budget=%s catchup=%d clock=%v skewed=%v crash=%.2f rebalance=%.3f producefail=%.2f weights cmd:trig:loop=%d:%d:10 defer=%v crashkeep=%v chunkbytes=%d lateredeliver=%v",
		c.partitions, c.ids, c.chunk, c.budget, c.maxCatchUp, c.clock, c.skewed, c.crash, c.rebalance, c.produceFail, c.wCmd, c.wTrig, c.deferIndex, c.crashKeep, c.chunkBytes, c.lateRedeliver)
}

// simRecord is one record of a modelled topic partition.
type simRecord struct {
	Key    string
	Value  []byte // nil: a tombstone (changelog)
	TS     time.Time
	Offset int64
}

// simCmd is what the harness knows about a command it sent.
type simCmd struct {
	op      string
	def     *simDef
	trigger string
	payload []byte
	ifv     *simRead // if_version: what the client read
	bad     bool     // invalid: must be rejected
}

// simRead is a client's read of a job before an if_version command.
type simRead struct {
	version uint64
	inc     int // the oracle's incarnation then (0: none)
	puts    int
}

type simInstance struct {
	id    int
	fs    vfs.FS
	sched *Scheduler
	open  map[int32]storage.Storage
}

const (
	simTopicJobs = iota
	simTopicTriggers
	simTopicLoop
)

type simWorld struct {
	t      testing.TB
	seed   int64
	rng    *rand.Rand
	cfg    simConfig
	layout topology.Layout
	keys   []string
	maxOps int

	now   time.Time // broker time
	lastT time.Time // last advance announced (no clock group)
	logs  [3][][]simRecord
	next  [3][]int // committed position per topic and partition
	clog  [][]simRecord
	cmds  map[[2]int64]*simCmd

	insts []*simInstance
	owner []int

	clockCB    goka.ProcessCallback
	clockTable simMapTable
	skew       []time.Duration
	bigSkewAt  int

	oracle *simOracle
	// waiting: per partition, the chains of advances waiting for the pass
	// under way (noteWaiting), with their T.
	waiting map[int32]map[string]time.Time
	curT    time.Time // T of the advance being processed
	curP    int32
	inAdv   bool
	// held: dispatches of a crashed delivery of a command, checked once
	// the oracle has applied the command (at its commit).
	hold bool
	held [][]byte

	putN, trigN                                  int
	ops, inputs, dispatches, crashes, rebalances int
	derivedChecks                                int
	draining                                     bool
	attempt                                      int // the delivery of the input being processed (0: its first)
	// rebuildRng decides, apart from rng so the other draws of a seed stay
	// as they were, whether a partition whose advance just finished after
	// a command was applied during it moves to another instance with a
	// wiped store (an index rebuild before the next advance): the one
	// sequence that loses an entry a command left behind the advance's
	// cursor (issue 17 bug 3). cmdInAdvance marks those partitions. nil:
	// never (the regression seeds found before it keep their histories).
	rebuildRng   *rand.Rand
	cmdInAdvance map[int32]bool
	// crashKept marks the partitions whose owner restarted, after a crash,
	// on a store that kept local index moves whose loopbacks were lost
	// (checkDerived skips them until the partition moves).
	crashKept map[int32]bool
	// recRng draws, apart from the history's rng (so a seed's history is
	// the same either way), whether the stores defer indexing on recovery
	// and how goka's recovery of a store is interrupted (openStore).
	recRng      *rand.Rand
	interrupted int
}

var simT0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func newSimWorld(t testing.TB, seed int64, ops int) *simWorld {
	return newSimWorldChunks(t, seed, ops, false)
}

// newSimWorldChunks is newSimWorld; with smallChunks, a third of the seeds
// (drawn apart from the other draws, so a seed's history is otherwise the
// same) fan out in chunks of 1 KiB of events: a job's plan then stops
// after a few fires (the same cut as the 10,000-fire bound, cheaply) and
// a pass cuts many jobs short, past the 64 its shard record names
// (adversary round 24b: at the default 8 MiB the simulation cut a job
// only at 10,000 fires). TestSim draws it with -sim.smallchunks; the
// regression seeds keep the histories they were found with.
func newSimWorldChunks(t testing.TB, seed int64, ops int, smallChunks bool) *simWorld {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	pick := func(xs ...int) int { return xs[rng.IntN(len(xs))] }
	cfg := simConfig{
		partitions:  int32(pick(1, 1, 2, 3)),
		instances:   pick(2, 3),
		ids:         pick(3, 5, 8, 12),
		chunk:       pick(1, 2, 3, 7, 25000),
		budget:      []time.Duration{time.Nanosecond, time.Hour}[rng.IntN(2)],
		maxCatchUp:  pick(1, 3, 100),
		clock:       rng.IntN(3) == 0,
		crash:       []float64{0, 0.02, 0.08}[rng.IntN(3)],
		rebalance:   []float64{0, 0.02, 0.06}[rng.IntN(3)],
		produceFail: []float64{0, 0, 0.03}[rng.IntN(3)],
		wCmd:        pick(1, 10, 30),
		wTrig:       pick(1, 10, 30),
	}
	cfg.skewed = cfg.clock && rng.IntN(2) == 0
	w := &simWorld{t: t, seed: seed, rng: rng, cfg: cfg, maxOps: ops,
		rebuildRng: rand.New(rand.NewPCG(uint64(seed), 0x4eb1d)), recRng: rand.New(rand.NewPCG(uint64(seed), 0xdefe4)), cmdInAdvance: map[int32]bool{}, crashKept: map[int32]bool{}, now: simT0.Add(time.Duration(rng.IntN(3600)) * time.Second),
		cmds: map[[2]int64]*simCmd{}, clockTable: simMapTable{}}
	w.layout = topology.Layout{Names: topology.Names{Prefix: "sim."}, Partitions: cfg.partitions, Replication: 1}
	keys, err := topology.ShardKeys(cfg.partitions)
	if err != nil {
		t.Fatal(err)
	}
	w.keys = keys
	for k := range w.logs {
		w.logs[k] = make([][]simRecord, cfg.partitions)
		w.next[k] = make([]int, cfg.partitions)
	}
	w.clog = make([][]simRecord, cfg.partitions)
	w.oracle = newSimOracle(cfg.partitions, cfg.maxCatchUp)
	cfg.deferIndex = w.recRng.IntN(2) == 0
	cfg.crashKeep = *simCrashKeep
	cfg.lateRedeliver = *simLateRedeliver
	if smallChunks && rand.New(rand.NewPCG(uint64(seed), 0xc4b1)).IntN(3) == 0 {
		cfg.chunkBytes = 1 << 10
	}
	w.cfg = cfg
	for i := range cfg.instances {
		fs := vfs.NewMem()
		s, err := New(Config{Layout: w.layout, DataDir: "/data", Store: store.Options{FS: fs, DeferIndexOnRecovery: cfg.deferIndex, RecoveryL0CompactionThreshold: 16}, ChunkSize: cfg.chunk,
			ChunkBudget: cfg.budget, ChunkBytes: cfg.chunkBytes, MaxCatchUp: cfg.maxCatchUp, Producer: simProducer{w}, Now: func() time.Time { return w.now }, Durable: simDurable,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		w.insts = append(w.insts, &simInstance{id: i, fs: fs, sched: s, open: map[int32]storage.Storage{}})
		w.skew = append(w.skew, 0)
	}
	if cfg.skewed {
		w.skew[rng.IntN(cfg.instances)] = []time.Duration{2 * time.Second, 30 * time.Second}[rng.IntN(2)]
		w.bigSkewAt = rng.IntN(ops + 1) // one tick from a host an hour ahead
	} else {
		w.bigSkewAt = -1
	}
	if cfg.clock {
		c, err := clock.New(clock.Config{Layout: w.layout, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		w.clockCB = simCallback(c.Graph(), string(w.layout.Clock()))
	}
	for p := range cfg.partitions {
		w.owner = append(w.owner, int(p)%cfg.instances)
		w.openStore(w.insts[w.owner[p]], p)
	}
	return w
}

// simCallback is the callback a group graph runs for an input topic (goka
// does not export it; the clock's is unexported in its package).
func simCallback(g *goka.GroupGraph, topic string) goka.ProcessCallback {
	f := reflect.ValueOf(g).Elem().FieldByName("callbacks")
	m := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(map[string]goka.ProcessCallback)
	return m[topic]
}

func (w *simWorld) tableTopic() string { return string(w.layout.SchedulerTable()) }

// openStore opens partition p's store on inst and recovers it from the
// changelog after its stored offset, as goka does. Drawn from recRng, a
// recovery may first be interrupted the ways goka interrupts one (a
// rebalance during it): the store is closed after part of the changelog,
// before MarkRecovered, or after a MarkRecovered of the partial table
// (goka's markRecovered returns on a cancelled context while
// MarkRecovered runs; the partition processor then closes the table),
// and a new store on the same files recovers the rest.
func (w *simWorld) openStore(inst *simInstance, p int32) {
	for w.recRng.IntN(4) == 0 {
		st, done := w.openAndRecover(inst, p, w.recRng.IntN(8))
		if done {
			inst.open[p] = st // nothing was left to recover
			return
		}
		if w.recRng.IntN(2) == 0 {
			if err := st.MarkRecovered(); err != nil {
				w.t.Fatal(err)
			}
		}
		if err := st.Close(); err != nil {
			w.t.Fatalf("seed %d: closing store %d mid-recovery: %v", w.seed, p, err)
		}
		w.interrupted++
	}
	inst.open[p], _ = w.openAndRecover(inst, p, -1)
}

// openAndRecover opens partition p's store on inst and applies up to n
// changelog records after its stored offset (n < 0: all). If it applied
// them all it marks the store recovered, as goka does, and reports done;
// otherwise the store is left recovering.
func (w *simWorld) openAndRecover(inst *simInstance, p int32, n int) (st storage.Storage, done bool) {
	st, err := inst.sched.StorageBuilder()(w.tableTopic(), p)
	if err != nil {
		w.t.Fatal(err)
	}
	if err := st.Open(); err != nil {
		w.t.Fatalf("seed %d: opening store %d on instance %d: %v", w.seed, p, inst.id, err)
	}
	off, err := st.GetOffset(-1)
	if err != nil {
		w.t.Fatal(err)
	}
	for i := int(off) + 1; i < len(w.clog[p]); i++ {
		if n == 0 {
			return st, false
		}
		n--
		r := w.clog[p][i]
		if r.Value == nil {
			err = st.Delete(r.Key)
		} else {
			err = st.Set(r.Key, r.Value)
		}
		if err == nil {
			err = st.SetOffset(r.Offset)
		}
		if err != nil {
			w.t.Fatalf("seed %d: recovering store %d: %v", w.seed, p, err)
		}
	}
	if err := st.MarkRecovered(); err != nil {
		w.t.Fatal(err)
	}
	return st, true
}

func (w *simWorld) closeStore(inst *simInstance, p int32) {
	if st := inst.open[p]; st != nil {
		if err := st.Close(); err != nil {
			w.t.Fatalf("seed %d: closing store %d: %v", w.seed, p, err)
		}
		delete(inst.open, p)
	}
}

func (w *simWorld) wipe(inst *simInstance, p int32) {
	dir := filepath.Join("/data", w.tableTopic(), strconv.Itoa(int(p)))
	if err := inst.fs.RemoveAll(dir); err != nil {
		w.t.Fatal(err)
	}
}

func (w *simWorld) close() {
	for _, inst := range w.insts {
		for p := range inst.open {
			w.closeStore(inst, p)
		}
	}
}

func (w *simWorld) partitionOf(key string) int32 { return topology.Partition(key, w.cfg.partitions) }

func (w *simWorld) appendRec(topic int, p int32, key string, value []byte) int64 {
	off := int64(len(w.logs[topic][p]))
	w.logs[topic][p] = append(w.logs[topic][p], simRecord{Key: key, Value: value, TS: w.now, Offset: off})
	return off
}

func (w *simWorld) run() {
	defer w.close()
	for op := 0; op < w.maxOps; op++ {
		w.oracle.step = op
		w.ops++
		switch r := w.rng.IntN(100); {
		case r < 28:
			w.command()
		case r < 42:
			w.passTime()
		case r < 54:
			w.tick(op)
		case r < 57:
			w.bucketTrigger()
		case r < 58:
			if w.rng.Float64() < w.cfg.rebalance*30 {
				w.rebalanceOne()
			}
		default:
			p := int32(w.rng.IntN(int(w.cfg.partitions)))
			for range 1 + w.rng.IntN(3) {
				w.deliver(p)
			}
		}
	}
	// Drain: no more faults; every input is consumed.
	w.draining = true
	w.oracle.step = w.maxOps
	for p := range w.cfg.partitions {
		for i := 0; w.deliver(p); i++ {
			if i > 1_000_000 {
				w.oracle.violate("", "no progress", "partition %d never drains", p)
				break
			}
		}
	}
	w.oracle.finish()
}

func (w *simWorld) passTime() {
	d := time.Duration(200+w.rng.IntN(2800)) * time.Millisecond
	switch r := w.rng.IntN(1000); {
	case r < 5:
		d = 3*time.Hour + time.Duration(w.rng.IntN(600))*time.Second
	case r < 40:
		d = time.Duration(60+w.rng.IntN(1800)) * time.Second
	}
	w.now = w.now.Add(d)
}

// tick announces time: a tick to the clock group, or (without it) an
// advance to the broker's time on every shard.
func (w *simWorld) tick(op int) {
	if !w.cfg.clock {
		T := w.now.Truncate(time.Second)
		if !T.After(w.lastT) {
			return
		}
		w.lastT = T
		v := codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: T})
		for p := range w.cfg.partitions {
			w.appendRec(simTopicTriggers, p, w.keys[p], v)
		}
		return
	}
	host := w.rng.IntN(w.cfg.instances)
	ht := w.now.Add(w.skew[host])
	if op == w.bigSkewAt {
		ht = w.now.Add(time.Hour)
	}
	ctx := &simCtx{topic: w.layout.Clock(), group: w.layout.ClockGroup(), key: "clock", ts: w.now, table: w.clockTable, ctx: context.Background()}
	if err := ctx.run(w.clockCB, codecs.EncodeInternal(codecs.Tick{Time: ht, Instance: strconv.Itoa(host)})); err != nil {
		w.oracle.violate("", "clock failed", "%v", err)
		return
	}
	for _, o := range ctx.outs {
		if o.Kind == simOutEmit && o.Topic == string(w.layout.ShardTriggers()) {
			w.appendRec(simTopicTriggers, w.partitionOfShard(o.Key), o.Key, o.Value)
		}
	}
}

func (w *simWorld) partitionOfShard(key string) int32 {
	for i, k := range w.keys {
		if k == key {
			return int32(i)
		}
	}
	w.t.Fatalf("unknown shard key %q", key)
	return -1
}

func (w *simWorld) bucketTrigger() {
	w.trigN++
	tr := codecs.ShardTrigger{Kind: codecs.KindBucket, T: w.now, Bucket: []string{"b1", "b2"}[w.rng.IntN(2)], TriggerID: "t" + strconv.Itoa(w.trigN)}
	if w.rng.IntN(4) == 0 {
		tr.Payload = json.RawMessage(fmt.Sprintf(`{"bt":%d}`, w.trigN))
	}
	v := codecs.EncodeInternal(tr)
	for p := range w.cfg.partitions {
		w.appendRec(simTopicTriggers, p, w.keys[p], v)
	}
}

var simEvery = []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute}

// newDef draws a job definition.
func (w *simWorld) newDef(id string) (*simDef, codecs.JobDef) {
	w.putN++
	d := &simDef{id: id, payload: fmt.Sprintf(`{"j":%q,"put":%d}`, id, w.putN)}
	jd := codecs.JobDef{Payload: json.RawMessage(d.payload)}
	switch r := w.rng.IntN(10); {
	case r < 6:
		d.spec.Every = simEvery[w.rng.IntN(len(simEvery))]
		jd.Every = d.spec.Every.String()
	case r < 8:
		d.spec.Cron = []string{"*/7 * * * * *", "0 * * * * *", "*/15 * * * * *"}[w.rng.IntN(3)]
		jd.Cron = d.spec.Cron
	default:
		d.spec.At = w.now.Add(time.Duration(w.rng.IntN(240)-60) * time.Second).Truncate(time.Second)
		jd.At = d.spec.At.Format(time.RFC3339)
	}
	d.policy = []string{codecs.MisfireFireOnce, codecs.MisfireSkip, codecs.MisfireFireAll}[w.rng.IntN(3)]
	jd.MisfirePolicy = d.policy
	d.grace = 7 * 24 * time.Hour
	if w.rng.IntN(4) == 0 {
		d.grace = []time.Duration{0, 3 * time.Second, 20 * time.Second, 5 * time.Minute}[w.rng.IntN(4)]
	}
	jd.MisfireGrace = d.grace.String()
	if w.rng.IntN(2) == 0 {
		d.bucket = []string{"b1", "b2"}[w.rng.IntN(2)]
		jd.Bucket = d.bucket
	}
	sched, err := schedule.Parse(d.spec)
	if err != nil {
		w.t.Fatalf("seed %d: %v", w.seed, err)
	}
	d.sched = sched
	return d, jd
}

// command sends one client command to chronos-jobs.
func (w *simWorld) command() {
	id := "j" + strconv.Itoa(w.rng.IntN(w.cfg.ids))
	p := w.partitionOf(id)
	c := &simCmd{}
	m := codecs.CommandMsg{ID: id}
	switch r := w.rng.IntN(100); {
	case r < 38:
		c.op = codecs.OpPut
	case r < 50:
		c.op = codecs.OpDelete
	case r < 62:
		c.op = codecs.OpPause
	case r < 74:
		c.op = codecs.OpResume
	case r < 84:
		c.op = codecs.OpFire
	case r < 97:
		c.op = []string{codecs.OpPut, codecs.OpDelete, codecs.OpPause}[w.rng.IntN(3)]
		c.ifv = w.read(id, p)
		v := c.ifv.version
		m.IfVersion = &v
	default:
		c.bad = true
	}
	m.Op = c.op
	switch c.op {
	case codecs.OpPut:
		d, jd := w.newDef(id)
		c.def, m.Job = d, &jd
	case codecs.OpFire:
		w.trigN++
		c.trigger = "m" + strconv.Itoa(w.trigN)
		m.TriggerID = c.trigger
		if w.rng.IntN(3) == 0 {
			c.payload = []byte(fmt.Sprintf(`{"manual":%d}`, w.trigN))
			m.Payload = c.payload
		}
	}
	var v []byte
	if c.bad {
		v = []byte([]string{`{"v":1,"op":"put","job":{"every":"-1s"}}`, `{"v":1,"op":"explode"}`, `not json`, `{"v":9,"op":"delete"}`}[w.rng.IntN(4)])
	} else {
		var err error
		if v, err = codecs.EncodeCommand(m); err != nil {
			w.t.Fatal(err)
		}
	}
	off := w.appendRec(simTopicJobs, p, id, v)
	w.cmds[[2]int64{int64(p), off}] = c
	what := c.op
	if c.bad {
		what = "invalid command " + string(v)
	}
	if c.ifv != nil {
		what += fmt.Sprintf(" if_version=%d (read at incarnation %d)", c.ifv.version, c.ifv.inc)
	}
	if c.def != nil {
		what += " " + c.def.String()
	}
	w.oracle.job(id, p)
	w.oracle.tracef(id, "sent %s at %s (offset %d)", what, simFmt(w.now), off)
}

// read is a client's GET of a job from its owner's table.
func (w *simWorld) read(id string, p int32) *simRead {
	r := &simRead{}
	st := w.insts[w.owner[p]].open[p]
	b, err := st.Get(id)
	if err != nil {
		w.t.Fatal(err)
	}
	if b != nil {
		rec, err := codecs.DecodeJobRecord(b)
		if err != nil {
			w.t.Fatalf("seed %d: job %s: %v", w.seed, id, err)
		}
		r.version = rec.Version
	}
	if j := w.oracle.jobs[id]; j != nil && j.exists {
		r.inc, r.puts = j.inc, j.puts
	}
	return r
}

func (w *simWorld) rebalanceOne() {
	if w.cfg.instances < 2 {
		return
	}
	p := int32(w.rng.IntN(int(w.cfg.partitions)))
	w.rebalance(p, w.rng, false)
}

// rebalance moves partition p to another instance chosen with rng, with a
// wiped store if wipe or by chance.
func (w *simWorld) rebalance(p int32, rng *rand.Rand, wipe bool) {
	from := w.owner[p]
	to := (from + 1 + rng.IntN(w.cfg.instances-1)) % w.cfg.instances
	w.closeStore(w.insts[from], p)
	wiped := rng.IntN(3) == 0 || wipe
	if wiped {
		w.wipe(w.insts[to], p)
	}
	w.openStore(w.insts[to], p)
	w.crashKept[p] = false // another store (a crashed one keeps its writes only on its own instance)
	w.owner[p] = to
	w.oracle.moved(p)
	w.rebalances++
	w.traceP(p, "rebalance: partition %d from instance %d to %d (wiped store: %v)", p, from, to, wiped)
}

// traceP writes a line into the history of every job of partition p.
func (w *simWorld) traceP(p int32, format string, args ...any) {
	for _, id := range w.oracle.sortedJobs(p) {
		w.oracle.tracef(id, format, args...)
	}
}

// deliver hands the next input of one of p's topics to its owner; false
// when every topic of p is consumed.
func (w *simWorld) deliver(p int32) bool {
	weights := [3]int{w.cfg.wCmd, w.cfg.wTrig, 10}
	total := 0
	for k := range weights {
		if w.next[k][p] >= len(w.logs[k][p]) {
			weights[k] = 0
		}
		total += weights[k]
	}
	if total == 0 {
		w.checkDerived(p)
		return false
	}
	r := w.rng.IntN(total)
	topic := 0
	for r >= weights[topic] {
		r -= weights[topic]
		topic++
	}
	rec := w.logs[topic][p][w.next[topic][p]]
	during := w.advancing(p)
	w.process(p, topic, rec)
	w.next[topic][p]++
	w.inputs++
	if topic == simTopicJobs && during {
		w.cmdInAdvance[p] = true
	}
	if w.cmdInAdvance[p] && !w.advancing(p) {
		delete(w.cmdInAdvance, p)
		if w.rebuildRng != nil && !w.draining && w.cfg.instances > 1 && w.rebuildRng.IntN(2) == 0 {
			w.rebalance(p, w.rebuildRng, true)
		}
	}
	return true
}

// advancing reports whether p's owner has an advance under way.
func (w *simWorld) advancing(p int32) bool {
	sh, err := w.insts[w.owner[p]].sched.shard(p)
	return err == nil && !sh.Advancing.IsZero()
}

// process runs one input until a delivery of it commits.
func (w *simWorld) process(p int32, topic int, rec simRecord) {
	var (
		cb     goka.ProcessCallback
		stream goka.Stream
		tr     codecs.ShardTrigger
		trOK   bool
	)
	switch topic {
	case simTopicJobs:
		stream = w.layout.Jobs()
	case simTopicTriggers:
		stream = w.layout.ShardTriggers()
	default:
		stream = w.layout.SchedulerLoop()
	}
	if topic != simTopicJobs {
		var err error
		tr, err = codecs.DecodeShardTrigger(rec.Value)
		trOK = err == nil
	}
	applied := false // a crashed delivery of this command reached the changelog
	// An input is stuck when 20 deliveries in a row fail without writing a
	// record of its key that no delivery before wrote (the progress a long
	// catch-up keeps across failed produces, commands.go handled), or after
	// 2,000 in all.
	stalled, written := 0, map[string]bool{}
	for attempt := 0; ; attempt++ {
		w.attempt = attempt
		inst := w.insts[w.owner[p]]
		switch topic {
		case simTopicJobs:
			cb = inst.sched.onCommand
		case simTopicTriggers:
			cb = inst.sched.onTrigger
		default:
			cb = inst.sched.onLoop
		}
		if attempt == 0 && topic == simTopicTriggers && trOK {
			switch tr.Kind {
			case codecs.KindAdvance:
				w.oracle.advance(p, tr.T)
			case codecs.KindBucket:
				w.oracle.bucket(p, tr)
			}
		}
		if topic == simTopicJobs {
			if attempt == 0 {
				w.oracle.fanned = map[string]string{}
			}
			w.allowFanned(p, rec.Key)
		}
		w.inAdv, w.curT, w.curP = trOK && tr.Kind == codecs.KindAdvance, time.Time{}, p
		if w.inAdv {
			w.curT = tr.T
		}
		ctx := &simCtx{topic: stream, group: w.layout.SchedulerGroup(), key: rec.Key, partition: p, offset: rec.Offset, ts: rec.TS,
			table: inst.open[p], ctx: context.Background()}
		// A command's dispatches (a manual fire, what a job owes before an
		// update or pause) are checked once the oracle has applied it.
		w.hold = topic == simTopicJobs
		err := ctx.run(cb, rec.Value)
		if *simDebug {
			w.t.Logf("op %d: inst %d %s/%d/%d key %s ts %s: %s -> err %v, %d outputs", w.oracle.step, inst.id, stream, p, rec.Offset, rec.Key, simFmt(rec.TS), rec.Value, err, len(ctx.outs))
			for _, o := range ctx.outs {
				if r, err := codecs.DecodeJobRecord(o.Value); err == nil {
					w.t.Logf("      out table %s: job v%d status %v notBefore %s through %s owedAt %s applied %d", o.Key, r.Version, r.Status, simFmt(r.NotBefore), simFmt(r.Through), simFmt(r.OwedAt), r.Applied)
					continue
				}
				if r, err := codecs.DecodeShardRecord(o.Value); err == nil && o.Kind == simOutTable {
					w.t.Logf("      out table %s: watermark %s advancing %s pass %s/%s cuts %v lost %v open %v queued %v", o.Key, simFmt(r.Watermark), simFmt(r.Advancing), simFmt(r.PassAt), r.PassKey, r.PassCuts, r.PassCutsLost, r.PassOpen, r.Queued)
					continue
				}
				w.t.Logf("      out %d %s %s %q", o.Kind, o.Topic, o.Key, o.Value)
			}
			if st := inst.sched.Store(p); st != nil {
				iu, _ := st.IndexedUpTo()
				line := "      store: indexedUpTo " + simFmt(iu)
				for _, id := range w.oracle.sortedJobs(p) {
					due, _ := st.DueOf(id)
					line += " " + id + "@" + simFmt(due)
				}
				w.t.Log(line)
			}
		}
		w.inAdv, w.curT = false, time.Time{}
		crash := err != nil || (!w.draining && attempt < 3 && w.rng.Float64() < w.cfg.crash)
		if !crash {
			if topic == simTopicJobs {
				w.applyCommand(p, rec, ctx.outs, applied)
				held := w.held
				w.hold, w.held = false, nil
				for _, v := range held {
					w.dispatch(v)
				}
			}
			if topic == simTopicLoop && trOK && (tr.Kind == codecs.KindAdvance || tr.Kind == codecs.KindBucket) {
				w.oracle.busy[p][simChain(tr)]--
			}
			w.noteWaiting(p, topic == simTopicTriggers && trOK && tr.Kind == codecs.KindAdvance, tr, ctx.outs)
			if topic == simTopicLoop && trOK && tr.Kind == codecs.KindComplete {
				w.checkCompleted(p, rec.Key)
			}
			if topic == simTopicLoop && trOK && tr.Kind == "settle" {
				w.checkSettled(p, rec.Key)
			}
			w.publish(p, ctx.outs, -1, 0)
			return
		}
		if stalled >= 20 || attempt >= 2000 {
			w.oracle.violate(rec.Key, "stuck", "input %s/%d/%d never commits: %v", stream, p, rec.Offset, err)
			w.publish(p, ctx.outs, -1, 0)
			held := w.held
			w.hold, w.held = false, nil
			for _, v := range held {
				w.dispatch(v)
			}
			return
		}
		// Crash between the callback's effects and its commit: each
		// destination got a prefix of its records; the instance restarts
		// with its store as it was (the WAL survived) or without it.
		w.crashes++
		keep := w.rng.IntN(len(ctx.outs) + 1)
		w.hold = topic == simTopicJobs
		before := len(w.clog[p])
		lost, wrote := w.publish(p, ctx.outs, keep, ctx.durable)
		stalled++
		for _, r := range w.clog[p][before:] {
			if r.Key == rec.Key && !written[string(r.Value)] {
				written[string(r.Value)], stalled = true, 0
			}
		}
		applied = applied || (wrote && topic == simTopicJobs && !simRejected(w.layout, ctx.outs))
		inst = w.insts[w.owner[p]]
		w.closeStore(inst, p)
		// The local store keeps every write of the callback (Pebble's WAL
		// survives a process crash); the changelog may not have them all.
		// Restarting on such a store is goka's own hazard (see -sim.crashkeep
		// and docs/reliability.md); by default the instance then restarts
		// from the changelog.
		wiped := w.rng.IntN(2) == 0 || (lost && !w.cfg.crashKeep)
		if wiped {
			w.wipe(inst, p)
		}
		w.openStore(inst, p)
		w.crashKept[p] = !wiped
		w.oracle.moved(p)
		if w.cfg.lateRedeliver && topic != simTopicJobs && trOK && (tr.Kind == codecs.KindAdvance || tr.Kind == codecs.KindBucket) && !w.draining {
			// The crashed advance is still in progress (delivered, not
			// committed) while the commands overtake it: what it owes a
			// job they change is as for an advance under way.
			chain := simChain(tr)
			w.oracle.busy[p][chain]++
			w.oracle.overtaking = time.Time{}
			if sh, err := inst.sched.shard(p); err == nil {
				// The restored store's time (its watermark, unless the
				// crashed callback's start was durable): where a command
				// now finds the shard.
				w.oracle.overtaking = shardNow(sh)
			}
			for n := w.rng.IntN(3); n > 0 && w.next[simTopicJobs][p] < len(w.logs[simTopicJobs][p]); n-- {
				w.traceP(p, "a pending command overtakes the crashed input")
				w.process(p, simTopicJobs, w.logs[simTopicJobs][p][w.next[simTopicJobs][p]])
				w.next[simTopicJobs][p]++
				w.inputs++
			}
			w.oracle.busy[p][chain]--
			w.oracle.overtaking = time.Time{}
		}
		cause := "injected"
		if err != nil {
			cause = err.Error()
		}
		w.traceP(p, "crash while processing %s/%d/%d (%s); each destination kept a prefix of the %d outputs (a table write lost: %v); restarted (wiped store: %v)", stream, p, rec.Offset, cause, len(ctx.outs), lost, wiped)
	}
}

// checkCompleted: a completion must never complete a job that still owes
// fires (a completion meant for an earlier incarnation, issue 17 bug 4).
func (w *simWorld) checkCompleted(p int32, id string) {
	b, err := w.insts[w.owner[p]].open[p].Get(id)
	if err != nil || b == nil {
		return
	}
	rec, err := codecs.DecodeJobRecord(b)
	if err != nil || rec.Status != codecs.StatusCompleted {
		return
	}
	j := w.oracle.jobs[id]
	if j == nil || !j.exists || j.paused {
		return
	}
	if next := j.def.sched.Next(simLater(j.F, j.fuzzy)); !next.IsZero() {
		w.oracle.violate(id, "completed early", "a completion marked incarnation %d completed; it still owes %s", j.inc, simFmt(next))
	}
}

// checkSettled: a settle records how far a late job has been handled; it
// must not claim the future (a later update or pause would then skip the
// new definition's fires up to it). Known open finding: the job is marked,
// and what goes wrong with it afterwards is attributed to this.
func (w *simWorld) checkSettled(p int32, id string) {
	b, err := w.insts[w.owner[p]].open[p].Get(id)
	if err != nil || b == nil {
		return
	}
	rec, err := codecs.DecodeJobRecord(b)
	if err != nil || rec.Status != codecs.StatusActive {
		return
	}
	o := w.oracle
	j := o.jobs[id]
	if due, err := w.insts[w.owner[p]].sched.Store(p).DueOf(id); err == nil && j != nil && j.exists && !j.paused && !due.IsZero() &&
		!due.After(j.F) && o.busyT(p).IsZero() && j.fuzzy.IsZero() && !j.recount {
		o.taint(id, simKnownStaleSettle, "a settle moved the job's due entry back to %s, before what the shard has handled (%s)", simFmt(due), simFmt(j.F))
	}
	if now := simLater(o.wm[p], o.busyT(p)); rec.Through.IsZero() && rec.NotBefore.After(now) && o.jobs[id] != nil && rec.NotBefore.After(o.jobs[id].lastPut) {
		o.taint(id, simKnownSettle, "a settle set the job's handled-through (not_before) to %s, after the shard's time %s", simFmt(rec.NotBefore), simFmt(now))
	}
}

// noteWaiting keeps the oracle's busy chains of advances that wait for
// the pass under way (Scheduler.advance: passes do not overlap): an
// advance to T from the trigger topic (fresh) whose callback neither
// completed a pass to T or later nor sent a continuation of one to T is
// in progress until the shard's watermark reaches T. Called after every
// committed callback on partition p, it releases those the watermark has
// reached.
func (w *simWorld) noteWaiting(p int32, fresh bool, tr codecs.ShardTrigger, outs []simOut) {
	if w.waiting == nil {
		w.waiting = map[int32]map[string]time.Time{}
	}
	if w.waiting[p] == nil {
		w.waiting[p] = map[string]time.Time{}
	}
	var shard codecs.ShardRecord
	if st := w.insts[w.owner[p]].open[p]; st != nil {
		if v, err := st.Get(w.keys[p]); err == nil {
			shard, _ = codecs.DecodeShardRecord(v)
		}
	}
	if fresh && tr.T.After(shard.Watermark) {
		continued := false
		for _, o := range outs {
			if c, err := codecs.DecodeShardTrigger(o.Value); o.Kind == simOutLoop && err == nil && c.Kind == codecs.KindAdvance && c.T.Equal(tr.T) {
				continued = true
			}
		}
		if chain := advChain(tr.T); !continued {
			if _, ok := w.waiting[p][chain]; !ok {
				w.waiting[p][chain] = tr.T
				w.oracle.busy[p][chain]++
			}
		}
	}
	for chain, t := range w.waiting[p] {
		if !t.After(shard.Watermark) {
			delete(w.waiting[p], chain)
			w.oracle.busy[p][chain]--
		}
	}
}

func simChain(tr codecs.ShardTrigger) string {
	if tr.Kind == codecs.KindBucket {
		return "b" + tr.TriggerID
	}
	return advChain(tr.T)
}

// allowFanned notes the bucket fires a command of job id may send before
// it changes the job (the scheduler's fannedOut): its fire of each fan-out
// the shard record says a crash left open over it, with its payload now,
// whatever the command then does (a pause, a delete), as docs/topics.md
// says.
func (w *simWorld) allowFanned(p int32, id string) {
	j := w.oracle.jobs[id]
	if j == nil || !j.exists || j.paused || j.def.bucket == "" {
		return
	}
	sh, err := w.insts[w.owner[p]].sched.shard(p)
	if err != nil {
		return
	}
	for _, f := range sh.Fanouts {
		if f.Bucket == j.def.bucket && f.Covers(id) {
			w.oracle.fanned[codecs.TriggeredFireID(id, f.TriggerID)] = j.def.payload
			w.oracle.tracef(id, "a crash left bucket fan-out %s open over it: the command may send its fire first", f.TriggerID)
		}
	}
}

// applyCommand tells the oracle about a committed command.
// applied is set when a crashed delivery's table write reached the
// changelog: the command is in effect whatever its redelivery decides.
func (w *simWorld) applyCommand(p int32, rec simRecord, outs []simOut, applied bool) {
	c := w.cmds[[2]int64{int64(p), rec.Offset}]
	rejected := simRejected(w.layout, outs)
	id := rec.Key
	o := w.oracle
	if rejected && applied && !c.bad {
		// Found by this simulation, not one of issue 17's six: a
		// conditional command is not idempotent under redelivery.
		o.notes = append(o.notes, fmt.Sprintf("seed %d op %d: %s %s at offset %d was applied by a delivery that crashed after its changelog write; its redelivery was rejected (%s)",
			w.seed, o.step, c.op, id, rec.Offset, simRejectReason(w.layout, outs)))
		o.tracef(id, "%s applied by a crashed delivery, then rejected by its redelivery", c.op)
		rejected = false
	}
	if c.bad {
		if !rejected {
			o.violate(id, "invalid accepted", "invalid command at offset %d was not rejected", rec.Offset)
		}
		o.tracef(id, "invalid command rejected")
		return
	}
	j := o.job(id, p)
	if c.ifv != nil {
		if rejected {
			o.tracef(id, "%s if_version=%d rejected", c.op, c.ifv.version)
			return
		}
		if c.ifv.inc != 0 && (!j.exists || j.inc != c.ifv.inc || j.puts != c.ifv.puts) || c.ifv.inc == 0 && j.exists {
			o.violate(id, "if_version", "%s if_version=%d read at incarnation %d (puts %d) accepted at incarnation %d (exists %v, puts %d)",
				c.op, c.ifv.version, c.ifv.inc, c.ifv.puts, j.inc, j.exists, j.puts)
		}
	}
	o.open[p] = time.Time{}
	if sh, err := w.insts[w.owner[p]].sched.shard(p); err == nil && (sh.PassOpen || sh.PassCutsLost) && sh.Advancing.After(sh.Watermark) {
		o.open[p] = sh.Advancing
	}
	switch c.op {
	case codecs.OpPut:
		if rejected {
			o.violate(id, "valid rejected", "put at offset %d rejected", rec.Offset)
			return
		}
		o.put(c.def, p, rec.TS)
	case codecs.OpDelete:
		o.del(id, p, rec.TS)
	case codecs.OpPause:
		o.pause(id, p, rec.TS)
	case codecs.OpResume:
		o.resume(id, p, rec.TS)
	case codecs.OpFire:
		o.fire(id, p, c.trigger, c.payload)
	}
}

func simRejected(l topology.Layout, outs []simOut) bool { return simRejectReason(l, outs) != "" }

func simRejectReason(l topology.Layout, outs []simOut) string {
	for _, o := range outs {
		if o.Kind == simOutEmit && o.Topic == string(l.Rejects()) {
			if r, err := codecs.DecodeReject(o.Value); err == nil {
				return r.Code + ": " + r.Reason
			}
			return "undecodable reject"
		}
	}
	return ""
}

// publish writes a callback's outputs to their topics: all of them
// (keep < 0), or after a crash, a prefix of each destination's, the table
// writes among the first durable outputs always (the callback waited for
// their acknowledgement: Config.Durable). lost reports whether a table
// write did not reach the changelog.
func (w *simWorld) publish(p int32, outs []simOut, keep, durable int) (lost, wrote bool) {
	kept := map[string]int{}
	limit := map[string]int{}
	acked := 0 // table writes among outs[:durable]
	for _, o := range outs[:durable] {
		if o.Kind == simOutTable {
			acked++
		}
	}
	for _, o := range outs {
		dest := fmt.Sprint(o.Kind, o.Topic)
		if _, ok := limit[dest]; !ok {
			limit[dest] = len(outs)
			if keep >= 0 {
				limit[dest] = w.rng.IntN(len(outs) + 1)
				if o.Kind == simOutTable {
					limit[dest] = max(limit[dest], acked)
				}
			}
		}
		if kept[dest] >= limit[dest] {
			lost = lost || o.Kind == simOutTable
			continue
		}
		kept[dest]++
		switch o.Kind {
		case simOutTable:
			wrote = true
			off := int64(len(w.clog[p]))
			w.clog[p] = append(w.clog[p], simRecord{Key: o.Key, Value: o.Value, TS: w.now, Offset: off})
			if err := w.insts[w.owner[p]].open[p].SetOffset(off); err != nil {
				w.t.Fatal(err)
			}
		case simOutLoop:
			if tr, err := codecs.DecodeShardTrigger(o.Value); err == nil && (tr.Kind == codecs.KindAdvance || tr.Kind == codecs.KindBucket) {
				w.oracle.busy[p][simChain(tr)]++
			}
			w.appendRec(simTopicLoop, p, o.Key, o.Value)
		case simOutEmit:
			switch o.Topic {
			case string(w.layout.Dispatch()):
				w.dispatch(o.Value)
			case string(w.layout.Rejects()):
			case string(w.layout.SchedulerBackfill()):
				// Backfill steps (none in these histories): the loopback's
				// handler runs them as the backfill topic's does.
				w.appendRec(simTopicLoop, p, o.Key, o.Value)
			default:
				w.oracle.violate(o.Key, "unknown topic", "emit to %s", o.Topic)
			}
		}
	}
	return lost, wrote
}

func (w *simWorld) dispatch(v []byte) {
	if w.hold {
		w.held = append(w.held, v)
		return
	}
	d, err := codecs.DecodeDispatch(v)
	if err != nil {
		w.oracle.violate("", "bad dispatch", "%v", err)
		return
	}
	w.dispatches++
	if *simDebug {
		w.t.Logf("       dispatch %s", d.FireID)
	}
	// No scheduled fire after the latest T announced to the shard (a
	// continuation of an older advance takes over a newer one in progress;
	// a command first dispatches what its job owes up to the shard's time).
	curT := simLater(w.curT, w.oracle.wm[w.curP])
	var early time.Time
	if w.cfg.clock {
		early = w.now.Add(*simClockBound)
	}
	w.oracle.dispatched(d, curT, early)
}

// simProducer is the dispatch topic: every event produced is acknowledged
// at once, or (a producer error) a prefix of them is and the call fails.
type simProducer struct{ w *simWorld }

var errSimProduce = errors.New("sim: injected producer error")

// simProduceFaults is how many deliveries of one input may see producer
// errors.
const simProduceFaults = 10

func (sp simProducer) ProduceSync(_ context.Context, topic string, msgs []Msg) error {
	w := sp.w
	if topic != string(w.layout.Dispatch()) {
		w.oracle.violate("", "unknown topic", "produce to %s", topic)
	}
	n, fail := len(msgs), false
	// A broker fault is transient: an input delivered simProduceFaults
	// times has its produces acknowledged from then on (a callback whose
	// budget holds hundreds of chunks otherwise never completes at a
	// constant 3% per produce; the scheduler now restarts such a callback
	// from its start rather than yield after a failed produce, which sent a
	// fire_id with two payloads: adversary round 25).
	if !w.draining && w.rng.Float64() < w.cfg.produceFail && w.attempt < simProduceFaults {
		n, fail = w.rng.IntN(len(msgs)+1), true
	}
	for _, m := range msgs[:n] {
		w.dispatch(m.Value)
	}
	if fail {
		return errSimProduce
	}
	return nil
}
