package console_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
)

// TestAdversary13JobPageInZoneFactory: the console's job page never
// renders for a job in the zone "Factory", which Chronos accepts.
//
// Promise (issue 13, item 4): "a job page with next fires timeline with
// DST marked, recent fires, change history, pause/resume/fire now/delete
// buttons"; docs/console.md describes the job page for any job.
//
// Reproduction: PUT {"cron":"0 3 * * *","tz":"Factory"} is accepted
// (codecs.JobDef.Validate, the carried zoneinfo.zip has it); open
// #/job/<id>. jobPage calls timeline(job.next_fires, tz), whose zoneParts
// builds Intl.DateTimeFormat({timeZone: "Factory"}). This test runs
// app.js's zoneParts in Node (V8 and ICU, the engine of Chromium) for
// every zone schedule.Zones() lists.
//
// Observed: RangeError "Invalid time zone specified: Factory": jobPage
// throws before show(), so the page stays at "Loading…" for good: no
// buttons, no recent fires, no change history, no definition. Only the
// node check runs here (no Chromium on this machine).
func TestAdversary13JobPageInZoneFactory(t *testing.T) {
	_, err := codecs.JobDef{Cron: "0 3 * * *", TZ: "Factory"}.Validate(codecs.DefaultLimits())
	require.NoError(t, err, "Chronos accepts the zone")
	node, fn := appFuncs(t, "zoneParts")
	script := fn + `
const bad = [];
for (const tz of process.argv.slice(1)) {
  try { zoneParts(new Date(Date.UTC(2026, 5, 1)), tz); } catch (e) { bad.push(tz + ': ' + e.message); }
}
console.log(bad.join('\n'));
`
	out, err := exec.Command(node, append([]string{"-e", script, "--"}, schedule.Zones()...)...).CombinedOutput()
	require.NoError(t, err, string(out))
	require.Empty(t, strings.TrimSpace(string(out)), "the job page's timeline throws for zones Chronos accepts")
}

// TestAdversary13FromInAnOverlapSkipsTheFirst: the job page's "from" field
// turns a wall clock repeated by a fall-back transition into its second
// instant in zones east of UTC, so the fire at the first instant is not
// listed; in a spring-forward gap it lands an hour past the gap's end, past
// the fire a gap-shifted cron job has there.
//
// Promise (docs/console.md): "a "from" field (a wall clock in the job's
// zone) shows the fires after any date"; app.js, wallToUTC: "in a gap,
// the instant after it; in an overlap, the first"; issue 13: "next fires
// timeline with DST marked".
//
// Reproduction: app.js's wallToUTC (run in Node) on "2026-10-25T02:30" in
// Europe/Berlin (02:30 CEST = 00:30Z, then 02:30 CET = 01:30Z) and
// "2026-03-29T02:30" (no such wall clock: the gap ends at 03:00 CEST =
// 01:00Z, where cron "30 2 * * *" fires that day with the default
// dst.gap shift). For America/New_York it gives the first instant.
//
// Observed: 2026-10-25T01:30Z (the second 02:30: a job firing at
// 02:30 with dst.overlap "both" or "first" shows its 00:30Z fire missing)
// and 2026-03-29T01:30Z (the shifted 01:00Z fire is missing). Cause: the
// two-step offset correction starts from the offset at the wall clock read
// as UTC, which east of UTC already lies after the transition.
func TestAdversary13FromInAnOverlapSkipsTheFirst(t *testing.T) {
	node, fns := appFuncs(t, "zoneParts", "offsetMinutes", "wallToUTC")
	script := fns + `
for (const [wall, tz] of [['2026-10-25T02:30', 'Europe/Berlin'], ['2026-03-29T02:30', 'Europe/Berlin'], ['2026-11-01T01:30', 'America/New_York']]) {
  console.log(wallToUTC(wall, tz).toISOString());
}
`
	out, err := exec.Command(node, "-e", script).CombinedOutput()
	require.NoError(t, err, string(out))
	got := strings.Fields(string(out))
	require.Len(t, got, 3, string(out))
	require.Equal(t, "2026-11-01T05:30:00.000Z", got[2], "New York's overlap: the first 01:30 (EDT)")
	require.Equal(t, "2026-10-25T00:30:00.000Z", got[0], "Berlin's overlap: the first 02:30 is 02:30 CEST = 00:30Z")
	require.LessOrEqual(t, got[1], "2026-03-29T01:00:00.000Z", "Berlin's gap: from 02:30 must include the fire shifted to the gap's end, 03:00 CEST = 01:00Z")
}
