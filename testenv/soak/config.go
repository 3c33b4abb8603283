package soak

import (
	"errors"
	"fmt"
	"time"
)

// Config is one soak run. The zero value of every field but Bin,
// KafkaScript and WorkDir means its default.
type Config struct {
	// Seed of the fault schedule (0: drawn from the time; the one used is
	// in Result.Seed and printed first).
	Seed uint64
	// Duration of the fault phase (default 3 min). Load runs during it; the
	// drain and the audit come after it.
	Duration time.Duration
	// Bin is the chronos binary (required).
	Bin string
	// KafkaScript is the path of testenv/kafka/kafka.sh (required).
	KafkaScript string
	// KafkaDir is the broker's directory (default WorkDir/kafka). A broker
	// already running there is reused; one the harness started is stopped
	// at the end.
	KafkaDir string
	// WorkDir holds the instances' data dirs, logs and clock offset files
	// (required).
	WorkDir string
	// Instances at the start (default 3). Scaling keeps between
	// Instances-1 and Instances+1 running.
	Instances int
	// Partitions of the sharded topics (default 12).
	Partitions int32
	// Jobs is the steady load (default DefaultLoad).
	Jobs Load
	// Kinds are the faults to draw from (default AllKinds).
	Kinds []Kind
	// EarlyBound is how early a fire may be dispatched when one instance's
	// clock runs ahead: chronos run's --clock-max-ahead (default 1 s, its
	// default). A fire read earlier than that before its scheduled_at is a
	// failure; any early fire is counted.
	EarlyBound time.Duration
	// Logf receives the progress lines (default: discarded).
	Logf func(format string, args ...any)
}

// Load is the steady load: recurring jobs put at the start, one-shots put
// while the faults run.
type Load struct {
	Every1s, Every5s, Every10s int
	// OneShotsPerSecond are one-shot jobs put each second, due 3-40 s later.
	OneShotsPerSecond int
}

// DefaultLoad is 200 jobs every 1 s, 500 every 5 s, 500 every 10 s (350
// fires/s) and 5 one-shots a second: moderate on a shared 2-core machine.
var DefaultLoad = Load{Every1s: 200, Every5s: 500, Every10s: 500, OneShotsPerSecond: 5}

// ErrConfig is wrapped by every Config problem.
var ErrConfig = errors.New("soak: config")

func (c *Config) withDefaults() (Config, error) {
	d := *c
	if d.Seed == 0 {
		d.Seed = uint64(time.Now().UnixNano())
	}
	if d.Duration == 0 {
		d.Duration = 3 * time.Minute
	}
	if d.Instances == 0 {
		d.Instances = 3
	}
	if d.Partitions == 0 {
		d.Partitions = 12
	}
	if d.Jobs == (Load{}) {
		d.Jobs = DefaultLoad
	}
	if len(d.Kinds) == 0 {
		d.Kinds = AllKinds
	}
	if d.EarlyBound == 0 {
		d.EarlyBound = time.Second
	}
	if d.Logf == nil {
		d.Logf = func(string, ...any) {}
	}
	if d.KafkaDir == "" && d.WorkDir != "" {
		d.KafkaDir = d.WorkDir + "/kafka"
	}
	var errs []error
	if d.Bin == "" {
		errs = append(errs, errors.New("Bin is required"))
	}
	if d.KafkaScript == "" {
		errs = append(errs, errors.New("KafkaScript is required"))
	}
	if d.WorkDir == "" {
		errs = append(errs, errors.New("WorkDir is required"))
	}
	if d.Instances < 2 {
		errs = append(errs, fmt.Errorf("Instances %d, want >= 2", d.Instances))
	}
	if d.Duration < 0 {
		errs = append(errs, fmt.Errorf("Duration %s", d.Duration))
	}
	for _, k := range d.Kinds {
		if !k.valid() {
			errs = append(errs, fmt.Errorf("unknown fault kind %q", k))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return d, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return d, nil
}
