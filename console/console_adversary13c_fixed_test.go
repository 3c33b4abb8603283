package console_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/views"
)

// fakeDOM is just enough of a browser for app.js's job page in Node: a
// flat element tree whose textContent the test reads.
const fakeDOM = `
class Node {}
class Elem extends Node {
  constructor(tag) { super(); this.tag = tag; this.kids = []; this.attrs = {}; this.style = {}; this.dataset = {}; this._text = null;
    this.classList = { toggle() {} }; }
  set textContent(v) { this.kids = []; this._text = String(v); }
  get textContent() { return this._text !== null ? this._text : this.kids.map((k) => k.textContent).join(''); }
  append(...ks) { for (const k of ks) this.kids.push(typeof k === 'string' ? new Text(k) : k); }
  replaceChildren(...ks) { this.kids = []; this._text = null; this.append(...ks); }
  setAttribute(k, v) { this.attrs[k] = v; }
  addEventListener() {}
  focus() {}
}
class Text extends Node { constructor(s) { super(); this._s = String(s); } get textContent() { return this._s; } }
const __main = new Elem('main');
globalThis.Node = Node;
globalThis.document = { createElement: (t) => new Elem(t), createTextNode: (s) => new Text(s),
  getElementById: (id) => id === 'main' ? __main : new Elem('x'), addEventListener() {}, querySelectorAll: () => [] };
globalThis.window = { addEventListener() {} };
globalThis.location = { hash: '' };
globalThis.sessionStorage = { getItem: () => '', setItem() {}, removeItem() {} };
globalThis.setInterval = () => 0;
`

// jobPageText renders app.js's job page for the GET /v1/jobs/{id} answer
// job (the history routes answer 503 history_unavailable) and returns the
// page's text, each element's text on its own line.
func jobPageText(t *testing.T, job views.Job) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH")
	}
	app, err := os.ReadFile("assets/app.js")
	require.NoError(t, err)
	answer, err := json.Marshal(job)
	require.NoError(t, err)
	driver := `
globalThis.fetch = async (path) => {
  const ok = path.startsWith('/v1/jobs/' + encodeURIComponent(` + "`" + job.ID + "`" + `)) && !/\/(fires|history)$/.test(path);
  const body = ok ? JSON.stringify(` + string(answer) + `) : JSON.stringify({ code: 'history_unavailable', detail: 'no history' });
  return { ok, status: ok ? 200 : 503, text: async () => body };
};
state.who = { name: 'reader', role: 'read' };
(async () => {
  await jobPage(` + "`" + job.ID + "`" + `, new URLSearchParams());
  await new Promise((r) => setTimeout(r, 50));
  const lines = [];
  const walk = (n) => { if (n.kids && n.kids.length) n.kids.forEach(walk); else lines.push(n.textContent); };
  walk(__main);
  console.log(lines.join('\n'));
})().catch((e) => { console.error(e); process.exit(1); });
`
	file := filepath.Join(t.TempDir(), "page.js")
	require.NoError(t, os.WriteFile(file, []byte(fakeDOM+string(app)+driver), 0o600))
	out, err := exec.Command(node, file).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

// TestAdversary13cJobPageSchedulesOnlyShownAsNone: the console's job page
// says a job with a `schedules` list has no schedule.
//
// Promise (docs/console.md): "A job (`#/job/<id>`): its definition, state,
// version and last fire; the next 20 fires on a timeline in the job's own
// time zone (its `tz`, or the zone all its `schedules` share ...)";
// round 2 fixed jobZone for exactly these jobs. A job always has a
// schedule (a put without cron, every, at or schedules is refused:
// "exactly one of cron, every, at must be set").
//
// Reproduction: the job page (app.js in Node, a minimal DOM) for the
// API's answer on a job put as {"schedules":[{"cron":"0 9 * * *","tz":
// "Europe/Berlin"},{"every":"1h"}]}, active, with its next fires.
//
// Observed: the page's Schedule row reads "none (bucket or manual only)"
// while the timeline below lists the job's upcoming scheduled fires.
// Cause: jobPage's Schedule row reads only job.cron, job.every and job.at.
func TestAdversary13cJobPageSchedulesOnlyShownAsNone(t *testing.T) {
	t0 := time.Date(2027, 3, 27, 7, 0, 0, 0, time.UTC)
	job := views.Job{ID: "multi", Version: 1, Status: "active", CreatedAt: t0, UpdatedAt: t0,
		Job:       codecs.JobDef{Schedules: []codecs.ScheduleDef{{Cron: "0 9 * * *", TZ: "Europe/Berlin"}, {Every: "1h"}}},
		NextFires: []time.Time{t0, t0.Add(time.Hour), t0.Add(2 * time.Hour)}}
	text := jobPageText(t, job)
	t.Logf("page:\n%s", text)
	require.Contains(t, text, "Schedule", "the page rendered its properties")
	require.NotContains(t, text, "none (bucket or manual only)",
		"a job with 2 schedules (cron 0 9 * * * in Europe/Berlin, every 1h) and 3 upcoming fires is shown as having no schedule")
}
