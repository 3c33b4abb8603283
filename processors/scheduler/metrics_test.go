package scheduler

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestRejectsSeriesFromTheStart: chronos_rejects_total has a series at 0 for
// every reject code before any reject, so the first reject of a reason is an
// increase (Prometheus's increase() ignores a series' first sample: without
// this, ChronosRejectsRising missed a burst of bad commands that created its
// series). Each reject then adds to its own reason only.
func TestRejectsSeriesFromTheStart(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	codes := codecs.RejectCodes()
	if n := testutil.CollectAndCount(m.rejects); n != len(codes) {
		t.Fatalf("chronos_rejects_total has %d series before any reject, want one per code (%d)", n, len(codes))
	}
	for i, c := range codes {
		if v := testutil.ToFloat64(m.rejects.WithLabelValues(c)); v != 0 {
			t.Fatalf("chronos_rejects_total{reason=%q} = %v before any reject, want 0", c, v)
		}
		for range i + 1 {
			m.rejected(c)
		}
	}
	for i, c := range codes {
		if v := testutil.ToFloat64(m.rejects.WithLabelValues(c)); v != float64(i+1) {
			t.Errorf("chronos_rejects_total{reason=%q} = %v after %d rejects", c, v, i+1)
		}
	}
}
