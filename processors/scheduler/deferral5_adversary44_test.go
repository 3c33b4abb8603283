package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAdversary44PauseThenIfVersionUpdateBeforeAdvance: an update with
// if_version on the paused job before the advance.
func TestAdversary44PauseThenIfVersionUpdateBeforeAdvance(t *testing.T) {
	h := adv44World(t, func(h *partitionHarness) {
		v := adv44Record(t, h, "j").Version
		h.command("j", adv41Base.Add(500*time.Millisecond), `{"v":1,"op":"put","if_version":`+itoa44(v)+`,"job":{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"j":2}}}`)
	})
	got := adv41Fires(t, h, "j")
	t.Logf("pause, if_version update, advance: %s", adv41String(got))
	require.Equal(t, adv44Owed, adv43UpTo(got, "10:00:00.000"))
}

func itoa44(v uint64) string { return fmtUint44(v) }

func fmtUint44(v uint64) string {
	if v == 0 {
		return "0"
	}
	var b []byte
	for ; v > 0; v /= 10 {
		b = append([]byte{byte('0' + v%10)}, b...)
	}
	return string(b)
}
