package codecs

import (
	"math/rand/v2"
	"testing"
)

// TestPlainNameAgreesWithTheRules: every name the shortcut accepts, the
// rune-by-rune rules accept too, and on printable ASCII the two agree
// exactly: over every string of one and two bytes, and random strings of
// up to the limit drawn from bytes around the ASCII edges.
func TestPlainNameAgreesWithTheRules(t *testing.T) {
	check := func(s string, maxLen int) {
		t.Helper()
		plain := plainName(s, maxLen)
		rules := checkNameRunes("name", "name", CodeInvalidID, s, maxLen)
		if plain && rules != nil {
			t.Fatalf("plainName accepts %q (max %d), the rules refuse it: %v", s, maxLen, rules)
		}
		ascii := true
		for i := 0; i < len(s); i++ {
			ascii = ascii && s[i] >= 0x20 && s[i] <= 0x7e
		}
		if ascii && !plain && rules == nil {
			t.Fatalf("plainName refuses printable ASCII %q (max %d) that the rules accept", s, maxLen)
		}
	}
	for a := range 256 {
		check(string([]byte{byte(a)}), MaxIDLen)
		check(string([]byte{byte(a)}), 0)
		for b := range 256 {
			check(string([]byte{byte(a), byte(b)}), MaxIDLen)
			check(string([]byte{byte(a), byte(b)}), 1)
		}
	}
	edges := []byte{0x00, 0x1f, 0x20, 0x21, '.', 'a', 0x7e, 0x7f, 0x80, 0x9f, 0xa0, 0xc2, 0xe2, 0x80, 0x8b, 0xef, 0xbb, 0xbf, 0xff}
	rng := rand.New(rand.NewPCG(53, 1))
	for range 200_000 {
		b := make([]byte, 1+rng.IntN(MaxIDLen+2))
		for i := range b {
			if rng.IntN(4) == 0 {
				b[i] = edges[rng.IntN(len(edges))]
			} else {
				b[i] = byte(0x20 + rng.IntN(0x5f))
			}
		}
		check(string(b), MaxIDLen)
	}
}

// FuzzPlainName holds the shortcut to the rules on any input.
func FuzzPlainName(f *testing.F) {
	for _, s := range []string{"job-1", " a", "a ", ".", "..", "a\x7f", "caf\u00e9", "\u200b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if plainName(s, MaxIDLen) {
			if err := checkNameRunes("name", "name", CodeInvalidID, s, MaxIDLen); err != nil {
				t.Fatalf("plainName accepts %q, the rules refuse it: %v", s, err)
			}
		}
	})
}
