package console_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestAdversary13bMultiScheduleJobPageInUTC: a job with several
// schedules, every one in Europe/Berlin, is answered by the API with no
// top-level tz (its zones are in "schedules"), and the console's job page
// takes its zone from job.job.tz only: it shows the next fires in UTC and
// marks no DST change, and reads the "from" field as a UTC wall clock.
//
// Promise (docs/console.md): "the next 20 fires on a timeline in the job's
// own time zone, each with its UTC offset, and every change of offset (a
// DST transition) marked between the two fires it separates; a "from"
// field (a wall clock in the job's zone)"; issue 13: "a job page with next
// fires timeline with DST marked".
//
// Reproduction: put "berlin" with schedules [{cron "30 2 * * *", tz
// Europe/Berlin}, {cron "0 12 * * *", tz Europe/Berlin}] on 2027-03-20;
// GET /v1/jobs/berlin?next=20 as the page does; evaluate the page's own
// zone expression (jobPage's `const tz = ...`) on that answer and its
// zoneParts on each next fire, in Node.
//
// Observed: the page's zone is "UTC"; its 20 fires (across Berlin's
// 2027-03-28 change) show one offset, UTC+00:00: no DST change is marked.
func TestAdversary13bMultiScheduleJobPageInUTC(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH")
	}
	env := testenv.New(t, 1)
	cfg := env.Config()
	cfg.Registerer = prometheus.NewRegistry()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cfg.HTTP.Addr = ln.Addr().String()
	require.NoError(t, ln.Close())
	env.Start(cfg)
	// Record times now (Apache Kafka refuses timestamps far from its
	// clock); the fires across 2027-03-28 come from ?from=.
	t0 := time.Now().UTC().Truncate(time.Second)
	env.Tick(t0)
	env.Put("berlin", codecs.JobDef{Schedules: []codecs.ScheduleDef{{Cron: "30 2 * * *", TZ: "Europe/Berlin"}, {Cron: "0 12 * * *", TZ: "Europe/Berlin"}}}, t0)
	env.WaitApplied()
	var body []byte
	testenv.Eventually(t, time.Minute, func() error {
		resp, err := http.Get("http://" + cfg.HTTP.Addr + "/v1/jobs/berlin?next=20&from=2027-03-20T00:00:00Z")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ = io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET: %d %s", resp.StatusCode, body)
		}
		return nil
	})
	t.Logf("API: %s", body)

	src, err := os.ReadFile("assets/app.js")
	require.NoError(t, err)
	// Every top-level function of the page (none touches the DOM unless
	// called), and jobPage's zone expression.
	fns := regexp.MustCompile(`(?sm)^(?:async )?function \w+\(.*?\n\}\n`).FindAll(src, -1)
	require.NotEmpty(t, fns)
	tzExpr := regexp.MustCompile(`(?s)async function jobPage\(.*?\n  const tz = ([^;]+);`).FindSubmatch(src)
	require.NotNil(t, tzExpr, "jobPage's zone in app.js")
	var script strings.Builder
	for _, fn := range fns {
		script.Write(fn)
	}
	fmt.Fprintf(&script, `
const job = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const tz = %s;
const offsets = job.next_fires.map((f) => zoneParts(new Date(f), tz).offset);
let changes = 0;
for (let i = 1; i < offsets.length; i++) if (offsets[i] !== offsets[i - 1]) changes++;
console.log(JSON.stringify({ tz, fires: offsets.length, changes, first: offsets[0], last: offsets[offsets.length - 1] }));
`, tzExpr[1])
	cmd := exec.Command(node, "-e", script.String())
	cmd.Stdin = strings.NewReader(string(body))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	t.Logf("page: %s", out)
	require.Contains(t, string(out), `"fires":20`)
	require.NotContains(t, string(out), `"changes":0`, "the job page of a job whose schedules are all in Europe/Berlin shows its 20 fires across 2027-03-28 without a DST change: %s", out)
}
