package store_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/chronos-scheduler/chronos/store"
	"github.com/cockroachdb/pebble/v2/vfs"
)

func Example() {
	// Values are "RFC3339 due time;bucket" in this example.
	indexer := func(_ store.Reader, _ string, value []byte) (store.Entry, error) {
		due, bucket, _ := strings.Cut(string(value), ";")
		t, err := time.Parse(time.RFC3339, due)
		if err != nil {
			return store.Entry{}, err
		}
		return store.Entry{Due: t, Bucket: bucket}, nil
	}
	s := store.New("/shard-0", store.Options{Indexer: indexer, FS: vfs.NewMem()})
	if err := s.Open(); err != nil { // goka calls Open through the Builder
		panic(err)
	}
	defer s.Close()

	_ = s.Set("job-b", []byte("2024-01-01T10:00:00Z;tenant-1"))
	_ = s.Set("job-a", []byte("2024-01-01T10:00:00Z;tenant-2"))
	_ = s.Set("job-c", []byte("2024-01-01T12:00:00Z;tenant-1"))

	now := time.Date(2024, 1, 1, 11, 0, 0, 0, time.UTC)
	due, _ := s.DueUpTo(now, store.Due{}, 100)
	for _, d := range due {
		fmt.Println("due:", d.At.Format(time.Kitchen), d.Key)
	}

	// Reschedule the fired jobs one day later; remember the scan position.
	var moves []store.Move
	for _, d := range due {
		moves = append(moves, store.Move{Key: d.Key, To: d.At.Add(24 * time.Hour)})
	}
	_ = s.ApplyMoves(moves, now)

	next, _ := s.DueOf("job-a")
	fmt.Println("job-a next:", next.Format(time.RFC3339))
	keys, _ := s.BucketKeys("tenant-1", "", 10)
	fmt.Println("tenant-1:", keys)
	// Output:
	// due: 10:00AM job-a
	// due: 10:00AM job-b
	// job-a next: 2024-01-02T10:00:00Z
	// tenant-1: [job-b job-c]
}
