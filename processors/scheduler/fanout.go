package scheduler

import (
	"fmt"
	"sync"
	"time"

	"github.com/lovoo/goka"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/store"
)

// onTrigger handles a chronos-shard-triggers record.
func (s *Scheduler) onTrigger(ctx goka.Context, msg any) {
	s.guard(ctx)
	raw, _ := msg.([]byte)
	s.resolve(ctx, raw, "", s.shardTrigger(ctx, raw))
}

func (s *Scheduler) shardTrigger(ctx goka.Context, raw []byte) error {
	if want := s.shardKeys[ctx.Partition()]; ctx.Key() != want {
		return &codecs.Error{Code: codecs.CodeInvalidID, Reason: fmt.Sprintf("shard trigger key %q is not partition %d's key %q", ctx.Key(), ctx.Partition(), want)}
	}
	tr, err := s.decodeTrigger(raw)
	if err != nil {
		return invalid(err)
	}
	return s.trigger(ctx, tr)
}

// onLoop handles loopback messages: fan-out continuations (shard key) and
// completions of one-shot jobs (job key). Backfill steps have their own
// topic (onBackfill); one still on the loopback (sent before that topic
// existed) is run here the same way.
func (s *Scheduler) onLoop(ctx goka.Context, msg any) {
	s.guard(ctx)
	raw, _ := msg.([]byte)
	s.resolve(ctx, raw, "", s.loop(ctx, raw))
}

func (s *Scheduler) loop(ctx goka.Context, raw []byte) error {
	tr, err := s.decodeTrigger(raw)
	if err != nil {
		return invalid(err)
	}
	switch tr.Kind {
	case codecs.KindComplete:
		return s.complete(ctx, tr.Version)
	case codecs.KindPurge:
		return s.purge(ctx, tr.Version)
	case codecs.KindSettle:
		return s.settle(ctx, tr)
	case codecs.KindBackfill:
		return s.stepBackfill(ctx, tr)
	case codecs.KindBackfillJoin, codecs.KindBackfillLeave:
		return s.backfillRegistry(ctx, tr)
	case codecs.KindBulk:
		return s.bulkRun(ctx, tr)
	case codecs.KindBulkSkip:
		return s.bulkSkipped(ctx, tr)
	case codecs.KindBulkDone:
		return s.bulkDone(ctx, tr)
	}
	return s.trigger(ctx, tr)
}

// trigger runs an advance or a bucket trigger. Any other kind is invalid
// here (complete, settle and purge are loopbacks only).
func (s *Scheduler) trigger(ctx goka.Context, tr codecs.ShardTrigger) error {
	if ctx.Context().Err() != nil {
		// The partition is being revoked or the instance stops: goka may
		// still hand over buffered messages, and would commit them after
		// the callback returns. Leave them to the next owner.
		return errRevoked
	}
	switch tr.Kind {
	case codecs.KindAdvance:
		s.announced.note(tr.T)
		return s.advance(ctx, tr)
	case codecs.KindBucket:
		return s.fireBucket(ctx, tr)
	case codecs.KindBulk:
		return s.bulkEnqueue(ctx, tr)
	}
	return &codecs.Error{Code: codecs.CodeUnknownOp, Field: "kind", Reason: "unsupported shard trigger " + tr.Kind}
}

// advance fires every job of the partition due up to tr.T, one chunk per
// callback. Order matters for at-least-once: dispatch events are produced
// and acknowledged, then the chunk's index entries move, then (after the
// last chunk) the watermark is written.
//
// Passes do not overlap: an advance that arrives from the trigger topic
// while a pass is under way (its continuation on the loopback) waits for
// it in the shard record (queueAdvance), and when that pass completes it
// sends itself on the loopback the start of the pass to the earliest one
// waiting (startQueued): each advance has its own pass, in order, so a
// fire's lateness is measured against the first advance at or after it
// as if none had waited. A store that did not follow a pass (a new owner,
// a store rebuilt from the table) can then tell from the shard record how
// far it took every job (its cursor and cuts), which it cannot for passes
// that overlap (simulation seed 110079 x 3000 sent a fire with two
// payloads so). Two cases keep a pass moving without a second T beside
// it: the advance whose delivery began the pass (BegunBy), delivered again
// after a crash that kept the shard record and lost the continuation,
// runs the same pass again; and maxQueuedWaits advances waiting while the
// pass did not continue send its continuation again.
func (s *Scheduler) advance(ctx goka.Context, tr codecs.ShardTrigger) error {
	p := ctx.Partition()
	st := s.Store(p)
	if st == nil {
		return fmt.Errorf("scheduler: no open store for partition %d", p)
	}
	shard := s.decodeShard(ctx.Key(), valueBytes(ctx))
	rebuilt, err := s.rebuildIfBehind(st, shard.Watermark)
	if err != nil {
		return err
	}
	continuation := ctx.Topic() == s.cfg.Layout.SchedulerLoop()
	start := continuation && !tr.Started.IsZero() // the start of a pass that waited
	if continuation && !start && tr.AfterAt.IsZero() && tr.AfterKey == "" && tr.T.Before(shard.Advancing) {
		// A from-the-start continuation overtaken by a pass to a later T,
		// which began after it from the start of the index and handles
		// everything it would: run beside it, it would overlap that pass.
		s.keepShard(ctx)
		return nil
	}
	switch {
	case continuation && !start:
	case shard.Advancing.IsZero():
		// The earliest advance waiting, or this one, has its pass now.
		by := tr.T
		tr = codecs.ShardTrigger{Kind: codecs.KindAdvance, T: tr.T}
		tr.T, shard.Queued = nextPass(shard, tr.T)
		shard.QueuedWaits, shard.BegunBy = 0, by
		continuation = false
	case (tr.T.Equal(shard.Advancing) || tr.T.Equal(shard.BegunBy)) && shard.PassAt.IsZero() && shard.PassKey == "":
		// Delivered again, its pass having recorded only that it began
		// (beginDurably): the pass begins again, as the first delivery
		// did. What that one sent goes out again with the payload it had:
		// a command applied since sent its job's fires up to the pass's T
		// first (handled).
		tr = codecs.ShardTrigger{Kind: codecs.KindAdvance, T: shard.Advancing}
		shard.Advancing = time.Time{}
		continuation = false
	case tr.T.Equal(shard.Advancing) || tr.T.Equal(shard.BegunBy):
		// Delivered again: it began the pass under way, whose continuation
		// a crash may have lost. The pass continues from the cursor its
		// last yield recorded (from the start if none), as a continuation
		// sent again does: behind the cursor everything was handled, and an
		// index rebuilt since from the watermark (a replay after a crash
		// lowered IndexedUpTo) has those entries due again, which a run
		// from the start sent twice (adversary 21b, seed 77). As a
		// continuation, a store that did not follow the whole pass
		// re-derives them when it completes (rederive.go).
		tr = codecs.ShardTrigger{Kind: codecs.KindAdvance, T: shard.Advancing, AfterAt: shard.PassAt, AfterKey: shard.PassKey}
		continuation = true
	case start:
		// A pass began since it was sent (an advance from the trigger
		// topic took the earliest waiting one): that one starts the next
		// when it completes.
		s.keepShard(ctx)
		return nil
	default:
		queued, wait := queueAdvance(shard, tr.T)
		if !wait {
			// The pass has not continued for maxQueuedWaits advances: its
			// continuation is sent again, from the cursor its last yield
			// recorded (from the start if none). If the first was only
			// slow, the two continue the same pass, each after the other's
			// entries (their later cursor holds for both); a pass to
			// another T beside it would overlap (adversary 18b: 61
			// advances consumed ahead of a continuation, then a clean
			// rebalance, sent 61 fires again with a put's payload).
			queued.Queued, queued.QueuedWaits = withQueued(queued.Queued, tr.T), 0
			ctx.Loopback(ctx.Key(), codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: shard.Advancing, AfterAt: shard.PassAt, AfterKey: shard.PassKey}))
			s.cfg.Logger.Warn("the pass under way has not continued for many advances; sending its continuation again",
				"partition", p, "advancing", shard.Advancing, "after_at", shard.PassAt, "after_key", shard.PassKey, "waits", maxQueuedWaits)
		}
		s.setValue(ctx, codecs.EncodeShardRecord(queued))
		return nil
	}
	done, err := s.pass(ctx, st, tr, shard, continuation, rebuilt)
	if err == nil && done != nil {
		startQueued(ctx, *done)
	}
	return err
}

// keepShard writes the shard record again as it is, as the skip path does:
// a crash may have kept a local write its changelog never got.
func (s *Scheduler) keepShard(ctx goka.Context) {
	if v := valueBytes(ctx); len(v) > 0 {
		s.setValue(ctx, v)
	}
}

// startQueued sends the start of the pass to the earliest advance that
// waited for the pass just completed (done, the shard record it wrote),
// if any and no other pass is under way: on the loopback, so that the
// callback stays within its budget. Lost in a crash that kept done, the
// next advance from the trigger topic begins it.
func startQueued(ctx goka.Context, done codecs.ShardRecord) {
	if done.Advancing.IsZero() && len(done.Queued) > 0 {
		q := done.Queued[0]
		ctx.Loopback(ctx.Key(), codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: q, Started: q}))
	}
}

// pass runs one callback of the pass to tr.T on shard, the shard record as
// read (continuation: tr continues a pass from the loopback; rebuilt: the
// store's index was rebuilt from the table just now). It returns the
// shard record it wrote when the pass completed, nil when it yielded or
// had nothing to do.
func (s *Scheduler) pass(ctx goka.Context, st *store.Store, tr codecs.ShardTrigger, shard codecs.ShardRecord, continuation, rebuilt bool) (*codecs.ShardRecord, error) {
	p := ctx.Partition()
	cursor, fromStart, skip := passStart(tr, shard)
	if skip {
		// Already fired up to T; an owed entry waits for the next advance.
		// Delivered again after a crash, the advance may find here a
		// shard record its changelog never got (goka writes the local
		// store first): written again, a new owner restores it, not the
		// watermark before it (adversary 17b: the next owner's put re-sent
		// the advance's fires with its payload).
		s.keepShard(ctx)
		return nil, nil
	}
	// A continuation is any advance from the loopback: one of a pass begun
	// while another was under way has no cursor (fromStart), and read as
	// a fresh pass its store was never marked as following it from the
	// middle (adversary 15b, seed 20476 x 1500 operations).
	began := time.Now()
	inherited := s.passes.note(p, st, tr.T, continuation, rebuilt)
	if after, ok := s.passes.restoreFrom(p); ok && !shard.PassAt.IsZero() {
		next, done, err := s.restoreCuts(st, shard, after, began)
		if err != nil {
			return nil, err
		}
		s.passes.restoredTo(p, st, next, done)
		if !done {
			// Bounded work per callback here too: the pass continues,
			// from the same cursor, once every entry behind it is read.
			// The advances waiting wait on (queueAdvance).
			shard.QueuedWaits = 0
			s.setValue(ctx, codecs.EncodeShardRecord(shard))
			ctx.Loopback(ctx.Key(), codecs.EncodeInternal(tr))
			return nil, nil
		}
	}
	// Each pass (a trigger, then its continuations) fires up to its own T
	// from the start of the due index; only a completed pass moves the
	// watermark, to its T. A pass is never retargeted to a later advance
	// under way: its cursor has passed entries due up to that later time.
	//
	// A pass that began while another was under way (a fresh trigger with
	// Advancing set) continues from the start of the index, not after its
	// cursor: entries it passed may be put back behind its cursor by an
	// index rebuilt from the watermark (a crash that wiped the store, a new
	// owner) before the earlier pass wrote it, at times the earlier pass
	// had fired but this one had not (simulation seed 26 x 1000 ops lost
	// j0@10:26:42 and 10:26:43 so). Every entry a callback handles moves
	// past t (or is cut and continued), so without a rebuild the range due
	// up to t holds exactly what the pass still owes; after one, what it
	// re-fires repeats with the same payload. A lone pass keeps its cursor:
	// behind it, a rebuilt entry is one it fired (a clean rebalance repeats
	// nothing).
	t := tr.T
	cuts := passCuts(shard, t) // the jobs the pass to t has cut short and not handled again
	horizon := &purgeHorizon{shard: shard, purged: shard.Purged}
	// Before the callback's first fire the table says, durably, that the
	// pass is under way and that this callback may send fires after its
	// cursor (PassOpen; beginDurably). Without it, a crash after the fires
	// and before the yield's record reached the changelog left no trace of
	// them: a pause, then a put, or a put alone before the pass's first
	// record, applied on the next owner before the advance came again,
	// owed those fires under the put's payload (simulation seed 30042 x
	// 3000). The yield keeps PassOpen only if it was set when the callback
	// began (a callback before it died, having sent who knows how far);
	// the pass's completion clears it.
	begin := shard
	if begin.Advancing.IsZero() {
		begin.Advancing = t
	}
	begin.PassOpen = true
	horizon.shard, horizon.begin = begin, &begin
	for {
		more, last, err := s.advanceChunk(ctx, st, t, cursor, cuts, horizon)
		if err != nil {
			return nil, err
		}
		if !more {
			if last != (store.Due{}) {
				cursor = last
			}
			break
		}
		cursor = last
		if time.Since(began) >= s.cfg.ChunkBudget {
			// Bounded work per callback: the rest continues through the
			// loopback, so commands and other triggers of this shard run.
			s.yieldPass(ctx, shard, t, last, fromStart, cuts, horizon)
			return nil, nil
		}
	}
	if inherited {
		// This store followed the pass only from the middle: what the pass
		// fired behind its cursor may be due again here (see rederive.go),
		// and is moved where its record says, within the budget too.
		after := s.passes.rederiveFrom(p)
		moved, next, all, err := s.rederive(st, t, after, began)
		if err != nil {
			return nil, fmt.Errorf("scheduler: re-deriving the due index after a pass: %w", err)
		}
		if moved > 0 {
			s.cfg.Logger.Info("re-derived due entries a pass fired before this store followed it", "partition", p, "t", t, "moved", moved)
		}
		if !all {
			// The pass has handled everything up to t: the table says so
			// (its cursor at the last entry handled) until it completes.
			s.passes.rederivedTo(p, st, next)
			s.yieldPass(ctx, shard, t, cursor, fromStart, cuts, horizon)
			return nil, nil
		}
	}
	done := passDone(shard, t)
	done.Purged = horizon.purged
	s.setValue(ctx, codecs.EncodeShardRecord(done))
	s.noteCaughtUp(p, done.Watermark)
	stepBackfills(ctx, s.cfg.Layout.SchedulerBackfill(), done.Backfills, t)
	return &done, nil
}

// yieldPass ends a callback of the pass to t on shard (the shard record as
// read) whose cursor is last: the rest continues through the loopback.
// Before the shard's other inputs run, the table says an advance to t is
// under way and how far it got (passYield): a command applied between its
// callbacks first sends what its job owes up to t, and one on another
// owner after a rebalance reads which jobs the pass handled
// (passedThrough), so no fire_id goes out twice with two payloads. Each
// yield writes the shard record; an advance done in one callback, the
// common case, writes it once, at its end.
func (s *Scheduler) yieldPass(ctx goka.Context, shard codecs.ShardRecord, t time.Time, last store.Due, fromStart bool, cuts map[string]time.Time, horizon *purgeHorizon) {
	mark, next := passYield(shard, t, last, fromStart, cuts)
	if mark != nil {
		// It continues: the advances waiting wait on.
		mark.QueuedWaits, mark.Purged = 0, horizon.purged
		s.setValue(ctx, codecs.EncodeShardRecord(*mark))
	}
	ctx.Loopback(ctx.Key(), codecs.EncodeInternal(next))
}

// advanceChunk fires one chunk of the jobs due up to t after cursor, then
// moves their index entries; more reports whether due jobs remain after the
// chunk's last entry, last. cuts (nil: not kept) holds the jobs the pass
// has cut short: the chunk adds its own (with where each entry went, at or
// before t) and drops those it handled through t. horizon (nil: not kept)
// is raised by the tombstones the chunk purges.
func (s *Scheduler) advanceChunk(ctx goka.Context, st *store.Store, t time.Time, cursor store.Due, cuts map[string]time.Time, horizon *purgeHorizon) (more bool, last store.Due, err error) {
	c, err := s.fireChunk(ctx, st, t, cursor, horizon)
	if c.handled > 0 {
		s.cfg.Metrics.fanout(c.handled)
	}
	if err != nil {
		return false, c.last, err
	}
	scanned := c.last // the span c.first..scanned holds exactly c.moves' entries
	if cuts != nil {
		noteCuts(cuts, c.moves, t)
	}
	// A job that stopped at its per-advance bound (more fires than one plan
	// takes) stays due at or before t: the advance continues from just
	// before it, even when it moved behind the chunk's last entry, so the
	// watermark does not pass it. (Its record also learns how far it got,
	// through a settle, for whoever rebuilds the index meanwhile.)
	for _, m := range c.moves {
		if !m.To.IsZero() && !m.To.After(t) {
			if back := (store.Due{At: m.To.Add(-time.Nanosecond)}); !c.more || back.At.Before(c.last.At) {
				c.last, c.more = back, true
			}
		}
	}
	indexed, err := st.IndexedUpTo()
	if err != nil {
		return false, c.last, err
	}
	if !c.more && t.After(indexed) {
		indexed = t
	}
	err = st.ApplyScannedMoves(c.moves, c.first, scanned, indexed)
	toPool(&movesPool, c.moves)
	return c.more, c.last, err
}

// A chunk's moves and events are kept for the next chunk (in sync.Pools,
// which the collector empties when they stay unused): a burst's chunks of
// 25,000 grew theirs by doubling from one each time, a copy of every move
// and event so far at each doubling, 0.2 µs a fire; reserving a full
// chunk up front instead is paid again by every chunk a catch-up's steps
// or large payloads end early (adversary round 40).
var (
	movesPool sync.Pool // *[]store.Move
	msgsPool  sync.Pool // *[]Msg
)

// getChunkSlices returns empty moves and events slices from the pools, or
// new ones with capacity n.
func getChunkSlices(n int) ([]store.Move, []Msg) {
	return fromPool[store.Move](&movesPool, n), fromPool[Msg](&msgsPool, n)
}

// fromPool returns an empty slice from p, or a new one with capacity n.
func fromPool[T any](p *sync.Pool, n int) []T {
	if s, ok := p.Get().(*[]T); ok {
		return *s
	}
	return make([]T, 0, n)
}

// toPool returns s to p, cleared (nothing it held outlives its chunk),
// unless a burst grew it and chunks no longer fill a quarter of it: the
// chunks of ordinary seconds would keep 25,000 moves and events, ~3 MB,
// per partition for good.
func toPool[T any](p *sync.Pool, s []T) {
	if c := cap(s); c == 0 || c > scanGroup+1 && c > 4*len(s) {
		return
	}
	clear(s)
	s = s[:0]
	p.Put(&s)
}

// ensureIndex rebuilds the partition's due index when the table's watermark
// is ahead of what this store indexed: another instance fired this shard
// while this one did not own it, so local due entries may be stale.
func (s *Scheduler) ensureIndex(st *store.Store, w time.Time) error {
	_, err := s.rebuildIfBehind(st, w)
	return err
}

// rebuildIfBehind is ensureIndex, and reports whether it rebuilt.
func (s *Scheduler) rebuildIfBehind(st *store.Store, w time.Time) (bool, error) {
	indexed, err := st.IndexedUpTo()
	if err != nil {
		return false, err
	}
	if !w.After(indexed) {
		return false, nil
	}
	start := time.Now()
	if err := st.RebuildIndexes(w); err != nil {
		return false, fmt.Errorf("scheduler: rebuilding index: %w", err)
	}
	s.cfg.Logger.Info("rebuilt due index", "watermark", w, "indexed_up_to", indexed, "took", time.Since(start))
	return true, nil
}

// recordGroup is how many job records fireChunk and fireBucket read at
// once: records hold payloads of up to 64 KiB, so a chunk's 25,000 records
// are never in memory together (64 of them: at most ~4 MiB).
const recordGroup = 64

// scanGroup is how many due entries fireChunk reads from the due index at
// once (one Pebble iterator each time; an entry is the job's key and a
// time, so 4,096 of them hold well under 1 MiB). A fresh iterator's first
// seek costs tens of µs (it loads index and data blocks of every level):
// one per recordGroup entries was 0.4 µs of every fire (BenchmarkFirePath).
const scanGroup = 4096

// chunkSteps bounds the schedule steps (Next calls) of one chunk: a chunk
// ends after the job that reaches it, so a chunk of cron jobs each walking
// up to maxSteps late fires cannot stall a shard for minutes.
const chunkSteps = maxSteps

// eventOverhead is a dispatch event's size without its payload, key and
// bucket, rounded up (JSON field names, times, fire_id's suffix).
const eventOverhead = 256

// loopOrder is the order fireChunk sends a chunk's loopbacks in, by kind.
var loopOrder = map[string]int{codecs.KindComplete: 0, codecs.KindPurge: 1, codecs.KindSettle: 2}

// purgeHorizon is the shard record an advance's callback began with, and
// the purge horizon (codecs.ShardRecord.Purged) its chunks have raised.
// begin, when not nil, is the shard record saying the pass is under way
// and this callback may fire (PassOpen), to write durably before its first
// fire (beginDurably).
type purgeHorizon struct {
	shard  codecs.ShardRecord
	purged uint64
	begin  *codecs.ShardRecord
}

// beginDurably writes the shard record horizon.begin, if any, and waits
// until it has reached the changelog (Config.Durable), once per callback:
// every fire goes out after the table durably says an advance to its T is
// under way and a callback of it may fire past its cursor (PassOpen). A
// command on any store then owes its job's fires up to that T first
// (shardNow), under the definition the pass may have sent them with
// (handled, maybeSent).
func (s *Scheduler) beginDurably(ctx goka.Context, horizon *purgeHorizon) error {
	if horizon == nil || horizon.begin == nil {
		return nil
	}
	begin := *horizon.begin
	begin.Purged = max(begin.Purged, horizon.purged)
	s.setValue(ctx, codecs.EncodeShardRecord(begin))
	if err := s.durable(ctx, "the start of the pass to %s", begin.Advancing.Format(time.RFC3339Nano)); err != nil {
		return err
	}
	horizon.begin = nil
	return nil
}

// chunk is what fireChunk did: the moves of the due entries it handled, up
// to and including last, and whether due entries remain after last.
type chunk struct {
	moves   []store.Move
	handled int
	first   store.Due // the first entry handled (with handled > 0)
	last    store.Due
	more    bool
	purged  uint64 // the highest Applied of the tombstones it purges
}

// fireChunk dispatches the fires of the jobs due up to t after cursor, in
// index order, reading entries scanGroup and records recordGroup at a time, and
// produces them in one batch. It stops after ChunkSize jobs, or early
// (after at least one fire) once the events reach ChunkBytes or the
// schedule steps chunkSteps, or after a job that stays due (its catch-up
// was cut): that job moves to its first undispatched fire (<= t), which is
// after last, so the advance's next chunk continues it.
func (s *Scheduler) fireChunk(ctx goka.Context, st *store.Store, t time.Time, cursor store.Due, horizon *purgeHorizon) (chunk, error) {
	var (
		c     chunk
		msgs  []Msg
		buf   []Fire
		loops [3][]codecs.ShardTrigger // by loopOrder
		size  int
		steps int
		keys  = make([]string, 0, recordGroup)
		now   = s.cfg.Now()
		enc   codecs.DispatchEncoder // the chunk's fires share fired_at, most their scheduled_at
	)
	// The chunk writes nothing before its moves: one reader serves every
	// group's records.
	recs, err := st.Records()
	if err != nil {
		return c, err
	}
	defer recs.Close()
scan:
	for c.handled < s.cfg.ChunkSize && size < s.cfg.ChunkBytes && steps < chunkSteps {
		want := min(scanGroup, s.cfg.ChunkSize-c.handled)
		due, err := st.DueUpTo(t, cursor, want+1)
		if err != nil {
			return c, err
		}
		c.more = len(due) > want
		due = due[:min(len(due), want)]
		if c.moves == nil {
			c.moves, msgs = getChunkSlices(len(due))
			defer func() { toPool(&msgsPool, msgs) }()
		}
		for len(due) > 0 {
			group := due[:min(len(due), recordGroup)]
			due = due[len(group):]
			keys = keys[:0]
			for _, d := range group {
				keys = append(keys, d.Key)
			}
			values, err := recs.GetMany(keys)
			if err != nil {
				return c, err
			}
			for i, d := range group {
				if size >= s.cfg.ChunkBytes || steps >= chunkSteps {
					c.more = true
					break scan
				}
				if c.handled == 0 {
					c.first = d
				}
				c.handled++
				c.last, cursor = d, d
				dec := decideDue(d, values[i], t, s.cfg.ChunkBytes-size, s.cfg.MaxCatchUp, s.schedules, s.cfg.Calendars, buf)
				c.moves = append(c.moves, dec.Move)
				if dec.Loop != nil {
					loop := *dec.Loop
					loop.AfterKey = d.Key // the loopback's key, cleared when it is sent
					if loop.Kind == codecs.KindPurge {
						c.purged = max(c.purged, dec.Rec.Applied)
					}
					loops[loopOrder[loop.Kind]] = append(loops[loopOrder[loop.Kind]], loop)
				}
				steps += dec.Plan.Steps
				buf = dec.Plan.Fires
				for _, f := range dec.Plan.Fires {
					msgs = append(msgs, scheduledEvent(&enc, d.Key, dec.Rec, f, now))
					size += len(msgs[len(msgs)-1].Value)
					s.cfg.Metrics.delay(now.Sub(f.At))
				}
				s.cfg.Metrics.fired(codecs.TriggerSchedule, len(dec.Plan.Fires), dec.Plan.Missed)
				if dec.Cut {
					c.more = true // cut: the chunk ends at this job
					break scan
				}
			}
		}
		if !c.more {
			break
		}
	}
	if len(msgs) > 0 {
		if err := s.beginDurably(ctx, horizon); err != nil {
			return c, err
		}
		if err := s.dispatch(ctx, msgs); err != nil {
			return c, fmt.Errorf("scheduler: producing %d dispatch events (%d bytes): %w", len(msgs), size, err)
		}
	}
	// Only after the fires are acknowledged may a job be marked completed
	// (or purged, or settled).
	if horizon != nil && c.purged > horizon.purged {
		// The purge horizon is written before the purges go out: a
		// later chunk of the callback may fail, and the purges must not
		// outlive the horizon that makes their jobs' commands repeats
		// (adversary 18).
		horizon.purged = c.purged
		at := horizon.shard
		at.Purged = horizon.purged
		s.setValue(ctx, codecs.EncodeShardRecord(at))
	}
	for _, group := range loops {
		for _, l := range group {
			key := l.AfterKey
			l.AfterKey = ""
			ctx.Loopback(key, codecs.EncodeInternal(l))
		}
	}
	return c, nil
}

// Every dispatch event is built by scheduledEvent or triggeredEvent and sent
// by dispatch: one producer, one set of producer settings, acknowledged
// before the index, the watermark or the command's commit moves.

// scheduledEvent is the dispatch event of a scheduled fire of job key.
// A jittered fire's id and scheduled_at are its scheduled time; due_at is
// its due time.
func scheduledEvent(enc *codecs.DispatchEncoder, key string, rec *codecs.JobRecord, f Fire, firedAt time.Time) Msg {
	at, due := f.At, time.Time{}
	if !f.Scheduled.IsZero() {
		at, due = f.Scheduled, f.At
	}
	ev := codecs.Dispatch{JobID: key, ScheduledAt: at, DueAt: due, FiredAt: firedAt, Missed: f.Missed, Bucket: rec.Job.Bucket, Payload: rec.Job.Payload}
	return Msg{Key: key, Value: enc.AppendScheduled(make([]byte, 0, eventOverhead+2*len(key)+len(rec.Job.Bucket)+len(rec.Job.Payload)), &ev)}
}

// triggeredEvent is the dispatch event of a manual or bucket fire of job
// key at the trigger's time at, with the trigger's payload.
func triggeredEvent(key string, rec *codecs.JobRecord, trigger, triggerID string, at, firedAt time.Time, payload []byte) Msg {
	ev := codecs.Dispatch{FireID: codecs.TriggeredFireID(key, triggerID), JobID: key, Trigger: trigger,
		ScheduledAt: at, FiredAt: firedAt, Bucket: rec.Job.Bucket, TriggerID: triggerID, Payload: payload}
	return Msg{Key: key, Value: codecs.AppendDispatch(make([]byte, 0, eventOverhead+2*len(key)+len(rec.Job.Bucket)+len(triggerID)+len(payload)), &ev)}
}

// dispatch produces msgs to chronos-dispatch and returns once the broker has
// acknowledged each of them.
func (s *Scheduler) dispatch(ctx goka.Context, msgs []Msg) error {
	return s.cfg.Producer.ProduceSync(ctx.Context(), string(s.cfg.Layout.Dispatch()), msgs)
}

// complete marks a job completed after its last fire, if it is still the
// version that fired (else errStale).
func (s *Scheduler) complete(ctx goka.Context, version uint64) error {
	rec, err := s.current(ctx)
	next := completedRecord(rec, version)
	if err != nil || next == nil {
		return staleLoop("complete", version, rec, err)
	}
	// A completed job does not fire on a bucket trigger: one a crash left
	// open over it may have fired it as active, and would not know it
	// later (adversary 31: then put again, the fan-out run again fired it
	// with the put's payload). It sends that fire first, as a command
	// does.
	if rec.Job.Bucket != "" || len(rec.Fanned) > 0 {
		// Only then: one-shot jobs complete on the fire path, and the
		// shard record is read for it.
		shard, err := s.shard(ctx.Partition())
		if err != nil {
			return err
		}
		if next.Fanned, err = s.fannedOut(ctx, shard, rec, rec); err != nil {
			return err
		}
	}
	s.setValue(ctx, codecs.EncodeJobRecord(next))
	return nil
}

// settle records in a job's record how far it has been handled, as its
// local due entry shows after it fired (everything before the entry is
// dispatched), when that matters to whoever rebuilds the index: a job that
// owed fires behind its shard's time, or stopped at its per-advance bound.
// Still behind the shard's time, it owes fires from there; caught up, it is
// an ordinary job again. A settle applies to the version that fired
// (every command that changes a job changes its version) and only forward:
// one consumed after later advances fired the job again records their
// progress, not its own. Either way, and for another version too, what the
// record says was handled rises to its T, how far its fires went
// (sentRecord); one for another version is otherwise stale (errStale).
func (s *Scheduler) settle(ctx goka.Context, tr codecs.ShardTrigger) error {
	rec, err := s.current(ctx)
	if err != nil || rec == nil {
		return staleLoop("settle", tr.Version, rec, err)
	}
	shard, err := s.shard(ctx.Partition())
	if err != nil {
		return err
	}
	if rec.Version != tr.Version {
		// Stale, but its fires went out: the record learns how far (T),
		// if T is a due time of its own jitter too. Under another jitter
		// the scheduled times a due time covers differ, and the record,
		// rebased when its jitter changed, may owe one that T is past
		// (adversary 15c lost one so).
		if tr.Jitter != rec.Job.Jitter { // a tombstone keeps no jitter: only settles without one raise it
			return staleLoop("settle", tr.Version, rec, nil)
		}
		if next := sentRecord(rec, shard, tr.T); next != nil {
			s.setValue(ctx, codecs.EncodeJobRecord(next))
			return nil
		}
		return staleLoop("settle", tr.Version, rec, nil)
	}
	st := s.Store(ctx.Partition())
	if err := s.ensureIndex(st, shard.Watermark); err != nil {
		return err // a local index from before another owner fired would move the job back
	}
	due, err := st.DueOf(ctx.Key())
	if err != nil {
		return err
	}
	next := settledRecord(rec, shard, due)
	// Its T says how far its fires went: an index rebuilt from the record
	// it had yet to reach (an empty store after a move) holds the job's
	// entry behind them, and a put on the paused job then sent one again
	// with its payload (adversary 15b, seed 20237 x 1500 operations).
	base := rec
	if next != nil {
		base = next
	}
	if raised := sentRecord(base, shard, tr.T); raised != nil {
		next = raised
	}
	if next != nil {
		s.setValue(ctx, codecs.EncodeJobRecord(next))
	}
	return nil
}

func valueBytes(ctx goka.Context) []byte {
	v, _ := ctx.Value().([]byte)
	return v
}
