package scheduler

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// adv28Matrix runs a share of one of adversary round 28's matrix tests
// (adversary28_*_test.go): each case is a history run twice, with and
// without a handover, and all of them together took 525 s on 2 cores
// (2026-12-03, every case passing). By default every 8th case runs (every
// 40th with -short, as under -race in CI), counted in the test's own
// order from an offset that changes every day, so successive runs cover
// the matrix; the test logs which. CHRONOS_ADV28_ALL=1 runs every case,
// CHRONOS_ADV28_OFFSET=N picks the offset (a failure's log names it):
//
//	CHRONOS_ADV28_ALL=1 go test -count=1 -run TestAdv28 ./processors/scheduler/
type adv28Matrix struct {
	names []string
	fs    []func(t *testing.T)
}

// run adds a case; flush, deferred by the test, runs the share.
func (m *adv28Matrix) run(_ *testing.T, name string, f func(t *testing.T)) {
	m.names = append(m.names, name)
	m.fs = append(m.fs, f)
}

func (m *adv28Matrix) flush(t *testing.T) {
	t.Helper()
	n := len(m.names)
	if n == 0 {
		t.Fatal("no cases")
	}
	every := 8
	if testing.Short() {
		every = 40
	}
	if os.Getenv("CHRONOS_ADV28_ALL") != "" {
		every = 1
	}
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
