package scheduler

import (
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// adv42SmallHarness is adv41FlakyHarness with chunkBytes of events per
// batch (a command's owed fires go out a few per produce).
func adv42SmallHarness(t *testing.T, every, chunkBytes int) (*partitionHarness, *adv41FlakyProducer) {
	h := &partitionHarness{t: t, prod: &recordingProducer{}, now: adv41Base, chunk: 1, budget: time.Nanosecond}
	fp := &adv41FlakyProducer{inner: h.prod, every: every}
	h.s, h.st = openPartition(t, Config{ChunkSize: 1, ChunkBudget: time.Nanosecond, ChunkBytes: chunkBytes, Producer: fp, Now: func() time.Time { return h.now }})
	return h, fp
}

// adv42QueuedWorld: fillers a, b make the pass to T1 = 10:00:01 yield
// after its first chunk; j (policy, grace 3s, every 1s) is put late
// (ts 09:59:30: behind the watermark and the cursor) during it; the
// advances to 10:00:02 .. 10:00:0n wait. An update of j (ts 10:00:0n) is
// consumed then with a producer failing every every-th call (0: never):
// it is delivered until it applies. Then everything drains.
func adv42QueuedWorld(t *testing.T, policy string, every, n int) *partitionHarness {
	h, fp := adv42SmallHarness(t, every, 1024)
	h.advance(adv41Base)
	h.drain()
	filler := `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"f":1}}}`
	h.command("a", adv41Base, filler)
	h.command("b", adv41Base, filler)
	T1 := adv41Base.Add(time.Second)
	h.advance(T1)
	require.NotEmpty(t, h.loops)
	put := func(p int) string {
		return fmt.Sprintf(`{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"%s","misfire_grace":"3s","payload":{"j":%d}}}`, policy, p)
	}
	h.command("j", adv41Base.Add(-30*time.Second), put(1))
	for i := 2; i <= n; i++ {
		h.advance(adv41Base.Add(time.Duration(i) * time.Second))
	}
	fp.fail, fp.calls = every > 0, 0
	ts := adv41Base.Add(time.Duration(n) * time.Second)
	i := 0
	for ; i < 200; i++ {
		if err := adv41TryCommand(h, "j", ts, put(2)); err == nil {
			break
		}
	}
	require.Less(t, i, 200, "the update never applied")
	t.Logf("%s every %d: the update applied on delivery %d", policy, every, i+1)
	fp.fail = false
	h.drain()
	h.advance(adv41Base.Add(time.Duration(n+5) * time.Second))
	h.drain()
	h.requireOnePayload()
	return h
}

// TestAdversary42RedeliveredUpdateSameFates: promise (docs/reliability.md:
// a failed produce may send fires again, never loses or adds one; the
// brief: missed counts consistent): j's fires of its first definition,
// and the missed counts they carry, are the same whether the update's
// batches were produced at once or some failed and the update was
// consumed again (resuming from the record settled after each batch).
func TestAdversary42RedeliveredUpdateSameFates(t *testing.T) {
	t.Parallel()
	for _, policy := range []string{"skip", "fire_once", "fire_all"} {
		for _, every := range []int{2, 3} {
			ctrl := adv41Fires(t, adv42QueuedWorld(t, policy, 0, 8), "j")
			got := adv41Fires(t, adv42QueuedWorld(t, policy, every, 8), "j")
			dedup := func(fs []adv41Fire) map[string]adv41Fire {
				m := map[string]adv41Fire{}
				for _, f := range fs {
					k := f.At.Format("15:04:05") + f.Payload
					if _, ok := m[k]; !ok {
						m[k] = f
					}
				}
				return m
			}
			c, g := dedup(ctrl), dedup(got)
			keys := func(m map[string]adv41Fire) (ks []string) {
				for k := range m {
					ks = append(ks, k)
				}
				return ks
			}
			if !assertSameKeys(t, keys(c), keys(g)) {
				t.Errorf("%s every %d: clean %s\nflaky %s", policy, every, adv41String(ctrl), adv41String(got))
			}
		}
	}
}

func assertSameKeys(t *testing.T, a, b []string) bool {
	sort.Strings(a)
	sort.Strings(b)
	return reflect.DeepEqual(a, b)
}
