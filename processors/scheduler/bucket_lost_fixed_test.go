package scheduler

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestBucketTriggerLostPutBeforeRedelivery was a break of docs/topics.md's
// "no fire_id is ever dispatched with two different payloads" for a bucket
// trigger, the gap TestPassStartLostPutBeforeRedelivery had for an advance
// (found 2026-12-03, fixed 2026-12-04: a chunk's start is durable before
// its fires, codecs.FanoutRef.Open, and a command on a member it covers
// sends the member's fire itself first, fannedOut):
//
// The trigger's one callback fires both members (j0@t46, j1@t46) with
// payload v1; the shard record that names the fan-out (codecs.FanoutRef)
// never reaches the changelog. On the new owner a put of j0 (payload v2) is
// applied before the trigger is delivered again, which fired j0@t46 with
// v2 (and j1@t46 again with v1: a repeat, as promised).
func TestBucketTriggerLostPutBeforeRedelivery(t *testing.T) {
	t.Parallel()
	at := bucketAt
	l := newBucketLog(t, 100, true, "j0", "j1")
	l.lostThenPut(codecs.ShardTrigger{Kind: codecs.KindBucket, T: at, Bucket: "b", TriggerID: "t46"}, 2, "j0", `{"v":1,"op":"put","job":{"every":"1h","bucket":"b","payload":{"v":2}}}`)
	l.requireOnePayload()
	require.Len(t, l.fired()["j0@t46"], 2, "the put sent j0's fire again, the redelivered trigger skipped it")
}

// TestBucketFanoutLostChunkHistories generates histories of one bucket
// fan-out whose chunk's table writes are lost in a crash (its fires went
// out), the partition then restored from the changelog by a new owner,
// where commands on the members (puts that change the payload or move the
// job to another bucket and back, pauses, resumes, deletes, re-puts) are
// interleaved at random with the fan-out's input delivered again and the
// continuations it sends (and, at random, the lost callback's own
// continuation, kept by the broker). Every fire_id goes out with one
// payload, and every member no command touched fires.
func TestBucketFanoutLostChunkHistories(t *testing.T) {
	t.Parallel()
	seeds := int64(400)
	if testing.Short() {
		seeds = 150
	}
	for seed := int64(1); seed <= seeds; seed++ {
		bucketLostChunkHistory(t, seed)
		if t.Failed() {
			t.Fatalf("seed %d", seed)
		}
	}
}

func bucketLostChunkHistory(t *testing.T, seed int64) {
	rnd := rand.New(rand.NewSource(seed))
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	l := &adv17Log{partitionHarness: newPartitionHarness(t, 1+rnd.Intn(3), at), changelog: map[string][]byte{}, dieInLastWait: true}
	l.advance(at)
	var cmdOff int64
	command := func(id, js string, lost bool) {
		l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), id, at, cmdOff, []byte(js), lost)
		cmdOff++
	}
	n := 2 + rnd.Intn(6)
	members := make([]string, n)
	for i := range members {
		members[i] = fmt.Sprintf("m%d", i)
		command(members[i], fmt.Sprintf(`{"v":1,"op":"put","job":{"every":"1h","bucket":"b","payload":{"p":"%s-0"}}}`, members[i]), false)
	}
	tr := codecs.ShardTrigger{Kind: codecs.KindBucket, T: at, Bucket: "b", TriggerID: "t1"}
	deliver := func(in bucketInput, lost bool) {
		l.off++
		if in.trigger {
			l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), at, l.off, codecs.EncodeInternal(tr), lost)
			return
		}
		l.run(l.s.onLoop, l.s.cfg.Layout.SchedulerLoop(), in.out.Key, at, l.off, in.out.Value, lost)
	}

	// The fan-out runs until the callback whose writes are lost.
	lostAt := rnd.Intn((n + l.chunk - 1) / l.chunk)
	in := bucketInput{trigger: true}
	for step := 0; ; step++ {
		l.loops = nil
		deliver(in, step == lostAt)
		if step == lostAt || len(l.loops) == 0 {
			break
		}
		in = bucketInput{out: l.loops[0]}
	}
	var pending []bucketInput // inputs after the crash, each in its topic's order
	pending = append(pending, in)
	kept := len(l.loops) > 0 && rnd.Intn(2) == 0
	if kept {
		pending = append(pending, bucketInput{out: l.loops[0]})
	}
	l.loops = nil
	l.moveToNewOwner()
	if rnd.Intn(4) == 0 {
		// A second crash: the input delivered again, its writes lost too.
		deliver(pending[0], true)
		l.loops = nil
		l.moveToNewOwner()
	}

	touched := map[string]bool{}
	var cmds []func()
	for range rnd.Intn(6) {
		id := members[rnd.Intn(n)]
		touched[id] = true
		js := bucketMemberCommand(rnd.Intn(6), id, cmdOff+100)
		cmds = append(cmds, func() { command(id, js, false) })
	}
	// Commands and the fan-out's inputs interleave; each topic in order.
	for len(cmds) > 0 || len(pending) > 0 || len(l.loops) > 0 {
		pending = append(pending, inputsOf(l.loops)...)
		l.loops = nil
		if len(cmds) > 0 && (len(pending) == 0 || rnd.Intn(2) == 0) {
			cmds[0]()
			cmds = cmds[1:]
			continue
		}
		next := pending[0]
		pending = pending[1:]
		deliver(next, false)
	}
	l.requireOnePayload()
	fired := l.fired()
	for _, id := range members {
		if !touched[id] {
			require.NotEmpty(t, fired[id+"@t1"], "seed %d: member %s never fired", seed, id)
		}
	}
}

// bucketInput is an input of a bucket fan-out: the trigger, or a
// continuation (out).
type bucketInput struct {
	trigger bool
	out     simOut
}

func inputsOf(loops []simOut) []bucketInput {
	var out []bucketInput
	for _, o := range loops {
		out = append(out, bucketInput{out: o})
	}
	return out
}

// bucketAt is when the bucket histories begin, and their trigger's time.
var bucketAt = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// bucketT46 is the record of bucket b's trigger t46 at bucketAt.
var bucketT46 = codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindBucket, T: bucketAt, Bucket: "b", TriggerID: "t46"})

// newBucketLog is an adv17Log at bucketAt (chunks of chunk jobs; with
// dieInLastWait a lost chunk dies waiting for its end) after an advance,
// with jobs ids put in bucket b, every 1h, payload {"v":1}, at offsets 0,
// 1, ... of chronos-jobs.
func newBucketLog(t *testing.T, chunk int, dieInLastWait bool, ids ...string) *adv17Log {
	t.Helper()
	l := &adv17Log{partitionHarness: newPartitionHarness(t, chunk, bucketAt), changelog: map[string][]byte{}, dieInLastWait: dieInLastWait}
	l.advance(bucketAt)
	for i, id := range ids {
		l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), id, bucketAt, int64(i), []byte(`{"v":1,"op":"put","job":{"every":"1h","bucket":"b","payload":{"v":1}}}`), false)
	}
	return l
}

// nextOff is the offset of the next record of the shard's inputs.
func (l *adv17Log) nextOff() int64 {
	l.off++
	return l.off
}

// bucketMemberCommand is the command op (a draw of 0-6) of a generated
// bucket history on member id: a put that keeps it in bucket b with a new
// payload (n in it), one that moves it to bucket c, a pause, a resume or a
// delete.
func bucketMemberCommand(op int, id string, n int64) string {
	switch op {
	case 0, 1, 6:
		return fmt.Sprintf(`{"v":1,"op":"put","job":{"every":"1h","bucket":"b","payload":{"p":"%s-%d"}}}`, id, n)
	case 2:
		return fmt.Sprintf(`{"v":1,"op":"put","job":{"every":"1h","bucket":"c","payload":{"p":"%s-%d"}}}`, id, n)
	case 3:
		return `{"v":1,"op":"pause"}`
	case 4:
		return `{"v":1,"op":"resume"}`
	}
	return `{"v":1,"op":"delete"}`
}
