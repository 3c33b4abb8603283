package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// WriteTable prints the report as a two-column table.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, args...)...) }
	mode := string(r.Mode)
	if r.Every != "" {
		mode += " " + r.Every
	}
	row("jobs", "%d (%s)", r.Jobs, mode)
	row("registration", "%s (%.0f jobs/s)", r.Registration.Round(time.Millisecond), r.RegistrationRate)
	row("window", "%s", r.Window.Round(time.Millisecond))
	if r.Drain > 0 {
		row("all dispatched after", "%s (from the due second to the last receipt)", r.Drain.Round(time.Millisecond))
	}
	row("fires", "%d of %d expected", r.Fires, r.Expected)
	row("fires/s", "%.0f", r.FiresPerSecond)
	row("delay p50 / p99 / max", "%s / %s / %s", r.DelayP50.Round(time.Millisecond), r.DelayP99.Round(time.Millisecond), r.DelayMax.Round(time.Millisecond))
	row("fan-out start p99", "%s (fired_at minus scheduled_at)", r.StartP99.Round(time.Millisecond))
	if r.Jitter != "" {
		row("jitter", "%s: delay p99 from due_at %s", r.Jitter, r.DueDelayP99.Round(time.Millisecond))
	}
	row("peak fires/s", "%d (most fires received in one second)", r.PeakPerSecond)
	for _, sl := range r.Slices {
		row("  from "+sl.Start.Format(time.TimeOnly), "%d fires, p99 %s, max %s, start p99 %s", sl.Fires, sl.P99.Round(time.Millisecond), sl.Max.Round(time.Millisecond), sl.StartP99.Round(time.Millisecond))
	}
	row("missed", "%d", r.Missed)
	if r.HistoryLag != nil && r.HistoryCatchUp != nil {
		row("history group", "lag %d dispatch events at the end of the window, consumed all %s later", *r.HistoryLag, r.HistoryCatchUp.Round(time.Millisecond))
	}
	row("duplicates", "%d", r.Duplicates)
	row("cpu seconds", "%.1f (this process)", r.CPUSeconds)
	row("peak rss", "%.0f MiB (this process)", float64(r.PeakRSSBytes)/(1<<20))
	if r.InstancePeakRSSBytes > 0 {
		row("peak rss of the instance", "%.0f MiB (VmHWM)", float64(r.InstancePeakRSSBytes)/(1<<20))
	}
	if r.PayloadBytes > 0 {
		row("payload", "%d B per job", r.PayloadBytes)
	}
	if b := r.StoreBytesPerFire; b != nil {
		row("store bytes per fire", "%.0f WAL + %.0f flush + %.0f compaction (scheduler's Pebble stores, measured window)", b.WAL, b.Flush, b.Compaction)
	}
	if h := r.StoresHeld; h != nil {
		flood := "never seen"
		if h.FloodFirst != nil {
			flood = fmt.Sprintf("seen %s to %s after registration began", h.FloodFirst.Round(time.Second), h.FloodLast.Round(time.Second))
		}
		row("stores held", "at most %d for a flood (%s), %d for a recovery (every 250 ms, this process)", h.FloodMax, flood, h.RecoveryMax)
	}
	row("raw transport ceiling", "%.0f records/s of %d B", r.RawPerSecond, r.RecordBytes)
	row("ratio to raw", "%.2f", r.RawRatio)
	row("raw ceiling, goka's producer", "%.0f records/s (sarama, same settings; dispatch events use franz-go)", r.RawGokaPerSecond)
	return tw.Flush()
}

// WriteJSON prints the report as one JSON object.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
