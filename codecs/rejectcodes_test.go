package codecs_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestRejectCodesDocumented: RejectCodes is exactly the Code column of
// docs/topics.md's reject code table (the reason label values of
// chronos_rejects_total that the scheduler creates at 0).
func TestRejectCodesDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/topics.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "\n| Code | Meaning |")
	if i < 0 {
		t.Fatal(`docs/topics.md has no "| Code | Meaning |" table`)
	}
	row := regexp.MustCompile("^\\| `([a-z_]+)` \\|")
	var documented []string
	for _, line := range strings.Split(doc[i+1:], "\n")[2:] {
		m := row.FindStringSubmatch(line)
		if m == nil {
			break
		}
		documented = append(documented, m[1])
	}
	got := codecs.RejectCodes()
	slices.Sort(documented)
	slices.Sort(got)
	if !slices.Equal(got, documented) {
		t.Errorf("RejectCodes %v, docs/topics.md documents %v", got, documented)
	}
}
