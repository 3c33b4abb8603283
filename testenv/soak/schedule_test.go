package soak

import (
	"strings"
	"testing"
	"time"
)

// TestScheduleSeeded checks, for many seeds, that a seed always draws the
// same steps, that each round holds every kind once (a short run sees all
// of them), and that every parameter stays in its documented range.
func TestScheduleSeeded(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 200; seed++ {
		a, b := NewSchedule(seed, AllKinds), NewSchedule(seed, AllKinds)
		for round := 0; round < 3; round++ {
			seen := map[Kind]int{}
			for range AllKinds {
				sa, sb := a.Next(), b.Next()
				if sa != sb {
					t.Fatalf("seed %d: %+v then %+v", seed, sa, sb)
				}
				seen[sa.Kind]++
				checkStep(t, seed, sa)
			}
			for _, k := range AllKinds {
				if seen[k] != 1 {
					t.Fatalf("seed %d round %d: %s drawn %d times", seed, round, k, seen[k])
				}
			}
		}
	}
	// Different seeds give different schedules (almost surely).
	x, y := NewSchedule(1, AllKinds), NewSchedule(2, AllKinds)
	same := true
	for i := 0; i < 20; i++ {
		same = same && x.Next() == y.Next()
	}
	if same {
		t.Fatal("seeds 1 and 2 drew the same 20 steps")
	}
}

func checkStep(t *testing.T, seed uint64, s Step) {
	t.Helper()
	in := func(d, lo, hi time.Duration) bool { return d >= lo && d < hi }
	if !in(s.Gap, 3*time.Second, 12*time.Second) || s.Pick < 0 {
		t.Fatalf("seed %d: %+v", seed, s)
	}
	switch s.Kind {
	case Kill9:
		if !in(s.Hold, time.Second, 10*time.Second) {
			t.Fatalf("seed %d: %+v", seed, s)
		}
	case Stop:
		// Longer than the consumer group session timeout (10 s).
		if !in(s.Hold, 15*time.Second, 30*time.Second) {
			t.Fatalf("seed %d: %+v", seed, s)
		}
	case ClockJump:
		ok := false
		for _, o := range ClockOffsets {
			ok = ok || o == s.Offset
		}
		if !ok || !in(s.Hold, 10*time.Second, 30*time.Second) {
			t.Fatalf("seed %d: %+v", seed, s)
		}
	default:
		if s.Hold != 0 || s.Offset != 0 {
			t.Fatalf("seed %d: %+v", seed, s)
		}
	}
}

// TestScheduleKinds draws only the kinds asked for.
func TestScheduleKinds(t *testing.T) {
	t.Parallel()
	s := NewSchedule(7, []Kind{Kill9, Poison})
	for i := 0; i < 50; i++ {
		if k := s.Next().Kind; k != Kill9 && k != Poison {
			t.Fatalf("drew %s", k)
		}
	}
}

// TestConfigErrors reports every problem at once, and defaults the rest.
func TestConfigErrors(t *testing.T) {
	t.Parallel()
	_, err := (&Config{Kinds: []Kind{"nap"}, Instances: 1}).withDefaults()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"Bin", "KafkaScript", "WorkDir", "Instances 1", `"nap"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	c, err := (&Config{Bin: "b", KafkaScript: "k", WorkDir: "/w"}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Seed == 0 || c.Duration != 3*time.Minute || c.Instances != 3 || c.Partitions != 12 || c.Jobs != DefaultLoad ||
		len(c.Kinds) != len(AllKinds) || c.KafkaDir != "/w/kafka" || c.EarlyBound != time.Second {
		t.Fatalf("defaults: %+v", c)
	}
}
