//go:build adversary14c

// Adversary 14c: breaks of issue 14's promises in the scheduler (bulk
// operations' counts, docs/topics.md). Run:
//
//	go test -tags adversary14c -count=1 -run Adversary14c ./processors/scheduler/
package scheduler

import (
	"testing"
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
)

// Promise (docs/topics.md "Bulk operations": "a put, pause, resume or
// delete of the job applied between the walk and the command wins: the
// command changes nothing and ... is counted in the operation's skipped";
// "The counts are the shards' own: exact when no crash interrupts the
// walk"): a user who pauses a job (note "incident 42", by alice) between
// a bulk pause's walk and its command leaves the job one version past the
// command's if_version, paused: bulkRepeat takes that for the bulk
// command applied already (a crash repeat) and the loss is dropped
// uncounted. No crash, yet the operation reports changed 1, skipped 0
// for a job it did not change. Same for a user's delete before a bulk
// delete. (The record's pause note and actor tell them apart.)
func TestAdversary14cBulkCountsUserPauseAsRepeat(t *testing.T) {
	v := uint64(7)
	user := &codecs.JobRecord{Status: codecs.StatusPaused, Version: 8, Pause: codecs.PauseNote{Note: "incident 42", By: "alice"}}
	cmd := codecs.Command{Op: codecs.BulkPause, IfVersion: &v, Note: "quarter-end freeze"}
	if bulkRepeat(cmd, user, nil) {
		t.Errorf("a user's pause (note %q by %q) between the walk and the bulk pause (note %q) is taken for the bulk command itself: not counted in skipped", user.Pause.Note, user.Pause.By, cmd.Note)
	}
}

// Promise (issue 14: "huge sets: memory, CPU per fire"; COMMON: bad input
// never stops a processor): a put of a valid job with max_fires runs
// allot in the shard processor, which walks every time the limit allows
// (up to 100,000) through the job's schedule. With 16 schedules
// ("* * * * * *" in 16 DST zones), 1000 excluded dates, jitter 999ms and
// max_fires 100,000, one allot takes ~4 s (and limitUsed, at the next
// put or pause, as long again): a handful of such puts stall a shard's
// fires for tens of seconds. Asserted: under 1 s.
func TestAdversary14cAllotStallsShard(t *testing.T) {
	zones := []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Santiago", "Asia/Kolkata", "Pacific/Chatham",
		"America/Havana", "Europe/London", "Africa/Cairo", "Asia/Tehran", "America/Sao_Paulo", "Pacific/Auckland", "Europe/Moscow",
		"Asia/Kathmandu", "America/St_Johns", "Australia/Adelaide"}
	var ms []codecs.ScheduleDef
	for _, z := range zones {
		ms = append(ms, codecs.ScheduleDef{Cron: "* * * * * *", TZ: z, DST: &codecs.DSTDef{Gap: "skip", Overlap: "both"}})
	}
	var dates []string
	for i := range 1000 {
		dates = append(dates, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, 3*i).Format(time.DateOnly))
	}
	job, err := codecs.JobDef{Schedules: ms, MaxFires: codecs.MaxMaxFires, Exclude: &codecs.ExcludeDef{Dates: dates}, Jitter: "999ms"}.Validate(codecs.DefaultLimits())
	if err != nil {
		t.Fatalf("refused (would be a fix): %v", err)
	}
	rec := &codecs.JobRecord{Version: 1, Status: codecs.StatusActive, Job: job}
	start := time.Now()
	allot(schedule.NewCache(10), "j", rec, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if took := time.Since(start); took > time.Second {
		t.Fatalf("allot of one valid job's put (quota %d) took %s of the shard processor", rec.Quota, took)
	}
}
