package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
)

// mainEnv makes the test binary run main() instead of the tests, so a test
// can start `chronos run` as a process of its own without building it.
const mainEnv = "CHRONOS_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// memoryBudget is the memory limit the payload-heavy cases must run under
// (the 512 MiB; the Kubernetes manifests give the pod this much).
const memoryBudget = 512 << 20

// TestRunDispatchesPayloadHeavyCasesUnderBudget runs `chronos run` as its
// own process with GOMEMLIMIT=512MiB against the test broker and drives the
// two cases of issue 18: one put (every 1s, fire_all, 168 h grace, a 60 kB
// payload, record time 3 h in the past: 10,800 owed fires) and one bucket
// trigger with a 65 kB payload override on a bucket of 20,000 small jobs.
// Every one of those fires is dispatched, and the process's peak RSS
// (VmHWM) stays under 512 MiB.
func TestRunDispatchesPayloadHeavyCasesUnderBudget(t *testing.T) {
	bucketJobs, catchUp := 20000, 3*time.Hour
	if testing.Short() {
		bucketJobs, catchUp = 2000, 20*time.Minute
	}
	env := testenv.New(t, 12)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, chronosBinary(t), "run",
		"--brokers", strings.Join(env.Kafka.Brokers, ","), "--topic-prefix", env.Layout.Prefix, "--partitions", "12",
		"--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0", "--log-level", "warn", "--insecure-no-auth")
	cmd.Env = append(os.Environ(), mainEnv+"=1", "GOMEMLIMIT=512MiB")
	cmd.Stderr = testWriter{t}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = time.Minute
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() { cancel(); <-exited }()

	want := map[string]bool{}
	ids := make([]string, 0, bucketJobs)
	puts := make([][]byte, 0, bucketJobs)
	for i := range bucketJobs {
		id := fmt.Sprintf("member-%05d", i)
		ids, puts = append(ids, id), append(puts, testenv.PutCommand(id, codecs.JobDef{Cron: "0 0 1 1 *", Bucket: "heavy"}))
		want[codecs.TriggeredFireID(id, "t-1")] = true
	}
	env.ProduceMany(string(env.Layout.Jobs()), ids, puts, time.Now())
	put := time.Now().Add(-catchUp).Truncate(time.Second)
	env.Put("catch-up", codecs.JobDef{Every: "1s", MisfirePolicy: codecs.MisfireFireAll, MisfireGrace: "168h", Payload: randomPayload(t, 60_000)}, put)
	for at := put.Add(time.Second); !at.After(put.Add(catchUp)); at = at.Add(time.Second) {
		want[codecs.ScheduledFireID("catch-up", at)] = true
	}
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.Jobs()), 5*time.Minute)
	trig, err := codecs.EncodeBucketTrigger(codecs.BucketTrigger{Bucket: "heavy", TriggerID: "t-1", Payload: randomPayload(t, 65_000)})
	require.NoError(t, err)
	env.Produce(string(env.Layout.BucketTriggers()), "heavy", trig, time.Now())

	missing := waitFires(t, env, want, 10*time.Minute)
	hwm := vmHWM(t, cmd.Process.Pid)
	t.Logf("peak RSS of chronos run: %.1f MiB (budget %d MiB), %d fires dispatched", float64(hwm)/(1<<20), memoryBudget>>20, len(want)-missing)
	require.Zero(t, missing, "fires not dispatched")
	require.Less(t, hwm, int64(memoryBudget), "peak RSS over the budget")
	select {
	case err := <-exited:
		t.Fatalf("chronos run exited during the test: %v", err)
	default:
	}
}

// chronosBinary returns this test binary, which runs main() with mainEnv
// set, or under the race detector (whose shadow memory would be measured)
// a chronos binary built without it.
func chronosBinary(t *testing.T) string {
	if !raceEnabled {
		return os.Args[0]
	}
	bin := filepath.Join(t.TempDir(), "chronos")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// randomPayload is a JSON string of n bytes that compresses poorly.
func randomPayload(t *testing.T, n int) []byte {
	b := make([]byte, (n-2)/2)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return []byte(`"` + hex.EncodeToString(b) + `"`)
}

// waitFires consumes chronos-dispatch until every wanted fire_id arrived or
// the timeout passes, and returns how many are missing.
func waitFires(t *testing.T, env *testenv.Env, want map[string]bool, timeout time.Duration) int {
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Kafka.Brokers...), kgo.ConsumeTopics(string(env.Layout.Dispatch())),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	missing := len(want)
	seen := make(map[string]bool, len(want))
	for missing > 0 && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			d, err := codecs.DecodeDispatch(r.Value)
			if err == nil && want[d.FireID] && !seen[d.FireID] {
				seen[d.FireID] = true
				missing--
			}
		})
	}
	return missing
}

// vmHWM returns a process's peak resident set size in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	require.NoError(t, sc.Err())
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// testWriter sends a process's output to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
