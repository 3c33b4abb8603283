package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/bench"
)

// TestBenchReportsEveryFire runs `chronos bench` end to end on its embedded
// broker (a small version of the documented 100k-job run) and checks the
// report: every expected fire arrived once, and both raw ceilings were
// measured.
func TestBenchReportsEveryFire(t *testing.T) {
	t.Parallel()
	out, err := run(t, "bench", "--jobs", "3000", "--every", "10s", "--duration", "3s", "-o", "json")
	require.NoError(t, err)
	var rep bench.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, 3000, rep.Jobs)
	require.Positive(t, rep.Expected)
	require.Equal(t, rep.Expected, rep.Fires, "every fire of the window arrived")
	require.Zero(t, rep.Missed)
	require.Zero(t, rep.Duplicates)
	require.Len(t, rep.Slices, 1)
	require.Positive(t, rep.RawPerSecond)
	require.Positive(t, rep.RawGokaPerSecond)
	require.Positive(t, rep.RegistrationRate)
	require.NotNil(t, rep.StoreBytesPerFire, "the scheduler's stores' writes are measured")
	require.Positive(t, rep.StoreBytesPerFire.WAL, "every fire moves an index entry, logged in the WAL")
	require.NotNil(t, rep.StoresHeld, "the stores' holds are sampled")
	require.Zero(t, rep.StoresHeld.FloodMax, "3,000 jobs are far from the tables a flood's hold needs (4 MiB)")
	require.Nil(t, rep.StoresHeld.FloodFirst)
}

// TestBenchPassesInstanceFlags: bench builds its instance from the same
// flags as dev and run, so --max-payload reaches the scheduler: jobs whose
// payload is over it are rejected and never fire, the same jobs under it
// all fire. (bench used to accept --max-payload and ignore it.)
func TestBenchPassesInstanceFlags(t *testing.T) {
	t.Parallel()
	bench := func(maxPayload string) bench.Report {
		out, err := run(t, "bench", "--jobs", "20", "--aligned", "--duration", "4s", "--payload-bytes", "2048",
			"--max-payload", maxPayload, "-o", "json")
		require.NoError(t, err)
		var rep bench.Report
		require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
		require.EqualValues(t, 20, rep.Expected, out)
		return rep
	}
	rep := bench("1024")
	require.Zero(t, rep.Fires, "a payload over --max-payload is rejected")
	require.EqualValues(t, 20, rep.Missed)
	rep = bench("4096")
	require.EqualValues(t, 20, rep.Fires, "a payload under --max-payload fires")
	require.Zero(t, rep.Missed)
}

// TestBenchBucketModeFiresEveryMember: --bucket registers every job in one
// bucket with its own schedule far off, and one bucket trigger fires them
// all: each once, measured from the trigger.
func TestBenchBucketModeFiresEveryMember(t *testing.T) {
	t.Parallel()
	out, err := run(t, "bench", "--jobs", "2000", "--bucket", "--duration", "20s", "--fanout-chunk", "300", "-o", "json")
	require.NoError(t, err)
	var rep bench.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, bench.ModeBucket, rep.Mode)
	require.EqualValues(t, 2000, rep.Expected)
	require.EqualValues(t, 2000, rep.Fires, "every member fired")
	require.Zero(t, rep.Missed)
	require.Zero(t, rep.Duplicates)
	require.Positive(t, rep.Drain)
	_, err = run(t, "bench", "--jobs", "1", "--bucket", "--aligned")
	require.ErrorContains(t, err, "choose one")
}
