package soak

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chronos-scheduler/chronos/testenv/audit"
)

// TestResultErr fails a run on each thing that must not happen, and on
// nothing else.
func TestResultErr(t *testing.T) {
	t.Parallel()
	ok := Result{Early: 40, MaxEarly: 900 * time.Millisecond, EarlyBound: time.Second,
		Report: audit.Report{Expected: 10, Delivered: 10, Duplicates: 3, DuplicateIDs: 1}}
	if err := ok.Err(); err != nil {
		t.Fatalf("early within the bound and identical duplicates fail the run: %v", err)
	}
	for name, c := range map[string]struct {
		r    Result
		want string
	}{
		"missing":      {Result{Report: audit.Report{Missing: []string{"soak-e1s-00001@x"}}}, "1 missing"},
		"early":        {Result{Early: 2, EarlyBeyond: 1, MaxEarly: 15 * time.Second, EarlyBound: time.Second}, "1 fires dispatched more than 1s before"},
		"poison fired": {Result{PoisonFires: map[string]int{"poison-wrong-partition-0": 3}}, "poison-wrong-partition-0 fired 3"},
		"not ready":    {Result{NotReady: []string{"i1: /readyz not 200"}}, "i1: /readyz not 200"},
		"undecodable":  {Result{Undecodable: 2}, "2 undecodable"},
	} {
		err := c.r.Err()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one with %q", name, err, c.want)
		}
	}
	s := Result{Seed: 42, Faults: map[Kind]int{Kill9: 2}}.Summary()
	for _, want := range []string{"SOAK seed=42", "kill9=2", "sigstop=0"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
}

// TestProcessorStops checks that the poison watch finds the processor
// stops an instance logged after its mark, and only those.
func TestProcessorStops(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chronos.log")
	before := `time=2026-12-01T18:22:40.255Z level=ERROR msg="processor stopped; restarting" group=g err="member not known"` + "\n"
	after := `time=2026-12-01T18:23:40.255Z level=INFO msg="rebuilt due index" group=scheduler` + "\n" +
		`time=2026-12-01T18:23:41.255Z level=ERROR msg="processor stopped; restarting" group=g err="poison"` + "\n"
	if err := os.WriteFile(path, []byte(before+after), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := processorStops(path, 0); len(got) != 2 {
		t.Fatalf("from 0: %q, want both stops", got)
	}
	got, _ := processorStops(path, int64(len(before)))
	if len(got) != 1 || !strings.Contains(got[0], `err="poison"`) {
		t.Fatalf("from the mark: %q, want the stop after it", got)
	}
	if got, _ := processorStops(path, int64(len(before+after))); len(got) != 0 {
		t.Fatalf("from the end: %q, want none", got)
	}
	if got, _ := processorStops(filepath.Join(t.TempDir(), "none"), 0); got != nil {
		t.Fatalf("no log: %q", got)
	}
}

// TestProcessorStopsFenced checks that a stop whose every failed message
// is the freeze fence (a SIGSTOP's late consequence) is set apart, and
// that one with any other failure, or none named, still counts.
func TestProcessorStopsFenced(t *testing.T) {
	frozen := `* error processing message (partition=5): panic in callback: scheduler: ` + frozenText + `; its partitions may have moved`
	other := `* error processing message (partition=6): panic in callback: decode: bad record`
	lines := []string{
		`level=ERROR msg="processor stopped; restarting" group=g err="2 errors occurred:\n\t* Error closing consumer group: member not known\n\t` + frozen + `\n\t` + frozen + `"`,
		`level=ERROR msg="processor stopped; restarting" group=g err="2 errors occurred:\n\t` + frozen + `\n\t` + other + `"`,
		`level=ERROR msg="processor stopped; restarting" group=g err="member not known"`,
	}
	path := filepath.Join(t.TempDir(), "chronos.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stops, fenced := processorStops(path, 0)
	if len(fenced) != 1 || fenced[0] != lines[0] {
		t.Errorf("fenced %q, want only the first line", fenced)
	}
	if len(stops) != 2 || stops[0] != lines[1] || stops[1] != lines[2] {
		t.Errorf("stops %q, want the second and third lines", stops)
	}
}
