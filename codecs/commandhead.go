package codecs

// commandHead reads a command record in the form EncodeCommand
// writes: the fields of CommandMsg (and of its job and dst) in their
// order, each at most once, no whitespace, strings without escapes. ok is
// false for anything else, and for what this reader does not want to judge
// alone: a payload that is null, or holds an object with a key given twice
// at any depth (an error the strict decoder names) or a key with an escape
// or a byte beyond ASCII (which the shape check compares unescaped). What
// it accepts,
// the strict decoder (decodeCommandStrict) accepts too and decodes to the
// same message: its rules (known fields only, exact case, no duplicates, one
// value) hold by construction.
func commandHead(b []byte) (m CommandMsg, ok bool) {
	p := &scan{b: b}
	if !p.lit(`{"v":`) {
		return m, false
	}
	v, ok := p.int()
	if !ok || v < -1<<31 || v > 1<<31-1 {
		return m, false
	}
	m.V = int(v)
	if !p.lit(`,"op":`) || !p.str(&m.Op) {
		return m, false
	}
	if p.lit(`,"id":`) && !p.str(&m.ID) {
		return m, false
	}
	if p.lit(`,"job":`) {
		var j JobDef
		if !p.job(&j) {
			return m, false
		}
		m.Job = &j
	}
	if p.lit(`,"trigger_id":`) && !p.str(&m.TriggerID) {
		return m, false
	}
	if p.lit(`,"payload":`) && !p.payload(&m.Payload) {
		return m, false
	}
	if p.lit(`,"if_version":`) {
		n, ok := p.uint()
		if !ok {
			return m, false
		}
		m.IfVersion = &n
	}
	if (p.lit(`,"note":`) && !p.str(&m.Note)) || (p.lit(`,"from":`) && !p.str(&m.From)) || (p.lit(`,"to":`) && !p.str(&m.To)) {
		return m, false
	}
	return m, p.lit(`}`) && len(p.b) == 0
}
