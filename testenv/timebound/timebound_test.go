package timebound

import (
	"testing"
	"time"
)

// TestScaled checks the factor against the build: the race detector's
// build sets raceEnabled in this package's race_*_test.go files.
func TestScaled(t *testing.T) {
	want := time.Second
	if raceEnabled {
		want = 10 * time.Second
	}
	if got := Scaled(time.Second); got != want {
		t.Fatalf("Scaled(1s) = %v, want %v (race detector: %v)", got, want, raceEnabled)
	}
}
