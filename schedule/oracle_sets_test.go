package schedule

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// oracleSet is one case of the oracle's --sets output: several schedules
// in one zone (cron with a DST policy, or every in seconds), dates and
// ranges excluded, and the union's fires in [From, To) as a count, a
// SHA-256 of "unix\n" lines and the first three.
type oracleSet struct {
	Members []struct {
		Cron, Gap, Overlap string
		Every              int64
	}
	TZ     string
	Dates  []string
	Ranges [][2]int64
	From   int64
	To     int64
	Count  int
	SHA256 string
	Head   []int64
}

func (c oracleSet) spec(t *testing.T) Spec {
	t.Helper()
	var specs []Spec
	for _, m := range c.Members {
		s := Spec{Cron: m.Cron, TZ: c.TZ, DST: DST{Gap: m.Gap, Overlap: m.Overlap}.Normalize()}
		if m.Every > 0 {
			s = Spec{Every: time.Duration(m.Every) * time.Second, TZ: c.TZ}
		}
		specs = append(specs, s)
	}
	s := specs[0]
	s.Also = specs[1:]
	s.Exclude.TZ = c.TZ
	for _, d := range c.Dates {
		day, err := ParseDate(d)
		require.NoError(t, err)
		s.Exclude.Dates = append(s.Exclude.Dates, day)
	}
	for _, r := range c.Ranges {
		s.Exclude.Ranges = append(s.Exclude.Ranges, Range{From: time.Unix(r[0], 0), To: time.Unix(r[1], 0)})
	}
	return s
}

func checkOracleSets(t *testing.T, b []byte) {
	t.Helper()
	var f struct{ Sets []oracleSet }
	require.NoError(t, json.Unmarshal(b, &f))
	require.NotEmpty(t, f.Sets)
	for i, c := range f.Sets {
		s := mustParse(t, c.spec(t))
		h := sha256.New()
		var head []int64
		n := 0
		end := time.Unix(c.To, 0)
		for at := s.Next(time.Unix(c.From-1, 0)); !at.IsZero() && at.Before(end); at = s.Next(at) {
			u := at.Unix()
			h.Write(strconv.AppendInt(nil, u, 10))
			h.Write([]byte{'\n'})
			if n < 3 {
				head = append(head, u)
			}
			n++
		}
		if n != c.Count || hex.EncodeToString(h.Sum(nil)) != c.SHA256 {
			t.Errorf("set %d (%s, %s): %d fires, oracle %d; first %v, oracle %v", i, c.TZ, fmt.Sprint(c.Members), n, c.Count, head, c.Head)
		}
	}
}

// TestOracleSets compares several schedules with exclusions with the
// brute-force oracle's fixture: 8 sets in each of 5 zones (Lord Howe's
// 30-minute shift, Chatham's 02:45, Santiago's midnight) over 11 years,
// each 2 to 4 members (crons with calendar items under every DST policy,
// intervals), up to 200 random dates plus every date on which the zone's
// offset changes and each Christmas, and up to 20 ranges. Regenerate with
// `python3 schedule/testdata/oracle.py --sets > schedule/testdata/oracle_sets.json`.
func TestOracleSets(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/oracle_sets.json")
	require.NoError(t, err)
	checkOracleSets(t, b)
}

// TestOracleSetsRerun reruns the sets oracle on a sample (one zone, two
// years) so that the fixture cannot drift from the oracle's code.
func TestOracleSetsRerun(t *testing.T) {
	t.Parallel()
	py, err := exec.LookPath("python3")
	require.NoError(t, err, "python3 runs the schedule oracle (testdata/oracle.py)")
	out, err := exec.Command(py, "testdata/oracle.py", "--sets-sample").Output()
	if ee, ok := err.(*exec.ExitError); ok {
		err = fmt.Errorf("%w: %s", err, ee.Stderr)
	}
	require.NoError(t, err)
	checkOracleSets(t, out)
}
