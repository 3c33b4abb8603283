package history

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestDetailOfAPut: a put's change summary names what its schedule is made
// of, named calendars included (round 13b's "seen" list: they were left
// out, so two puts that differ only in their calendars read the same).
func TestDetailOfAPut(t *testing.T) {
	t.Parallel()
	lim := codecs.DefaultLimits()
	for js, want := range map[string]string{
		`{"v":1,"op":"put","job":{"every":"1m"}}`: "every 1m0s",
		`{"v":1,"op":"put","job":{"cron":"0 9 * * 1-5","tz":"Europe/Berlin","bucket":"b","exclude":{"dates":["2026-12-25"],"calendars":["de-holidays","acme.closures"]}}}`: "cron 0 9 * * 1-5 tz Europe/Berlin excluding 1 excluding calendars de-holidays,acme.closures bucket b",
		`{"v":1,"op":"put","job":{"every":"1h","exclude":{"calendars":["de-holidays"]}}}`:                                                                                  "every 1h0m0s excluding calendars de-holidays",
	} {
		cmd, err := codecs.DecodeCommand([]byte("j"), []byte(js), lim)
		require.NoError(t, err, js)
		require.Equal(t, want, detail(cmd), js)
	}
}
