package history

import (
	"testing"
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestAdversary13cDispatchTriggerAndBucketNotChronosKept: the history keeps
// dispatch events whose trigger or bucket Chronos never writes.
//
// Promise (docs/topics.md, Results): "The history group reads
// `chronos-dispatch` the same way: a dispatch event ... whose `bucket` or
// `trigger` is not one Chronos writes, is not kept in the history and gets
// a reject (on `chronos-rejects`, like a bad result)."
//
// Reproduction: decodeDispatch (what onDispatch folds or rejects) on
// dispatch events as codecs.AppendDispatch writes them (the fast path) and
// one without a "trigger" field (the full decoder), with: trigger ""; no
// trigger at all; bucket " padded " (leading and trailing space), bucket
// "." and a bucket not in NFC ("e" + U+0301): names ValidateBucket refuses,
// so Chronos never writes them.
//
// Observed: every one decodes without error and is folded: kept in the
// job's history (trigger "", shown without a trigger; the odd bucket shown
// as the fire's bucket), no reject.
// Cause: codecs.CheckHistoryFire (then) accepted trigger "" (meant for results,
// which have none) and checks only the bucket's length, not its name.
func TestAdversary13cDispatchTriggerAndBucketNotChronosKept(t *testing.T) {
	at := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	base := codecs.Dispatch{V: codecs.DispatchVersion, JobID: "j", FireID: "j@m1", Trigger: codecs.TriggerManual, ScheduledAt: at, FiredAt: at}
	cases := map[string][]byte{}
	d := base
	d.Trigger = ""
	cases[`trigger ""`] = codecs.AppendDispatch(nil, &d)
	cases["no trigger field"] = []byte(`{"v":1,"fire_id":"j@m1","job_id":"j","scheduled_at":"2026-06-01T00:00:00Z","fired_at":"2026-06-01T00:00:00Z","missed":0}`)
	for name, bucket := range map[string]string{"bucket ' padded '": " padded ", "bucket '.'": ".", "bucket not NFC": "e\u0301"} {
		d := base
		d.Trigger, d.FireID, d.Bucket = codecs.TriggerBucket, "j@b-0-1", bucket
		if codecs.ValidateBucket(bucket) == nil {
			t.Fatalf("%s: the bucket is valid, the case proves nothing", name)
		}
		cases[name] = codecs.AppendDispatch(nil, &d)
	}
	var kept []string
	for name, raw := range cases {
		got, suffix, err := decodeDispatch("j", raw)
		if err == nil {
			kept = append(kept, name)
			t.Logf("%s: kept as fire %q trigger %q bucket %q: %s", name, suffix, got.Trigger, got.Bucket, raw)
		}
	}
	if len(kept) > 0 {
		t.Fatalf("%d of %d dispatch events with a trigger or bucket Chronos never writes are kept in the history, not rejected: %v", len(kept), len(cases), kept)
	}
}
