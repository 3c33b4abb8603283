package main

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestShownJSON: a payload printed by `chronos jobs get` is the same JSON
// value with no character that is not printable (a bidi override once
// reached the terminal raw: round 13b's "seen" list), for generated
// payloads of every rune class.
func TestShownJSON(t *testing.T) {
	t.Parallel()
	runes := []rune{'a', ' ', '"', '\\', '/', '\u202e', '\u200b', '\u0000', '\u001b', '\r', '\n', '\t', 'é', '😀', '\u2028', '\ufeff'}
	for i := range 2000 {
		var s []rune
		for j := 0; j < i%23; j++ {
			s = append(s, runes[(i*7+j*13)%len(runes)])
		}
		doc, err := json.Marshal(map[string]any{"k\u202e": string(s), "n": []any{1, string(s[:len(s)/2])}})
		require.NoError(t, err)
		// encoding/json escapes control characters and U+2028 itself, and
		// leaves bidi, zero-width and other format characters raw; the
		// document is then spread over lines as a producer may write it.
		pretty := "{\r\n\t" + string(doc[1:len(doc)-1]) + "\n}"
		got := shownJSON([]byte(pretty))
		for _, r := range got {
			require.True(t, strconv.IsPrint(r), "%q in %q", r, got)
		}
		var want, have any
		require.NoError(t, json.Unmarshal([]byte(pretty), &want))
		require.NoError(t, json.Unmarshal([]byte(got), &have), "%q", got)
		require.Equal(t, want, have)
	}
	require.Equal(t, `{"a": "x\u202ey"}`, shownJSON([]byte("{\"a\":\r\n \"x\u202ey\"}")))
}
