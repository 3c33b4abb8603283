//go:build soak

package soak

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var (
	flagDuration = flag.Duration("soak.duration", 3*time.Minute, "fault phase of TestSoak (CHRONOS_SOAK_DURATION)")
	flagSeed     = flag.Uint64("soak.seed", 0, "seed of TestSoak's fault schedule (0: from the time; CHRONOS_SOAK_SEED)")
	flagKinds    = flag.String("soak.faults", "", "comma-separated fault kinds (empty: all; CHRONOS_SOAK_FAULTS)")
	flagKafkaDir = flag.String("soak.kafka-dir", "", "broker dir: reuse the broker running there (empty: a fresh one; CHRONOS_SOAK_KAFKA_DIR)")
	flagKeep     = flag.Bool("soak.keep", false, "keep the work dir (logs, data dirs) and print its path")
)

// envOr sets a flag from its environment variable unless it was given.
func envOr(t *testing.T, name, env string) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	if v := os.Getenv(env); v != "" && !set {
		if err := flag.Set(name, v); err != nil {
			t.Fatalf("%s=%q: %v", env, v, err)
		}
	}
}

// TestSoak runs the randomized fault soak on Apache Kafka (see the package
// comment) and fails on any missing, unexpected or early fire, on any fire
// of a poison record and on an instance that does not come back ready.
func TestSoak(t *testing.T) {
	envOr(t, "soak.duration", "CHRONOS_SOAK_DURATION")
	envOr(t, "soak.seed", "CHRONOS_SOAK_SEED")
	envOr(t, "soak.faults", "CHRONOS_SOAK_FAULTS")
	envOr(t, "soak.kafka-dir", "CHRONOS_SOAK_KAFKA_DIR")
	work := t.TempDir()
	if *flagKeep {
		var err error
		if work, err = os.MkdirTemp("", "chronos-soak-"); err != nil {
			t.Fatal(err)
		}
		t.Logf("work dir (kept): %s", work)
	}
	bin := filepath.Join(work, "chronos")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/chronos-scheduler/chronos/cmd/chronos").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/chronos: %v\n%s", err, out)
	}
	script, err := filepath.Abs("../kafka/kafka.sh")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []Kind
	for _, k := range strings.Split(*flagKinds, ",") {
		if k = strings.TrimSpace(k); k != "" {
			kinds = append(kinds, Kind(k))
		}
	}
	cfg := Config{Seed: *flagSeed, Duration: *flagDuration, Bin: bin, KafkaScript: script, KafkaDir: *flagKafkaDir,
		WorkDir: work, Kinds: kinds, Logf: t.Logf}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + res.Summary())
	for _, l := range res.Log {
		t.Log("fault: " + l)
	}
	if err := res.Err(); err != nil {
		if !*flagKeep {
			for _, in := range dirs(work) {
				t.Logf("--- %s (tail)\n%s", in, tailFile(in, 40))
			}
		}
		// The verdict and the figures come last: CI shows the tail of the
		// output, and the instances' logs above would push them out of it.
		t.Log("\n" + res.Summary())
		t.Errorf("soak seed %d: %v", res.Seed, err)
	}
}

func dirs(work string) []string {
	logs, _ := filepath.Glob(filepath.Join(work, "i*", "chronos.log"))
	return logs
}
