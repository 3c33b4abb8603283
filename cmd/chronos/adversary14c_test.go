//go:build adversary14c

// Adversary 14c: the CLI and the API disagree on several schedules.
// Run:
//
//	go test -tags adversary14c -count=1 -run Adversary14c ./cmd/chronos/
package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// Promise (issue 14: "decoded strictly" through every entrance; COMMON:
// bad input gets a clear error; docs/schedules.md CLI: "--schedules
// '[{"cron":..,"tz":..}, ...]' gives members their own zones"): the API
// refuses a schedule member with an unknown field (a typo such as
// "timezone" for "tz"), but `jobs put --schedules` decodes the
// flag with encoding/json's lenient rules: the typo is dropped silently
// and the job is created in UTC, firing at another time than asked.
func TestAdversary14cCLISchedulesTypoAccepted(t *testing.T) {
	t.Parallel()
	member := `{"cron":"0 9 * * *","timezone":"Asia/Tokyo"}`
	// The API's decoder refuses it.
	_, err := codecs.DecodeJobDef([]byte(`{"schedules":[` + member + `,{"every":"1h"}]}`))
	require.Error(t, err, "the API accepts an unknown member field")
	// (Also accepted, harmlessly: "TZ" for "tz", which the API refuses.)
	for _, flag := range []string{`[` + member + `,{"every":"1h"}]`} {
		api := newAPI(t, "")
		_, err := run(t, "jobs", "--api", api.url+"/", "put", "typo", "--schedules", flag)
		recs := api.prod.records()
		if err == nil && len(recs) == 1 {
			c, derr := codecs.DecodeCommand(recs[0].Key, recs[0].Value, codecs.DefaultLimits())
			require.NoError(t, derr)
			t.Errorf("--schedules %s: accepted; the job's first schedule is %q in zone %q", flag, c.Job.Spec.Cron, c.Job.Spec.TZ)
		}
	}
}

// Promise (docs/schedules.md CLI: "--dst-gap/--dst-overlap apply to each
// cron"; the API refuses a DST policy with every/at, and beside
// schedules): `jobs put --every 1h --dst-gap skip` is refused (one every:
// the flag reaches the API), but `jobs put --every 1h --every 90m
// --dst-gap skip` is accepted with the flag silently dropped (no cron to
// carry it): the same flag is an error or nothing depending on how many
// schedules there are.
func TestAdversary14cCLIDSTFlagDroppedWithSeveralEverys(t *testing.T) {
	t.Parallel()
	one := newAPI(t, "")
	_, errOne := run(t, "jobs", "--api", one.url+"/", "put", "e1", "--every", "1h", "--dst-gap", "skip")
	two := newAPI(t, "")
	_, errTwo := run(t, "jobs", "--api", two.url+"/", "put", "e2", "--every", "1h", "--every", "90m", "--dst-gap", "skip")
	if (errOne == nil) != (errTwo == nil) {
		t.Errorf("--dst-gap skip with one --every: err %v; with two: err %v (%d commands produced)", errOne, errTwo, len(two.prod.records()))
	}
}
