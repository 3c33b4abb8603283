package scheduler

import (
	"fmt"
	"math/rand"
	"os"
	"testing"
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestAdv31BucketCrashAnywhereHistories (adversary round 31, 2026-12-04):
// several crashes (process death, partition restored from the changelog
// by a new owner) at random inputs: fan-out inputs and commands alike; a
// crashed input is delivered again first in its topic; its loopbacks kept
// or not at random. Two fan-outs of one bucket; in the second half of the
// histories some commands put new members between the existing ones (seed
// 1872 of those sent a fire_id with two payloads before a chunk run again
// kept the lost one's members covered, TestAdv31BucketRerunNarrowedByNewMember).
// ADV31_SEEDS sets how many seeds each half runs (default 300).
func TestAdv31BucketCrashAnywhereHistories(t *testing.T) {
	t.Parallel()
	seeds := int64(300)
	fmt.Sscan(os.Getenv("ADV31_SEEDS"), &seeds)
	for _, newMembers := range []bool{false, true} {
		for seed := int64(1); seed <= seeds; seed++ {
			if !t.Run(fmt.Sprintf("new=%v/%d", newMembers, seed), func(t *testing.T) { adv31History(t, seed, newMembers) }) {
				t.Fatalf("seed %d (new members %v)", seed, newMembers)
			}
		}
	}
	if !t.Run("new=true/1872", func(t *testing.T) { adv31History(t, 1872, true) }) {
		t.Fatal("seed 1872")
	}
}

type adv31In struct {
	bucket bool // a fan-out input (trigger or loop)
	topic  string
	key    string
	off    int64
	msg    []byte
}

func adv31History(t *testing.T, seed int64, newMembers bool) {
	rnd := rand.New(rand.NewSource(seed))
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	l := &adv17Log{partitionHarness: newPartitionHarness(t, 1+rnd.Intn(3), at), changelog: map[string][]byte{}, dieInLastWait: true}
	l.advance(at)
	var cmdOff int64
	n := 2 + rnd.Intn(6)
	members := make([]string, n)
	for i := range members {
		members[i] = fmt.Sprintf("m%d", i)
		l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), members[i], at, cmdOff, []byte(fmt.Sprintf(`{"v":1,"op":"put","job":{"every":"1h","bucket":"b","payload":{"p":"%s-0"}}}`, members[i])), false)
		cmdOff++
	}
	var trig, loops, cmds []adv31In
	for i := 0; i < 1+rnd.Intn(2); i++ {
		l.off++
		tr := codecs.ShardTrigger{Kind: codecs.KindBucket, T: at.Add(time.Duration(i) * time.Millisecond), Bucket: "b", TriggerID: fmt.Sprintf("t%d", i)}
		if rnd.Intn(5) == 0 {
			tr.T = at
		}
		trig = append(trig, adv31In{bucket: true, topic: "trig", off: l.off, msg: codecs.EncodeInternal(tr)})
	}
	for range 2 + rnd.Intn(8) {
		id := members[rnd.Intn(n)]
		if newMembers && rnd.Intn(6) == 0 {
			id = fmt.Sprintf("m%d5", rnd.Intn(n)) // a new member between
		}
		js := bucketMemberCommand(rnd.Intn(7), id, cmdOff+100)
		cmds = append(cmds, adv31In{topic: "cmd", key: id, off: cmdOff, msg: []byte(js)})
		cmdOff++
	}
	crashes := 0
	for steps := 0; steps < 200 && (len(trig)+len(loops)+len(cmds) > 0); steps++ {
		var q *[]adv31In
		var opts []*[]adv31In
		for _, c := range []*[]adv31In{&trig, &loops, &cmds} {
			if len(*c) > 0 {
				opts = append(opts, c)
			}
		}
		q = opts[rnd.Intn(len(opts))]
		in := (*q)[0]
		lost := crashes < 3 && rnd.Intn(5) == 0
		l.loops = nil
		switch in.topic {
		case "trig":
			l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), at, in.off, in.msg, lost)
		case "loop":
			l.run(l.s.onLoop, l.s.cfg.Layout.SchedulerLoop(), in.key, at, in.off, in.msg, lost)
		default:
			l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), in.key, at, in.off, in.msg, lost)
		}
		if os.Getenv("ADV31_TRACE") != "" { // ADV31_TRACE=1 -v: each input and the fan-outs after it
			var d string
			if in.topic != "cmd" {
				tr, _ := codecs.DecodeShardTrigger(in.msg)
				d = fmt.Sprintf("%s/%s after=%q step=%d T=%s", tr.Kind, tr.TriggerID, tr.AfterKey, tr.Step, tr.T.Format("05.000"))
			} else {
				d = in.key + " " + string(in.msg)
			}
			t.Logf("%s off=%d lost=%v %s | fires so far %d", in.topic, in.off, lost, d, len(l.prod.msgs))
			for _, f := range l.shard().Fanouts {
				t.Logf("    ref %+v", f)
			}
		}
		newLoops := l.loops
		l.loops = nil
		if lost && rnd.Intn(2) == 0 {
			newLoops = nil
		}
		for _, o := range newLoops {
			l.off++
			loops = append(loops, adv31In{bucket: true, topic: "loop", key: o.Key, off: l.off, msg: o.Value})
		}
		if lost {
			crashes++
			l.moveToNewOwner()
			continue // in stays at the front of its topic
		}
		*q = (*q)[1:]
	}
	l.requireOnePayload()
}
