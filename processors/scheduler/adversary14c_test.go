//go:build adversary14c

// Adversary 14c: breaks of issue 14's promises in the scheduler (bulk
// operations' counts, docs/topics.md; named calendars in due decisions,
// docs/schedules.md). Run:
//
//	go test -tags adversary14c -count=1 -run Adversary14c ./processors/scheduler/
package scheduler

import (
	"testing"

	"github.com/chronos-scheduler/chronos/codecs"
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

// countingCalendars holds one calendar, "hol", and counts lookups; past
// limit it panics so that a runaway walk ends the test instead of hanging
// it.
