//go:build foreign

package foreign

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// dispatchReader reads <prefix>chronos-dispatch from the beginning and keeps
// the scheduled fires of one job, counting every event per fire_id.
type dispatchReader struct {
	mu     sync.Mutex
	counts map[string]int       // fire_id -> events
	at     map[string]time.Time // fire_id -> scheduled_at
	order  []string             // fire_ids in arrival order (repeats included)
	bad    []string
}

func readDispatch(t *testing.T, topic, jobID string) *dispatchReader {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers(t), ",")...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	d := &dispatchReader{counts: map[string]int{}, at: map[string]time.Time{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) {
				if string(r.Key) != jobID {
					return
				}
				var ev struct {
					V           int       `json:"v"`
					FireID      string    `json:"fire_id"`
					JobID       string    `json:"job_id"`
					Trigger     string    `json:"trigger"`
					ScheduledAt time.Time `json:"scheduled_at"`
					Missed      int64     `json:"missed"`
				}
				d.mu.Lock()
				defer d.mu.Unlock()
				if err := json.Unmarshal(r.Value, &ev); err != nil || ev.V != 1 || ev.JobID != jobID || ev.Trigger != "schedule" {
					d.bad = append(d.bad, fmt.Sprintf("unexpected event %s (%v)", r.Value, err))
					return
				}
				want := jobID + "@" + ev.ScheduledAt.UTC().Format(time.RFC3339Nano)
				if ev.FireID != want {
					d.bad = append(d.bad, fmt.Sprintf("fire_id %q, want %q", ev.FireID, want))
				}
				if ev.Missed != 0 {
					d.bad = append(d.bad, fmt.Sprintf("%s: missed %d, want 0 (a 5 s outage is within the 60 s grace)", ev.FireID, ev.Missed))
				}
				d.counts[ev.FireID]++
				d.at[ev.FireID] = ev.ScheduledAt.UTC()
				d.order = append(d.order, ev.FireID)
			})
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		cl.Close()
	})
	return d
}

// span returns the first and last scheduled time seen and how many distinct fires.
func (d *dispatchReader) span() (first, last time.Time, n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, at := range d.at {
		if first.IsZero() || at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
	}
	return first, last, len(d.at)
}

func putJob(t *testing.T, baseURL, id, body string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, baseURL+"/v1/jobs/"+id, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	// 202 (queued) or 200 (applied, with the job): both mean the put is in chronos-jobs.
	if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT /v1/jobs/%s: %s %s", id, resp.Status, b)
	}
	t.Logf("PUT /v1/jobs/%s %s: %s %s", id, body, resp.Status, strings.TrimSpace(string(b)))
}

func waitFor(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRestartAfterKill9 puts an every-1s job through the HTTP API, kills
// `chronos run` with SIGKILL after a few dispatches, starts it again on the
// same data dir 5 s later, and checks that every second from the first fire
// to the last fire seen was dispatched at least once (repeats are allowed:
// at least once; they are counted and logged).
func TestRestartAfterKill9(t *testing.T) {
	prefix := "restart" + randHex(4) + "."
	dataDir := t.TempDir()
	const job = "every-second"
	a := startChronos(t, prefix, dataDir, 6)
	d := readDispatch(t, prefix+"chronos-dispatch", job)
	putJob(t, a.httpURL, job, `{"every":"1s"}`)

	waitFor(t, 60*time.Second, "3 dispatches before the kill", func() bool { _, _, n := d.span(); return n >= 3 })
	a.kill(t)
	killedAt := time.Now()
	_, lastBefore, nBefore := d.span()
	t.Logf("SIGKILL at %s; %d fires seen so far, the last scheduled at %s", killedAt.UTC().Format(time.RFC3339Nano),
		nBefore, lastBefore.Format(time.RFC3339))

	time.Sleep(5 * time.Second)
	restartAt := time.Now()
	b := startChronos(t, prefix, dataDir, 6)
	readyAfter := time.Since(restartAt)
	time.Sleep(10 * time.Second)
	// Then wait (bounded) for the fires of the restarted instance itself to be
	// read, so the check below spans the outage and the time after it.
	target := restartAt.Add(readyAfter + 5*time.Second).Truncate(time.Second)
	waitFor(t, 60*time.Second, "a fire scheduled 5 s after the restarted instance was ready", func() bool {
		_, last, _ := d.span()
		return !last.Before(target)
	})
	time.Sleep(2 * time.Second) // late repeats, if any
	b.stop(t)

	d.mu.Lock()
	defer d.mu.Unlock()
	for _, s := range d.bad {
		t.Error(s)
	}
	var first, last time.Time
	for _, at := range d.at {
		if first.IsZero() || at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
	}
	var missing []string
	secs := 0
	for s := first; !s.After(last); s = s.Add(time.Second) {
		secs++
		if d.counts[job+"@"+s.Format(time.RFC3339Nano)] == 0 {
			missing = append(missing, s.Format(time.RFC3339))
		}
	}
	var dups []string
	events := 0
	for id, c := range d.counts {
		events += c
		if c > 1 {
			dups = append(dups, fmt.Sprintf("%s x%d", id, c))
		}
	}
	sort.Strings(dups)
	t.Logf("fires %s .. %s: %d seconds, %d distinct fires, %d events, %d fire_ids repeated %v",
		first.Format(time.RFC3339), last.Format(time.RFC3339), secs, len(d.at), events, len(dups), dups)
	t.Logf("outage: killed %s, restarted %s (ready %s later); fires scheduled in the outage: %d",
		killedAt.UTC().Format(time.RFC3339Nano), restartAt.UTC().Format(time.RFC3339Nano), readyAfter.Round(time.Millisecond),
		countBetween(d.at, killedAt, restartAt.Add(readyAfter)))
	if len(missing) > 0 {
		t.Errorf("%d of %d seconds have no dispatch: %v", len(missing), secs, missing)
	}
	if !last.After(restartAt) {
		t.Errorf("no fire after the restart was seen (last %s)", last)
	}
}

func countBetween(at map[string]time.Time, from, to time.Time) int {
	n := 0
	for _, t := range at {
		if !t.Before(from) && t.Before(to) {
			n++
		}
	}
	return n
}
