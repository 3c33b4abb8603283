package codecs

// DispatchHead reads a dispatch event's fields but its payload, in the
// form AppendDispatch writes it: the fields in their order, strings
// without escapes, then the payload, last, which it does not read (a
// dispatch event carries up to --max-payload bytes of payload, and
// decoding it whole was most of the history group's cost per fire). ok is
// false for anything else (another field order, escapes, unknown fields,
// another version, bad syntax before the payload); the caller then decodes
// the record whole with DecodeDispatch, which decides. The payload is
// never examined: a record whose fields read correctly is read even if its
// payload would not decode (the scheduler writes only valid ones).
func DispatchHead(b []byte) (d Dispatch, ok bool) {
	p := &scan{b: b}
	if !p.lit(`{"v":`) {
		return d, false
	}
	v, ok := p.int()
	if !ok || v != DispatchVersion {
		return d, false
	}
	d.V = int(v)
	if !p.lit(`,"fire_id":`) || !p.str(&d.FireID) || !p.lit(`,"job_id":`) || !p.str(&d.JobID) ||
		!p.lit(`,"trigger":`) || !p.str(&d.Trigger) ||
		!p.lit(`,"scheduled_at":`) || !p.time(&d.ScheduledAt) {
		return d, false
	}
	// A jittered fire's due time comes between (AppendDispatch).
	if p.lit(`,"due_at":`) && !p.time(&d.DueAt) {
		return d, false
	}
	if !p.lit(`,"fired_at":`) || !p.time(&d.FiredAt) || !p.lit(`,"missed":`) {
		return d, false
	}
	if d.Missed, ok = p.int(); !ok {
		return d, false
	}
	if p.lit(`,"bucket":`) && !p.str(&d.Bucket) {
		return d, false
	}
	if p.lit(`,"trigger_id":`) && !p.str(&d.TriggerID) {
		return d, false
	}
	switch {
	case p.lit(`}`):
		return d, len(p.b) == 0
	case p.lit(`,"payload":`):
		// The payload runs to the record's closing brace.
		return d, len(p.b) > 1 && p.b[len(p.b)-1] == '}'
	}
	return d, false
}
