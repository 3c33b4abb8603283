//go:build foreign

package foreign

import (
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// TestForeignPythonClient runs test_foreign.py (pytest, confluent-kafka)
// against a `chronos run` subprocess with its own topic prefix.
func TestForeignPythonClient(t *testing.T) {
	py := pythonWithConfluentKafka(t)
	prefix := "foreign" + randHex(4) + "."
	p := startChronos(t, prefix, t.TempDir(), 6)

	start := time.Now()
	cmd := exec.Command(py, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-s", "test_foreign.py")
	cmd.Env = append(os.Environ(), "CHRONOS_TEST_BROKERS="+brokers(t), "CHRONOS_TOPIC_PREFIX="+prefix, "CHRONOS_API="+p.httpURL,
		"PYTHONDONTWRITEBYTECODE=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go streamLines(t, stdout, &wg)
	wg.Wait()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("pytest test_foreign.py failed after %s: %v", time.Since(start).Round(time.Millisecond), err)
	}
	t.Logf("pytest passed in %s", time.Since(start).Round(time.Millisecond))
}
