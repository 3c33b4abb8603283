package soak

import (
	"math/rand/v2"
	"time"
)

// Kind is a kind of fault.
type Kind string

// The fault kinds.
const (
	// Kill9 kills one instance with SIGKILL and restarts it on the same
	// data dir and port after Step.Hold.
	Kill9 Kind = "kill9"
	// Stop freezes one instance with SIGSTOP for Step.Hold (longer than the
	// group session timeout, 10 s: its partitions move) and then sends
	// SIGCONT: the instance wakes up with partitions it no longer owns.
	Stop Kind = "sigstop"
	// ScaleUp starts one more instance on a fresh data dir (ScaleDown
	// instead when Instances+1 already run).
	ScaleUp Kind = "scale-up"
	// ScaleDown stops one instance with SIGTERM for good (ScaleUp instead
	// when only Instances-1 run).
	ScaleDown Kind = "scale-down"
	// BrokerRestart stops the broker and starts it again on the same ports
	// and log dir (kafka.sh restart).
	BrokerRestart Kind = "broker-restart"
	// ClockJump shifts one running instance's clock by Step.Offset for
	// Step.Hold, then back.
	ClockJump Kind = "clock-jump"
	// Poison produces bad records to chronos-jobs: junk bytes, a ~990 kB
	// junk value, a ~990 kB put (payload too large), a tombstone, a null
	// key, and a put on the wrong partition.
	Poison Kind = "poison"
)

// AllKinds are every fault kind, the default of Config.Kinds.
var AllKinds = []Kind{Kill9, Stop, ScaleUp, ScaleDown, BrokerRestart, ClockJump, Poison}

func (k Kind) valid() bool {
	for _, a := range AllKinds {
		if k == a {
			return true
		}
	}
	return false
}

// ClockOffsets are the clock jumps drawn from: forward ones small and
// larger than any sane skew bound, backward ones.
var ClockOffsets = []time.Duration{2 * time.Second, 15 * time.Second, 60 * time.Second, -10 * time.Second, -2 * time.Minute}

// Step is one drawn fault.
type Step struct {
	Kind Kind
	// Gap is the quiet time before the fault.
	Gap time.Duration
	// Pick chooses the target among the running instances (modulo their
	// number).
	Pick int
	// Hold is how long the fault lasts (Kill9: down time; Stop: frozen
	// time; ClockJump: time shifted).
	Hold time.Duration
	// Offset is the clock jump of ClockJump.
	Offset time.Duration
}

// Schedule draws fault steps from a seed: rounds of every kind in a
// shuffled order, so a short run sees each kind early. Not safe for
// concurrent use.
type Schedule struct {
	rng   *rand.Rand
	kinds []Kind
	round []Kind
}

// NewSchedule returns the schedule of seed over kinds.
func NewSchedule(seed uint64, kinds []Kind) *Schedule {
	return &Schedule{rng: rand.New(rand.NewPCG(seed, 0x50a4c0de)), kinds: kinds}
}

// Next draws the next step.
func (s *Schedule) Next() Step {
	if len(s.round) == 0 {
		s.round = append([]Kind(nil), s.kinds...)
		s.rng.Shuffle(len(s.round), func(i, j int) { s.round[i], s.round[j] = s.round[j], s.round[i] })
	}
	k := s.round[0]
	s.round = s.round[1:]
	st := Step{Kind: k, Gap: s.between(3*time.Second, 12*time.Second), Pick: s.rng.IntN(1 << 16)}
	switch k {
	case Kill9:
		st.Hold = s.between(time.Second, 10*time.Second)
	case Stop:
		st.Hold = s.between(15*time.Second, 30*time.Second)
	case ClockJump:
		st.Hold = s.between(10*time.Second, 30*time.Second)
		st.Offset = ClockOffsets[s.rng.IntN(len(ClockOffsets))]
	}
	return st
}

// between draws a duration in [lo, hi), to the millisecond.
func (s *Schedule) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(s.rng.Int64N(int64((hi-lo)/time.Millisecond)))*time.Millisecond
}
