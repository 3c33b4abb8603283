package codecs

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// FuzzScanShape holds scanShape's one pass to checkShape's tokenizer walk:
// for any single JSON value (what strictUnmarshal hands them) and every
// shape a decoder uses, the same error (code, field, reason), or the scan
// says checkShape must answer.
func FuzzScanShape(f *testing.F) {
	for _, s := range []string{
		`{"v":1,"op":"put","id":"a","job":{"cron":"0 9 * * 1-5","tz":"Europe/Berlin","payload":{"report":"daily","x":[1,{"a":1,"a":2}]},"bucket":"b"}}`,
		`{"v":1,"op":"put","job":{"schedules":[{"cron":"* * * * *"},{"every":"1m","Start":"x"}],"exclude":{"ranges":[{"from":"a","to":"b","to":"c"}]}}}`,
		`{"v":1,"Op":"put"}`, `{"v":1,"v":2}`, `{"":{"":1,"":2}}`, `{"job":{"dst":{"gap":"skip","GAP":1}}}`,
		`{"payload":{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k3":3}}`,
		`{"job":{"payload":{"\u0061":1,"a":2}}}`, `{"jöb":1}`, ` [ {"a" : 1 } , 2 ] `, `"x"`, `null`, `{"note":"a\"b","trigger_id":"\\"}`,
		`{"job":{"schedules":[{"dst":{"overlap":"both","x":1}}]}}`,
	} {
		f.Add([]byte(s))
	}
	shapes := []shape{commandShape, jobDefShape, calendarShape, bucketTriggerShape, bulkBodyShape, triggerBodyShape, pauseBodyShape}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return // strictUnmarshal hands them only one valid value
		}
		for _, sh := range shapes {
			var got error
			var ok bool
			done := make(chan struct{})
			go func() { ok, got = scanShape(data, sh); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("scanShape does not return on %q", data)
			}
			if !ok {
				continue
			}
			require.Equal(t, checkShape(data, sh), got, "%q", data)
		}
	})
}

func BenchmarkShape(b *testing.B) {
	data := []byte(`{"v":1,"op":"put","job":{"cron":"0 9 * * 1-5","tz":"Europe/Berlin","payload":{"report":"daily","format":"pdf"},"bucket":"nightly","misfire_policy":"fire_once","misfire_grace":"5m"}}`)
	b.Run("tokens", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = checkShape(data, commandShape)
		}
	})
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if ok, _ := scanShape(data, commandShape); !ok {
				b.Fatal("slow path")
			}
		}
	})
}
