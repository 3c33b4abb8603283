//go:build foreign

package foreign

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// brokers returns CHRONOS_TEST_BROKERS. These tests exist only for a real
// broker: without one they fail (a skip would hide a misconfigured CI).
func brokers(t *testing.T) string {
	t.Helper()
	b := os.Getenv("CHRONOS_TEST_BROKERS")
	if b == "" {
		t.Fatal("CHRONOS_TEST_BROKERS is not set: start a broker with testenv/kafka/kafka.sh start " +
			"and export CHRONOS_TEST_BROKERS=$(cat /tmp/chronos-kafka/brokers)")
	}
	return b
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildDir  string
)

// TestMain removes the binary built for the package's tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// chronosBinary builds ./cmd/chronos once per test binary.
func chronosBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "chronos-foreign-bin-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(buildDir, "chronos")
		start := time.Now()
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/chronos-scheduler/chronos/cmd/chronos").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ./cmd/chronos: %v\n%s", err, out)
			return
		}
		fmt.Printf("built chronos in %s\n", time.Since(start).Round(time.Millisecond))
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// chronosProc is one `chronos run` subprocess.
type chronosProc struct {
	t       *testing.T
	cmd     *exec.Cmd
	logPath string
	httpURL string
	done    chan struct{}
	waitErr error
}

var httpAddrRE = regexp.MustCompile(`msg="chronos is running".* http=http://(\S+)`)

// startChronos runs `chronos run` on the broker with the given topic prefix
// and data dir, waits for its HTTP address in its log and for /readyz.
func startChronos(t *testing.T, prefix, dataDir string, partitions int, extra ...string) *chronosProc {
	t.Helper()
	bin := chronosBinary(t)
	logPath := filepath.Join(t.TempDir(), "chronos.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"run", "--brokers", brokers(t), "--topic-prefix", prefix, "--data-dir", dataDir,
		"--http-addr", "127.0.0.1:0", "--insecure-no-auth", "--partitions", fmt.Sprint(partitions), "--replication", "1"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = os.Environ()
	started := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &chronosProc{t: t, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	t.Cleanup(func() { p.stop(t) })
	// The HTTP address is logged once topics exist and the groups are built.
	deadline := time.Now().Add(120 * time.Second)
	for p.httpURL == "" {
		if m := httpAddrRE.FindSubmatch(readFile(logPath)); m != nil {
			p.httpURL = "http://" + string(m[1])
			break
		}
		p.checkAlive(t, deadline, "no \"chronos is running\" line")
		time.Sleep(50 * time.Millisecond)
	}
	for {
		resp, err := http.Get(p.httpURL + "/readyz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		p.checkAlive(t, deadline, "/readyz is not 200")
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("chronos (pid %d, prefix %s) ready at %s after %s", cmd.Process.Pid, prefix, p.httpURL,
		time.Since(started).Round(time.Millisecond))
	return p
}

func (p *chronosProc) checkAlive(t *testing.T, deadline time.Time, what string) {
	t.Helper()
	select {
	case <-p.done:
		t.Fatalf("chronos exited during start-up (%v); its log:\n%s", p.waitErr, tail(readFile(p.logPath), 60))
	default:
	}
	if time.Now().After(deadline) {
		t.Fatalf("chronos not ready within 120s (%s); its log:\n%s", what, tail(readFile(p.logPath), 60))
	}
}

// kill sends SIGKILL and waits.
func (p *chronosProc) kill(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop sends SIGTERM, waits up to 30 s, then SIGKILL. Idempotent. It logs
// the process's error-level lines, and its whole log if the test failed.
func (p *chronosProc) stop(t *testing.T) {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			t.Errorf("chronos (pid %d) did not stop within 30s of SIGTERM; killing it", p.cmd.Process.Pid)
			p.kill(t)
		}
	}
	log := readFile(p.logPath)
	if t.Failed() {
		t.Logf("chronos log (%s):\n%s", p.logPath, tail(log, 200))
		return
	}
	var errs []string
	for _, l := range strings.Split(string(log), "\n") {
		if strings.Contains(l, "level=ERROR") {
			errs = append(errs, l)
		}
	}
	if len(errs) > 0 {
		t.Logf("chronos logged %d errors, e.g.:\n%s", len(errs), strings.Join(errs[:min(len(errs), 10)], "\n"))
	}
}

func readFile(path string) []byte {
	b, _ := os.ReadFile(path)
	return b
}

func tail(b []byte, lines int) string {
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

// pythonWithConfluentKafka returns CHRONOS_FOREIGN_PYTHON, or the python of
// the venv that pyenv.sh creates (once) from requirements.txt.
func pythonWithConfluentKafka(t *testing.T) string {
	t.Helper()
	if py := os.Getenv("CHRONOS_FOREIGN_PYTHON"); py != "" {
		return py
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var stderr strings.Builder
	cmd := exec.CommandContext(ctx, "bash", "pyenv.sh")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pyenv.sh: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// streamLines sends a subprocess's output to the test log line by line.
func streamLines(t *testing.T, r io.Reader, wg *sync.WaitGroup) {
	defer wg.Done()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		t.Log(sc.Text())
	}
}
