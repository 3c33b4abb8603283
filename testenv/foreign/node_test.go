//go:build foreign

package foreign

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestForeignNodeClient runs node/chronos.test.js (node --test, kafkajs with
// no compression plugin) against a `chronos run` subprocess with its own
// topic prefix and the default producer settings.
func TestForeignNodeClient(t *testing.T) {
	nodeModules := nodeModulesWithKafkajs(t)
	prefix := "foreignnode" + randHex(4) + "."
	startChronos(t, prefix, t.TempDir(), 6)

	start := time.Now()
	cmd := exec.Command("node", "--test", "--test-reporter=spec", filepath.Join("node", "chronos.test.js"))
	cmd.Env = append(os.Environ(), "CHRONOS_TEST_BROKERS="+brokers(t), "CHRONOS_TOPIC_PREFIX="+prefix,
		"NODE_PATH="+nodeModules, "NO_COLOR=1")
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
		t.Fatalf("node --test chronos.test.js failed after %s: %v", time.Since(start).Round(time.Millisecond), err)
	}
	t.Logf("node --test passed in %s", time.Since(start).Round(time.Millisecond))
}

// nodeModulesWithKafkajs returns CHRONOS_FOREIGN_NODE_MODULES, or the
// node_modules that nodeenv.sh installs (once) from node/package-lock.json.
func nodeModulesWithKafkajs(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("CHRONOS_FOREIGN_NODE_MODULES"); dir != "" {
		return dir
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var stderr strings.Builder
	cmd := exec.CommandContext(ctx, "bash", "nodeenv.sh")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nodeenv.sh: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}
