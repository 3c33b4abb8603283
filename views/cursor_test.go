package views

import (
	"encoding/base64"
	"errors"
	"testing"
)

// FuzzDecodeCursor: a cursor is accepted only if it names a partition of
// the view, and every cursor the view issues is accepted as issued.
func FuzzDecodeCursor(f *testing.F) {
	const partitions = 12
	for _, s := range []string{"0/a", "11/zz", "12/a", "-1/a", "2147483648/a", "4294967296/a", "4294967297/", "+3/x", "x/", "3"} {
		f.Add(base64.RawURLEncoding.EncodeToString([]byte(s)))
	}
	f.Fuzz(func(t *testing.T, c string) {
		p, after, err := decodeCursor(c, partitions)
		if err != nil {
			if !errors.Is(err, ErrBadCursor) {
				t.Fatalf("%q: %v", c, err)
			}
			return
		}
		if c != "" && (p < 0 || p >= partitions) {
			t.Fatalf("%q decodes to partition %d of %d", c, p, partitions)
		}
		if c != "" && base64.RawURLEncoding.EncodeToString([]byte(base64Decoded(t, c))) == c {
			p2, after2, err := decodeCursor(encodeCursor(p, after), partitions)
			if err != nil || p2 != p || after2 != after {
				t.Fatalf("%q: re-encoded cursor decodes to %d %q %v", c, p2, after2, err)
			}
		}
	})
}

func base64Decoded(t *testing.T, c string) string {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDecodeCursorOutOfRange(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"2147483648/a", "4294967296/a", "4294967297/a", "-1/a", "12/a", "9223372036854775808/a"} {
		if _, _, err := decodeCursor(base64.RawURLEncoding.EncodeToString([]byte(s)), 12); !errors.Is(err, ErrBadCursor) {
			t.Errorf("%s: %v, want ErrBadCursor", s, err)
		}
	}
}
