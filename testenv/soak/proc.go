package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// instance is one `chronos run` slot: a data dir, an HTTP port and a clock
// offset file that survive its restarts. Owned by the harness goroutine.
type instance struct {
	name       string
	dir        string // data dir
	logPath    string
	offsetPath string // CHRONOS_TEST_CLOCK_OFFSET=@offsetPath
	port       int
	args       []string // run flags besides --data-dir and --http-addr
	bin        string

	cmd  *exec.Cmd
	done chan struct{} // closed when cmd exited
	err  error         // cmd.Wait's result, once done
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func newInstance(workDir, name, bin string, args []string) (*instance, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(workDir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &instance{name: name, dir: filepath.Join(dir, "data"), logPath: filepath.Join(dir, "chronos.log"),
		offsetPath: filepath.Join(dir, "clock-offset"), port: port, args: args, bin: bin}, nil
}

func (in *instance) url() string { return fmt.Sprintf("http://127.0.0.1:%d", in.port) }

// start starts the process (its log appended to logPath).
func (in *instance) start() error {
	logf, err := os.OpenFile(in.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "=== soak: start %s at %s\n", in.name, time.Now().UTC().Format(time.RFC3339Nano))
	args := append([]string{"run", "--insecure-no-auth", "--data-dir", in.dir, "--http-addr", fmt.Sprintf("127.0.0.1:%d", in.port)}, in.args...)
	cmd := exec.Command(in.bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "CHRONOS_TEST_CLOCK_OFFSET=@"+in.offsetPath)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	in.cmd, in.done, in.err = cmd, make(chan struct{}), nil
	done := in.done
	go func() {
		err := cmd.Wait()
		logf.Close()
		in.err = err
		close(done)
	}()
	return nil
}

func (in *instance) alive() bool {
	if in.cmd == nil {
		return false
	}
	select {
	case <-in.done:
		return false
	default:
		return true
	}
}

func (in *instance) signal(s syscall.Signal) error {
	if !in.alive() {
		return fmt.Errorf("soak: %s is not running", in.name)
	}
	return in.cmd.Process.Signal(s)
}

// kill sends SIGKILL and waits for the exit.
func (in *instance) kill() {
	if in.alive() {
		_ = in.cmd.Process.Signal(syscall.SIGCONT) // a stopped process dies as well, but be plain
		_ = in.cmd.Process.Signal(syscall.SIGKILL)
		<-in.done
	}
}

// stop sends SIGTERM (and SIGCONT) and waits up to timeout, then SIGKILL.
// It reports whether the exit was clean (in time).
func (in *instance) stop(timeout time.Duration) bool {
	if !in.alive() {
		return true
	}
	_ = in.cmd.Process.Signal(syscall.SIGCONT)
	_ = in.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-in.done:
		return true
	case <-time.After(timeout):
		in.kill()
		return false
	}
}

// setOffset makes the instance's clock run offset ahead of the real one (it
// reads the file at most 100 ms later).
func (in *instance) setOffset(offset time.Duration) error {
	return os.WriteFile(in.offsetPath, []byte(offset.String()+"\n"), 0o644)
}

// errNotReady is wrapped when an instance is not ready in time.
var errNotReady = errors.New("soak: instance not ready")

// waitReady polls /readyz until 200, the process exits or timeout passes.
func (in *instance) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := "no answer"
	for {
		if !in.alive() {
			return fmt.Errorf("soak: %s exited (%v); log tail:\n%s", in.name, in.err, tailFile(in.logPath, 30))
		}
		err := in.readyOnce(ctx)
		if err == nil {
			return nil
		}
		last = err.Error()
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s after %s: %s", errNotReady, in.name, timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// readyOnce asks /readyz once: nil for 200.
func (in *instance) readyOnce(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, in.url()+"/readyz", nil)
	if err != nil {
		return err
	}
	// Generous: on an overloaded machine a healthy instance can take
	// seconds to answer.
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s", resp.Status, strings.TrimSpace(string(b)))
	}
	return nil
}

// tailFile returns the last n lines of a file.
func tailFile(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
