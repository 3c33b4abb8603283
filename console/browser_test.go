//go:build browser

// The console in a real browser: headless Chromium (Debian's chromium, or
// CHRONOS_CHROMIUM) against a Chronos instance on the embedded broker, on
// loopback only. Run with
//
//	go test -tags browser -count=1 ./console/
//
// Screenshots of each page go to -test.outputdir (go test -outputdir DIR)
// under console-screenshots/, else to console/testdata/screenshots/
// (ignored by git).
package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/testenv"
)

// chromium finds the browser: CHRONOS_CHROMIUM, else chromium on PATH.
func chromium(t *testing.T) string {
	if p := os.Getenv("CHRONOS_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium: install Debian's chromium or set CHRONOS_CHROMIUM (the browser tests run only with -tags browser)")
	return ""
}

func screenshotDir(t *testing.T) string {
	dir := filepath.Join("testdata", "screenshots")
	if f := flag.Lookup("test.outputdir"); f != nil && f.Value.String() != "" {
		dir = filepath.Join(f.Value.String(), "console-screenshots")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// site is a running instance with a writer and a reader token.
type site struct {
	t              *testing.T
	base           string
	writer, reader string
}

func (s *site) do(method, path, token string, body any) (int, []byte) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(s.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	require.NoError(s.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	if method == http.MethodPut || method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (s *site) status(id string) string {
	code, b := s.do(http.MethodGet, "/v1/jobs/"+url.PathEscape(id), s.reader, nil)
	require.Equal(s.t, http.StatusOK, code, string(b))
	var j struct{ Status string }
	require.NoError(s.t, json.Unmarshal(b, &j))
	return j.Status
}

func startSite(t *testing.T) *site {
	env := testenv.New(t, 2)
	cfg := env.Config()
	cfg.Clock.NoTicker = false // real time: jobs fire while the browser looks
	cfg.Registerer = prometheus.NewRegistry()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cfg.HTTP.Addr = ln.Addr().String()
	require.NoError(t, ln.Close())
	s := &site{t: t, base: "http://" + cfg.HTTP.Addr}
	var lines []string
	for name, role := range map[string]api.Role{"ops": api.RoleWrite, "viewer": api.RoleRead} {
		secret, line, err := api.NewToken(name, role, "")
		require.NoError(t, err)
		lines = append(lines, line)
		if role == api.RoleWrite {
			s.writer = secret
		} else {
			s.reader = secret
		}
	}
	cfg.HTTP.TokensFile = filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(cfg.HTTP.TokensFile, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	env.Start(cfg)

	put := func(id string, def map[string]any) {
		code, b := s.do(http.MethodPut, "/v1/jobs/"+id, s.writer, def)
		require.Contains(t, []int{http.StatusOK, http.StatusAccepted}, code, string(b))
	}
	put("tick.fast", map[string]any{"every": "1s", "bucket": "fast"})
	put("report.berlin", map[string]any{"cron": "30 2 * * *", "tz": "Europe/Berlin", "bucket": "nightly"})
	for i := range 120 {
		put(fmt.Sprintf("load.%03d", i), map[string]any{"every": "1h", "bucket": "load"})
	}
	testenv.Eventually(t, time.Minute, func() error {
		if code, b := s.do(http.MethodGet, "/v1/jobs/load.119", s.reader, nil); code != http.StatusOK {
			return fmt.Errorf("load.119: %d %s", code, b)
		}
		return nil
	})
	return s
}

// browser is one tab that records every request it makes and every
// uncaught script error.
type browser struct {
	t      *testing.T
	ctx    context.Context
	shots  string
	mu     sync.Mutex
	errors []string
}

func newBrowser(t *testing.T, alloc context.Context, shots string) *browser {
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	b := &browser{t: t, ctx: ctx, shots: shots}
	chromedp.ListenTarget(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			b.errors = append(b.errors, ev.ExceptionDetails.Error())
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.APITypeError {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				b.errors = append(b.errors, strings.Join(parts, " "))
			}
		}
	})
	require.NoError(t, chromedp.Run(ctx, runtime.Enable()))
	return b
}

// run runs actions with a deadline.
func (b *browser) run(what string, actions ...chromedp.Action) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	require.NoError(b.t, chromedp.Run(ctx, actions...), what)
}

// until waits for a JavaScript condition to be true.
func (b *browser) until(what, js string) {
	b.t.Helper()
	var ok bool
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	err := chromedp.Run(ctx, chromedp.Poll(js, &ok, chromedp.WithPollingTimeout(45*time.Second), chromedp.WithPollingInterval(100*time.Millisecond)))
	if err != nil {
		var text string
		_ = chromedp.Run(b.ctx, chromedp.Evaluate(`document.body.innerText`, &text))
		b.shot("failed-" + strings.NewReplacer(" ", "-", "/", "-").Replace(what))
		b.t.Fatalf("%s: %v\npage:\n%s\nscript errors: %v", what, err, text, b.scriptErrors())
	}
}

func (b *browser) eval(js string, out any) {
	b.t.Helper()
	b.run(js, chromedp.Evaluate(js, out, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
}

func (b *browser) shot(name string) {
	b.t.Helper()
	var text string
	b.run("page text", chromedp.Evaluate(`document.body.innerText`, &text))
	require.NotRegexp(b.t, `\b(null|undefined|NaN|\[object Object\])\b`, text, "%s shows a placeholder", name)
	var png []byte
	b.run("screenshot "+name, chromedp.FullScreenshot(&png, 100))
	require.NoError(b.t, os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644))
}

func (b *browser) signIn(base, token string) {
	b.t.Helper()
	b.run("open the console", chromedp.Navigate(base+"/"))
	b.run("sign-in form", chromedp.WaitVisible("#signin", chromedp.ByQuery))
	b.run("sign in", chromedp.SendKeys("#token", token, chromedp.ByQuery), chromedp.Click("#signin button[type=submit]", chromedp.ByQuery))
}

// offSite lists what the current page loaded from anywhere but the
// instance (the page's own navigation and every resource and fetch, from
// the browser's resource timing).
func (b *browser) offSite(base string) []string {
	b.t.Helper()
	var urls []string
	b.eval(`[location.href, ...performance.getEntriesByType('resource').map(e => e.name)]`, &urls)
	var out []string
	for _, u := range urls {
		if !strings.HasPrefix(u, base+"/") {
			out = append(out, u)
		}
	}
	return out
}

func (b *browser) scriptErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errors...)
}

func TestConsoleInBrowser(t *testing.T) {
	s := startSite(t)
	shots := screenshotDir(t)
	alloc, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox, // CI runs as root in a container
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.WindowSize(1200, 900),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-domain-reliability", true),
		// Loopback only: no name resolves, so nothing leaves the machine.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"),
		chromedp.Flag("proxy-server", "direct://"),
	)
	t.Cleanup(cancel)

	t.Run("writer", func(t *testing.T) {
		b := newBrowser(t, alloc, shots)
		b.run("open the console", chromedp.Navigate(s.base+"/"))
		b.run("sign-in form", chromedp.WaitVisible("#signin", chromedp.ByQuery))
		b.shot("01-sign-in")
		b.run("sign in", chromedp.SendKeys("#token", s.writer, chromedp.ByQuery), chromedp.Click("#signin button[type=submit]", chromedp.ByQuery))
		b.until("signed in as ops", `document.querySelector('#who').textContent === 'ops · write'`)

		// Overview: from the instance's own /metrics and /readyz.
		b.until("ready", `document.querySelector('#readiness .value')?.textContent === 'ready'`)
		b.until("partitions owned", `document.querySelector('#partitions .value')?.textContent === '2'`)
		b.until("fires counted", `Number(document.querySelector('#fires-rate .value')?.textContent) > 0`)
		b.until("lag per group", `[...document.querySelectorAll('#lag td')].some(td => td.textContent.endsWith('chronos-scheduler'))`)
		b.shot("02-overview")

		// Jobs: a server-side page of 50 with a next page, then a prefix search.
		b.run("jobs page", chromedp.Navigate(s.base+"/#/jobs"))
		b.until("a page of 50", `document.querySelectorAll('#jobs tbody tr').length === 50 && !!document.querySelector('#next-page')`)
		b.shot("03-jobs")
		b.run("search tick", chromedp.SendKeys("#f-prefix", "tick", chromedp.ByQuery), chromedp.Click("#filters button[type=submit]", chromedp.ByQuery))
		b.until("found tick.fast", `document.querySelectorAll('#jobs tbody tr').length === 1 && document.querySelector('#jobs tbody tr').dataset.id === 'tick.fast'`)
		b.shot("04-jobs-search")

		// A job: pause it and see its state change, then resume.
		b.run("open tick.fast", chromedp.Click(`#jobs a.job-link`, chromedp.ByQuery))
		b.until("job page", `!!document.querySelector('#btn-pause')`)
		b.run("pause", chromedp.Click("#btn-pause", chromedp.ByQuery))
		b.until("paused on the page", `document.querySelector('dl.props [data-status]')?.dataset.status === 'paused' && !!document.querySelector('#btn-resume')`)
		require.Equal(t, "paused", s.status("tick.fast"))
		b.shot("05-job-paused")
		b.run("resume", chromedp.Click("#btn-resume", chromedp.ByQuery))
		b.until("active on the page", `document.querySelector('dl.props [data-status]')?.dataset.status === 'active' && !!document.querySelector('#btn-pause')`)
		require.Equal(t, "active", s.status("tick.fast"))

		// Fires arrive in its recent list (the page refreshes it).
		b.until("recent fires", `document.querySelectorAll('#fires-table tbody tr').length >= 3`)
		var first string
		b.eval(`document.querySelector('#fires-table tbody tr').dataset.fire`, &first)
		require.True(t, strings.HasPrefix(first, "tick.fast@"), first)
		b.until("more fires", fmt.Sprintf(`document.querySelector('#fires-table tbody tr').dataset.fire !== %q`, first))
		b.until("change history names the writer", `[...document.querySelectorAll('#history-table td')].some(td => td.textContent === 'ops')`)
		b.shot("06-job-fires")

		// Next fires in the job's zone across a DST change, marked.
		b.run("report.berlin from March 2027", chromedp.Navigate(s.base+"/#/job/report.berlin?from=2027-03-26T00%3A00"))
		b.until("DST marked", `[...document.querySelectorAll('#timeline li.dst')].some(li => li.textContent.includes('UTC+01:00 → UTC+02:00'))`)
		var firstWall string
		b.eval(`document.querySelector('#timeline li.fire time').textContent`, &firstWall)
		require.Equal(t, "Fri 2027-03-26 02:30:00", firstWall)
		b.shot("07-job-dst")

		// A bucket: trigger it, and its jobs fire.
		before := bucketFires(t, s)
		b.run("bucket page", chromedp.Navigate(s.base+"/#/buckets/nightly"))
		b.until("bucket jobs", `[...document.querySelectorAll('#bucket-jobs a')].some(a => a.textContent === 'report.berlin')`)
		b.run("trigger", chromedp.Click("#btn-trigger", chromedp.ByQuery))
		b.until("triggered", `document.querySelector('#trigger-result').textContent.startsWith('Triggered: t-')`)
		testenv.Eventually(t, time.Minute, func() error {
			if n := bucketFires(t, s); n <= before {
				return fmt.Errorf("bucket fires still %v", n)
			}
			return nil
		})
		b.shot("08-bucket-triggered")

		// Delete asks twice.
		b.run("open load.000", chromedp.Navigate(s.base+"/#/job/load.000"))
		b.run("delete once", chromedp.WaitVisible("#btn-delete", chromedp.ByQuery), chromedp.Click("#btn-delete", chromedp.ByQuery))
		b.until("asks again", `document.querySelector('#btn-delete').textContent === 'Really delete?'`)
		require.Equal(t, "active", s.status("load.000"))
		b.run("delete", chromedp.Click("#btn-delete", chromedp.ByQuery))
		testenv.Eventually(t, time.Minute, func() error {
			if code, _ := s.do(http.MethodGet, "/v1/jobs/load.000", s.reader, nil); code != http.StatusNotFound {
				return fmt.Errorf("load.000 still answers %d", code)
			}
			return nil
		})

		require.Empty(t, b.offSite(s.base), "requests that left the instance")
		require.Empty(t, b.scriptErrors(), "script errors")
	})

	t.Run("reader", func(t *testing.T) {
		b := newBrowser(t, alloc, shots)
		b.signIn(s.base, s.reader)
		b.until("signed in as viewer", `document.querySelector('#who').textContent === 'viewer · read'`)
		b.run("job page", chromedp.Navigate(s.base+"/#/job/tick.fast"))
		b.until("read-only job", `!!document.querySelector('#read-only') && !!document.querySelector('#definition')`)
		var buttons int
		b.eval(`document.querySelectorAll('#actions, #btn-pause, #btn-resume, #btn-fire-now, #btn-delete').length`, &buttons)
		require.Zero(t, buttons, "write buttons for a read-only token")
		b.shot("09-reader-job")
		b.run("bucket page", chromedp.Navigate(s.base+"/#/buckets/nightly"))
		b.until("read-only bucket", `!!document.querySelector('#read-only') && !document.querySelector('#btn-trigger')`)

		// It cannot write either, whatever a page does with its token.
		var code int
		b.eval(`fetch('/v1/jobs/tick.fast/pause', {method: 'POST', headers: {'Content-Type': 'application/json',
			Authorization: 'Bearer ' + sessionStorage.getItem('chronos-token')}, body: '{}'}).then(r => r.status)`, &code)
		require.Equal(t, http.StatusForbidden, code)
		b.eval(`fetch('/v1/buckets/nightly/trigger', {method: 'POST', headers: {'Content-Type': 'application/json',
			Authorization: 'Bearer ' + sessionStorage.getItem('chronos-token')}, body: '{}'}).then(r => r.status)`, &code)
		require.Equal(t, http.StatusForbidden, code)
		require.Equal(t, "active", s.status("tick.fast"))
		require.Empty(t, b.offSite(s.base), "requests that left the instance")

		// The token is in this tab's sessionStorage only: no cookie, nothing
		// in localStorage, and another origin (localhost is not 127.0.0.1)
		// does not see it.
		var stored struct {
			Cookie string `json:"cookie"`
			Local  int    `json:"local"`
		}
		b.eval(`({cookie: document.cookie, local: localStorage.length})`, &stored)
		require.Empty(t, stored.Cookie)
		require.Zero(t, stored.Local)
		other := strings.Replace(s.base, "127.0.0.1", "localhost", 1)
		b.run("another origin", chromedp.Navigate(other+"/"))
		b.run("asks for a token there", chromedp.WaitVisible("#signin", chromedp.ByQuery))
		var there string
		b.eval(`sessionStorage.getItem('chronos-token') || ''`, &there)
		require.Empty(t, there)
		require.Empty(t, b.scriptErrors(), "script errors")
	})
}

// bucketFires reads chronos_fires_total{trigger="bucket"} from /metrics.
func bucketFires(t *testing.T, s *site) float64 {
	resp, err := http.Get(s.base + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, `chronos_fires_total{trigger="bucket"} `); ok {
			var n float64
			_, err := fmt.Sscan(v, &n)
			require.NoError(t, err)
			return n
		}
	}
	return 0
}
