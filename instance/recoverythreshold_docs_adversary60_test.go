package instance

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

// Promise 6: the reference table gives the flag's default (16 when round
// 60 ran, 32 since d982142), the store is no longer reopened at the end of
// its recovery (59a2e1e), and
// the other docs that name the flag do not still call it off by default or
// describe the reopen.
func TestAdv60RecoveryThresholdDocsMatchTheDefault(t *testing.T) {
	t.Parallel()
	cfg := Default()
	fs := pflag.NewFlagSet("instance", pflag.ContinueOnError)
	cfg.RegisterFlags(fs)
	f := fs.Lookup("store-recovery-l0-compaction-threshold")
	require.NotNil(t, f)
	require.Equal(t, fmt.Sprint(DefaultRecoveryL0CompactionThreshold), f.DefValue)

	conf := readDocs(t, "../docs/configuration.md")
	var row string
	for _, l := range strings.Split(conf, "\n") {
		if strings.HasPrefix(l, "| `--store-recovery-l0-compaction-threshold`") {
			row = l
		}
	}
	require.NotEmpty(t, row)
	cells := strings.Split(row, "|")
	require.GreaterOrEqual(t, len(cells), 5)
	var problems []string
	if d := strings.TrimSpace(cells[3]); !strings.HasPrefix(d, fmt.Sprintf("`%d`", DefaultRecoveryL0CompactionThreshold)) {
		problems = append(problems, fmt.Sprintf("configuration.md: default column %s, the flag's default is %d", d, DefaultRecoveryL0CompactionThreshold))
	}
	for _, stale := range []string{"Off by default for now", "the store is reopened with", "When the recovery is done the store is reopened"} {
		if strings.Contains(row, stale) {
			problems = append(problems, fmt.Sprintf("configuration.md row says %q", stale))
		}
	}
	for _, p := range []string{"../docs/architecture.md", "../docs/internals.md", "../docs/operations.md"} {
		d := readDocs(t, p)
		for _, para := range strings.Split(d, "\n\n") {
			if !strings.Contains(para, "store-recovery-l0-compaction-threshold") {
				continue
			}
			for _, stale := range []string{"(off by default", "off by default because", "16 when set", "closed and opened again once", "is reopened with 4", "reopened with Pebble's"} {
				if strings.Contains(para, stale) {
					problems = append(problems, fmt.Sprintf("%s: a paragraph on the flag says %q", p, stale))
				}
			}
		}
	}
	require.Empty(t, problems, "docs not updated for 59a2e1e")
}
