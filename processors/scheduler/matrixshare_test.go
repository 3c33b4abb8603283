package scheduler

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// matrixShare runs a share of a matrix test's cases: adversary round 28's
// (adversary28_*_test.go, each case a history run twice, with and without
// a handover; all of them together took 525 s on 2 cores, 2026-12-03,
// every case passing) and round 27's TestAdv27AdvancesDuringRestore (31 s,
// 306 s under -race). A run takes every every-th case (short under -short,
// raceShort under -race -short: the harness runs the scheduler on one
// goroutine, so the race detector has little to find there and slows it
// about ten times), counted in the test's own order from an offset that
// changes every day, so successive runs cover the matrix; the test logs
// which. CHRONOS_ADV28_ALL=1 runs every case, CHRONOS_ADV28_OFFSET=N picks
// the offset (a failure's log names it); both are named for the round that
// brought them and apply to every matrixShare:
//
//	CHRONOS_ADV28_ALL=1 go test -count=1 -run 'TestAdv28|TestAdv27' ./processors/scheduler/
//
// The zero value is round 28's share: every 8th case, every 40th with
// -short, every 80th with -race -short.
type matrixShare struct {
	every, short, raceShort int

	names []string
	fs    []func(t *testing.T)
}

// run adds a case; flush, deferred by the test, runs the share.
func (m *matrixShare) run(_ *testing.T, name string, f func(t *testing.T)) {
	m.names = append(m.names, name)
	m.fs = append(m.fs, f)
}

// stride is how many cases apart the ones this run takes are.
func (m *matrixShare) stride() int {
	if os.Getenv("CHRONOS_ADV28_ALL") != "" {
		return 1
	}
	every, short, raceShort := m.every, m.short, m.raceShort
	if every == 0 && short == 0 && raceShort == 0 {
		every, short, raceShort = 8, 40, 80
	}
	switch {
	case simRace && testing.Short():
		return max(raceShort, 1)
	case testing.Short():
		return max(short, 1)
	}
	return max(every, 1)
}

func (m *matrixShare) flush(t *testing.T) {
	t.Helper()
	n := len(m.names)
	if n == 0 {
		t.Fatal("no cases")
	}
	every := m.stride()
	offset := time.Now().UTC().YearDay()
	if v, err := strconv.Atoi(os.Getenv("CHRONOS_ADV28_OFFSET")); err == nil && v >= 0 {
		offset = v
	}
	offset %= every
	ran := 0
	for i := offset; i < n; i += every {
		t.Run(m.names[i], m.fs[i])
		ran++
	}
	if ran == 0 { // fewer cases than every: one of them
		t.Run(m.names[offset%n], m.fs[offset%n])
		ran++
	}
	t.Logf("ran %d of %d cases: every %d-th from case %d (CHRONOS_ADV28_OFFSET=%d; CHRONOS_ADV28_ALL=1 for all)", ran, n, every, offset, offset)
}
