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

// oracleCase is one line of the brute-force oracle's output
// (testdata/oracle.py): the fires of Cron in TZ under a DST policy, in
// [From, To), as a count, a SHA-256 of "unix\n" lines, and the first three.
type oracleCase struct {
	Cron, TZ, Gap, Overlap string
	From, To               int64
	Count                  int
	SHA256                 string
	Head                   []int64
}

// checkOracle computes each case with this package and compares.
func checkOracle(t *testing.T, cases []oracleCase) {
	t.Helper()
	require.NotEmpty(t, cases)
	for _, c := range cases {
		s, err := Parse(Spec{Cron: c.Cron, TZ: c.TZ, DST: DST{Gap: c.Gap, Overlap: c.Overlap}})
		require.NoError(t, err, "%q", c.Cron)
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
			t.Errorf("%q tz=%s gap=%s overlap=%s: %d fires, oracle %d; first %v, oracle %v (python3 schedule/testdata/oracle.py --dump %q %s %s %s lists the oracle's)",
				c.Cron, c.TZ, c.Gap, c.Overlap, n, c.Count, head, c.Head, c.Cron, c.TZ, c.Gap, c.Overlap)
		}
	}
}

func readOracle(t *testing.T, b []byte) []oracleCase {
	t.Helper()
	var f struct{ Cases []oracleCase }
	require.NoError(t, json.Unmarshal(b, &f))
	return f.Cases
}

// TestOracleFixture compares calendar items and every DST policy with the
// brute-force oracle's fixture: 54 expressions (24 chosen, 30 generated) in
// 5 zones (Lord Howe's 30-minute shift, Chatham's 02:45, Santiago's
// midnight) over 11 years, 6 policies each. Regenerate the fixture with
// `python3 schedule/testdata/oracle.py > schedule/testdata/oracle.json`
// (about a minute) when the zone database or the generator changes.
func TestOracleFixture(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/oracle.json")
	require.NoError(t, err)
	cases := readOracle(t, b)
	if testing.Short() {
		// -short (the race run) checks every fourth case.
		var some []oracleCase
		for i := 0; i < len(cases); i += 4 {
			some = append(some, cases[i])
		}
		cases = some
	}
	checkOracle(t, cases)
}

// TestOracleRerun reruns the oracle itself on a sample (one zone, two years,
// 12 expressions; a few seconds of CPU) so that the fixture cannot drift
// from the oracle's code unnoticed. python3 is required (CI has it).
func TestOracleRerun(t *testing.T) {
	t.Parallel()
	py, err := exec.LookPath("python3")
	require.NoError(t, err, "python3 runs the schedule oracle (testdata/oracle.py)")
	out, err := exec.Command(py, "testdata/oracle.py", "--sample").Output()
	if ee, ok := err.(*exec.ExitError); ok {
		err = fmt.Errorf("%w: %s", err, ee.Stderr)
	}
	require.NoError(t, err)
	checkOracle(t, readOracle(t, out))
}
