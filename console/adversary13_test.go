//go:build adversary13

package console_test

import (
	"os"
	"os/exec"
	"regexp"
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
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH")
	}
	src, err := os.ReadFile("assets/app.js")
	require.NoError(t, err)
	fn := regexp.MustCompile(`(?s)function zoneParts\(date, tz\) \{.*?\n\}\n`).Find(src)
	require.NotNil(t, fn, "zoneParts in app.js")
	script := string(fn) + `
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
