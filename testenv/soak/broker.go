package soak

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// broker is the Apache Kafka broker of testenv/kafka/kafka.sh in one dir.
type broker struct {
	script, dir string
	addr        string // host:port
	owned       bool   // started by this harness (stopped at the end)
}

// startTimeout is how long kafka.sh waits for the broker to be ready: long,
// because a JVM starts slowly on a loaded machine and a broker that fails
// to come back ends the soak's usefulness.
const startTimeout = "300"

func (b *broker) run(cmd string) (string, error) {
	c := exec.Command(b.script, cmd, b.dir)
	c.Env = append(os.Environ(), "CHRONOS_KAFKA_START_TIMEOUT="+startTimeout)
	out, err := c.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		return "", fmt.Errorf("soak: kafka.sh %s %s: %w\n%s", cmd, b.dir, err, stderr)
	}
	return strings.TrimSpace(string(out)), nil
}

// start starts the broker, or reuses the one already running in dir.
func (b *broker) start() error {
	if _, err := os.Stat(filepath.Join(b.dir, "pid")); err != nil {
		b.owned = true
	}
	addr, err := b.run("start")
	b.addr = addr
	return err
}

// restart stops the broker and starts it again keeping its log dir. A
// restart that fails is tried twice more (kafka.sh restart of a stopped
// broker just starts it), so the run goes on. It returns the errors of the
// failed tries (retried) and an error only if every try failed: a broker that
// came up on a later try is the machine's trouble (kafka.sh gives up after
// 300 s at load averages of 40), not a finding about Chronos.
func (b *broker) restart() (retried []error, err error) {
	for try := 0; try < 3; try++ {
		addr, err := b.run("restart")
		if err == nil && addr != b.addr {
			err = fmt.Errorf("soak: broker came back at %s, not %s", addr, b.addr)
		}
		if err == nil {
			return retried, nil
		}
		retried = append(retried, err)
	}
	return retried, retried[0]
}

// stop stops the broker if this harness started it.
func (b *broker) stop() error {
	if !b.owned {
		return nil
	}
	_, err := b.run("stop")
	return err
}
