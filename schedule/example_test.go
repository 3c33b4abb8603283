package schedule_test

import (
	"fmt"
	"time"

	"github.com/chronos-scheduler/chronos/schedule"
)

func Example() {
	// 02:30 every day in New York. On 2026-03-08 02:30 does not exist
	// (clocks jump from 02:00 to 03:00), so that day fires at 03:00 EDT.
	s, err := schedule.Parse(schedule.Spec{Cron: "30 2 * * *", TZ: "America/New_York"})
	if err != nil {
		panic(err)
	}
	t := time.Date(2026, 3, 7, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 3; i++ {
		t = s.Next(t)
		fmt.Println(t.Format(time.RFC3339), "=", t.UTC().Format(time.RFC3339))
	}

	_, err = schedule.Parse(schedule.Spec{Cron: "* * *"})
	fmt.Println(err)

	// Output:
	// 2026-03-07T02:30:00-05:00 = 2026-03-07T07:30:00Z
	// 2026-03-08T03:00:00-04:00 = 2026-03-08T07:00:00Z
	// 2026-03-09T02:30:00-04:00 = 2026-03-09T06:30:00Z
	// schedule: cron: expected 5 or 6 fields, got 3
}

func ExampleSpec_every() {
	start := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	s, err := schedule.Parse(schedule.Spec{Every: 90 * time.Minute, Start: start})
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Next(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)))
	// Output: 2026-05-01 13:00:00 +0000 UTC
}
