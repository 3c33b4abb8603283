package topology_test

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/chronos-scheduler/chronos/topology"
)

// TestTopicsDocCompression: docs/topics.md's Compression table names every
// topic of the layout exactly once, and its "stored uncompressed" row lists
// exactly the topics Chronos creates with compression.type=uncompressed (a
// topic added to the layout, or made inbound, without its row fails here).
func TestTopicsDocCompression(t *testing.T) {
	b, err := os.ReadFile("../docs/topics.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "\n## Compression\n")
	if start < 0 {
		t.Fatal(`docs/topics.md has no "## Compression" section`)
	}
	section := doc[start+1:]
	if end := strings.Index(section[1:], "\n## "); end >= 0 {
		section = section[:end+1]
	}
	name := regexp.MustCompile("`(chronos-[a-z-]+)`")
	rowOf := map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `chronos-") {
			continue
		}
		first := strings.SplitN(line, "|", 3)[1]
		for _, m := range name.FindAllStringSubmatch(first, -1) {
			if prev, ok := rowOf[m[1]]; ok {
				t.Errorf("%s is in two rows of the Compression table:\n%s\n%s", m[1], prev, line)
			}
			rowOf[m[1]] = line
		}
	}
	var inbound, documentedInbound []string
	for _, tp := range (topology.Layout{Partitions: topology.DefaultPartitions}).Topics() {
		row, ok := rowOf[tp.Name]
		if !ok {
			t.Errorf("%s has no row in docs/topics.md's Compression table", tp.Name)
			continue
		}
		if strings.Contains(row, "compression.type=uncompressed") {
			documentedInbound = append(documentedInbound, tp.Name)
		}
		if tp.Configs["compression.type"] == "uncompressed" {
			inbound = append(inbound, tp.Name)
		}
		delete(rowOf, tp.Name)
	}
	for n := range rowOf {
		t.Errorf("the Compression table names %s, which is no topic of the layout", n)
	}
	sort.Strings(inbound)
	sort.Strings(documentedInbound)
	if strings.Join(inbound, " ") != strings.Join(documentedInbound, " ") {
		t.Errorf("topics created with compression.type=uncompressed: %v; documented so in the Compression table: %v", inbound, documentedInbound)
	}
}
