package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/topology"
)

// BigValue is the size of the large poison values: below the broker's
// default message.max.bytes (1,048,588) with the batch overhead.
const BigValue = 990_000

// poison produces one record of every poison kind (round n, drawing bytes
// from rng) and returns how many of each kind were acknowledged.
func (l *loader) poison(ctx context.Context, n int, rng *rand.Rand) (map[string]int, error) {
	now := time.Now()
	junk := func(size int) []byte {
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return b
	}
	key := func(kind string) string { return fmt.Sprintf("%s%s-%d", poisonPrefix, kind, n) }
	bigPut := func(id string) []byte {
		pad := strings.Repeat("x", BigValue-200)
		return putValue(id, codecs.JobDef{Every: "1s", Payload: json.RawMessage(`{"pad":"` + pad + `"}`)})
	}
	wp := key("wrong-partition")
	kinds := []struct {
		kind string
		rec  *kgo.Record
	}{
		{"junk", l.record(key("junk"), junk(1+rng.IntN(4096)), now)},
		{"junk-990kB", l.record(key("bigjunk"), junk(BigValue), now)},
		{"put-990kB", l.record(key("bigput"), bigPut(key("bigput")), now)},
		{"tombstone", l.record(key("tomb"), nil, now)},
		{"null-key", &kgo.Record{Topic: l.topic, Value: junk(64), Timestamp: now, Partition: rng.Int32N(l.partitions)}},
		{"binary-key", l.record(string(junk(16)), []byte(`{"v":1,"op":"put"}`), now)},
		{"wrong-partition-put", &kgo.Record{Topic: l.topic, Key: []byte(wp), Timestamp: now,
			Value:     putValue(wp, codecs.JobDef{Every: "1s"}),
			Partition: (topology.Partition(wp, l.partitions) + 1) % l.partitions}},
	}
	out := map[string]int{}
	var errs []string
	for _, k := range kinds {
		if err := l.cl.ProduceSync(ctx, k.rec).FirstErr(); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", k.kind, err))
			continue
		}
		out[k.kind]++
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("soak: producing poison: %s", strings.Join(errs, "; "))
	}
	return out, nil
}
