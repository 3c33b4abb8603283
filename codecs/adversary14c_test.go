//go:build adversary14c

// Adversary 14c: breaks of issue 14's promises about several schedules,
// exclusions and jitter (docs/schedules.md). Run:
//
//	go test -tags adversary14c -count=1 -run Adversary14c ./codecs/
package codecs

import (
	"testing"
	"time"

	"github.com/chronos-scheduler/chronos/schedule"
)

// Promise (docs/schedules.md "Jitter", issue 14 item 3): a jitter delays
// each fire, none is lost; "Jitter is checked against the gaps of the
// union (the shortest gap among its first fires)". The check reads only
// the first 1000 fires from 2026 (or start): a union whose members come
// close later passes it, and then two scheduled times can get one due
// time. DueSchedule.Next returns that due time once and the next call is
// strictly after it, so one scheduled fire is never dispatched.
func TestAdversary14cJitterUnionLosesFire(t *testing.T) {
	const gap = time.Microsecond
	hour := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	second := hour.Add(gap)
	// A job id whose two fires get one due time (about 1 in 4000 ids).
	var key string
	for i := 0; i < 10_000_000 && key == ""; i++ {
		k := "adv14c-" + itoa(i)
		a := JitterOffset(ScheduledFireID(k, hour), 2*gap)
		b := JitterOffset(ScheduledFireID(k, second), 2*gap)
		if a-b == gap {
			key = k
		}
	}
	if key == "" {
		t.Fatal("no colliding id found")
	}
	def := JobDef{
		Schedules: []ScheduleDef{{Every: "1h"}, {At: second.Format(time.RFC3339Nano)}},
		Jitter:    (2 * gap).String(),
	}
	job, err := def.Validate(DefaultLimits())
	if err != nil {
		t.Fatalf("validation refused it (would be a fix): %v", err)
	}
	s, err := schedule.Parse(job.Spec)
	if err != nil {
		t.Fatal(err)
	}
	rec := &JobRecord{Status: StatusActive, Job: job}
	due := JobSchedule(key, rec, s)
	var got []time.Time
	for d := due.Next(hour.Add(-time.Minute)); !d.IsZero() && d.Before(hour.Add(2*time.Hour)); d = due.Next(d) {
		got = append(got, Scheduled(due, d))
	}
	want := []time.Time{hour, second, hour.Add(time.Hour)}
	if len(got) != len(want) {
		t.Fatalf("job %s (jitter %s accepted): scheduled times reached through due times %v, want %v: a fire is lost", key, 2*gap, got, want)
	}
}

// Promise (issue 14: "huge sets: ... a GET that takes seconds"; docs
// max_fires: "remaining_fires on GET"): GET /v1/jobs/{id} computes
// remaining_fires with RemainingFires (views/jobs.go), which walks every
// time the job has left (up to max_fires = 100,000) through its schedule;
// allot does the same walk in the shard processor at every put and resume
// (and limitUsed once more). A valid job of 16 schedules ("* * * * * *"
// in 16 DST zones, dst skip/both), 1000 excluded dates, jitter 999ms and
// max_fires 100,000: one RemainingFires takes ~4.6 s on this 2-core
// machine (measured 4.57 s), so each GET of it takes seconds and each put
// stalls its shard for as long. Asserted: under 1 s.
func TestAdversary14cRemainingFiresTakesSeconds(t *testing.T) {
	zones := []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Santiago", "Asia/Kolkata", "Pacific/Chatham",
		"America/Havana", "Europe/London", "Africa/Cairo", "Asia/Tehran", "America/Sao_Paulo", "Pacific/Auckland", "Europe/Moscow",
		"Asia/Kathmandu", "America/St_Johns", "Australia/Adelaide"}
	var ms []ScheduleDef
	for _, z := range zones {
		ms = append(ms, ScheduleDef{Cron: "* * * * * *", TZ: z, DST: &DSTDef{Gap: "skip", Overlap: "both"}})
	}
	var dates []string
	for i := range 1000 {
		dates = append(dates, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, 3*i).Format(time.DateOnly))
	}
	def := JobDef{Schedules: ms, MaxFires: MaxMaxFires, Exclude: &ExcludeDef{Dates: dates}, Jitter: "999ms"}
	job, err := def.Validate(DefaultLimits())
	if err != nil {
		t.Fatalf("refused (would be a fix): %v", err)
	}
	s, err := schedule.Parse(job.Spec)
	if err != nil {
		t.Fatal(err)
	}
	rec := &JobRecord{Status: StatusActive, Job: job, Quota: MaxMaxFires}
	start := time.Now()
	n, _ := rec.RemainingFires("j", s, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if took := time.Since(start); took > time.Second {
		t.Fatalf("remaining_fires of one valid job (%d) took %s", n, took)
	}
}

// Promise (docs/schedules.md Backfill: "a backfill never holds the
// partition's other fires for longer than one step"; issue 14: "huge
// sets: CPU"): a backfill is counted whole before it starts, once by the
// API (CheckBackfill) and once more in the shard processor
// (startBackfill, CountBackfill): up to 100,001 Next calls. For a valid
// job of 16 schedules ("* * * * * *" in 16 DST zones, no jitter, no
// exclusions) over a range of 100,000 times, that count takes ~1.8 s
// (measured 1.84 s), all of it on the partition's processor before its
// first step. Asserted: under 0.5 s.
func TestAdversary14cBackfillCountHoldsShard(t *testing.T) {
	zones := []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Santiago", "Asia/Kolkata", "Pacific/Chatham",
		"America/Havana", "Europe/London", "Africa/Cairo", "Asia/Tehran", "America/Sao_Paulo", "Pacific/Auckland", "Europe/Moscow",
		"Asia/Kathmandu", "America/St_Johns", "Australia/Adelaide"}
	var ms []ScheduleDef
	for _, z := range zones {
		ms = append(ms, ScheduleDef{Cron: "* * * * * *", TZ: z, DST: &DSTDef{Gap: "skip", Overlap: "both"}})
	}
	job, err := JobDef{Schedules: ms}.Validate(DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	to := from.Add(MaxBackfillFires * time.Second)
	start := time.Now()
	n, _, err := CheckBackfill(job.Spec, from, to, to)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Fatalf("counting a backfill of %d times took %s (the API does it, then the shard processor again)", n, took)
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}
