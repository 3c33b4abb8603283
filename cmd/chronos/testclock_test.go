package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestTestClock(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	near := func(t *testing.T, now func() time.Time, off time.Duration) bool {
		t.Helper()
		d := now().Sub(time.Now()) - off
		return d > -time.Second && d < time.Second
	}

	t.Setenv(testClockEnv, "")
	now, err := testClock(log)
	if err != nil || now != nil {
		t.Fatalf("unset: clock set %v, err %v (want the real clock: nil)", now != nil, err)
	}

	t.Setenv(testClockEnv, "-90s")
	if now, err = testClock(log); err != nil || !near(t, now, -90*time.Second) {
		t.Fatalf("fixed: err %v", err)
	}

	t.Setenv(testClockEnv, "ninety")
	if _, err = testClock(log); err == nil {
		t.Fatal("a bad duration is accepted")
	}

	path := filepath.Join(t.TempDir(), "offset")
	t.Setenv(testClockEnv, "@"+path)
	if now, err = testClock(log); err != nil || !near(t, now, 0) {
		t.Fatalf("missing file: err %v, want offset 0", err)
	}
	for _, off := range []time.Duration{time.Hour, -2 * time.Minute, 0} {
		if err := os.WriteFile(path, []byte(off.String()+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for !near(t, now, off) {
			if time.Now().After(deadline) {
				t.Fatalf("the clock did not follow the file to %s", off)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
