package console_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWallToUTCMatchesGo checks the job page's "from" field (app.js's
// wallToUTC, run in Node: V8 and ICU, Chromium's engine) against Go's own
// zone rules on every wall clock, every 10 minutes, within 3 hours of each
// clock change of 2026 in zones east and west of UTC, with 30-minute and
// 45-minute offsets and a 30-minute DST. The rule: the first instant that
// shows the wall clock (an overlap's first), or in a gap the instant the
// gap ends. See appFuncs for Node.
func TestWallToUTCMatchesGo(t *testing.T) {
	node, fns := appFuncs(t, "zoneParts", "offsetMinutes", "wallToUTC")
	type wallCase struct {
		Wall, TZ, Want string
	}
	var cases []wallCase
	const layout = "2006-01-02T15:04"
	for _, tz := range []string{"Europe/Berlin", "America/New_York", "Australia/Sydney", "Australia/Lord_Howe",
		"Pacific/Chatham", "America/St_Johns", "America/Havana", "America/Santiago", "UTC"} {
		loc, err := time.LoadLocation(tz)
		require.NoError(t, err)
		var changes []time.Time
		for h := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC); h.Year() == 2026; h = h.Add(time.Hour) {
			if _, a := h.In(loc).Zone(); func() bool { _, b := h.Add(time.Hour).In(loc).Zone(); return a != b }() {
				changes = append(changes, h)
			}
		}
		if tz != "UTC" {
			require.NotEmpty(t, changes, "%s changes its clocks in 2026", tz)
		}
		changes = append(changes, time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)) // and a plain day
		for _, c := range changes {
			local := c.In(loc)
			base := time.Date(local.Year(), local.Month(), local.Day(), local.Hour(), 0, 0, 0, time.UTC)
			for m := -180; m <= 180; m += 10 {
				wall := base.Add(time.Duration(m) * time.Minute).Format(layout)
				cases = append(cases, wallCase{Wall: wall, TZ: tz, Want: goWallToUTC(t, wall, loc).Format("2006-01-02T15:04:05.000Z")})
			}
		}
	}
	in, err := json.Marshal(cases)
	require.NoError(t, err)
	script := fns + `
const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));
console.log(JSON.stringify(cases.map((c) => wallToUTC(c.Wall, c.TZ).toISOString())));
`
	cmd := exec.Command(node, "-e", script)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	require.NoError(t, err)
	var got []string
	require.NoError(t, json.Unmarshal(out, &got))
	require.Len(t, got, len(cases))
	bad := 0
	for i, c := range cases {
		if got[i] != c.Want {
			if bad++; bad <= 10 {
				t.Errorf("%s in %s: app.js %s, want %s", c.Wall, c.TZ, got[i], c.Want)
			}
		}
	}
	t.Logf("%d wall clocks, %d wrong", len(cases), bad)
}

// goWallToUTC is the rule by search: the first minute within 30 hours
// whose wall clock in loc is wall, else (a gap) the first whose wall clock
// is past it.
func goWallToUTC(t *testing.T, wall string, loc *time.Location) time.Time {
	w, err := time.Parse("2006-01-02T15:04", wall)
	require.NoError(t, err)
	var past time.Time
	for u := w.Add(-15 * time.Hour); u.Before(w.Add(15 * time.Hour)); u = u.Add(time.Minute) {
		s := u.In(loc).Format("2006-01-02T15:04")
		if s == wall {
			return u.UTC()
		}
		if s > wall && past.IsZero() {
			past = u.UTC()
		}
	}
	require.False(t, past.IsZero(), "%s in %s: no instant", wall, loc)
	return past
}

// appFuncs returns Node's path and the source of the named top-level
// functions of assets/app.js, to run in Node (V8 and ICU, Chromium's
// engine). Without Node the test skips: CI's machines have it (the
// foreign-client tests), and the README's `go test ./...` needs only Go.
func appFuncs(t *testing.T, names ...string) (node, src string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH: app.js's functions are checked where Node is installed (CI)")
	}
	b, err := os.ReadFile("assets/app.js")
	require.NoError(t, err)
	var fns []string
	for _, name := range names {
		fn := regexp.MustCompile(`(?s)\nfunction ` + name + `\(.*?\n\}\n`).Find(b)
		require.NotNil(t, fn, "function %s in app.js", name)
		fns = append(fns, string(fn))
	}
	return node, strings.Join(fns, "")
}
