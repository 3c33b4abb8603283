package api_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/api"
)

func TestParseTokens(t *testing.T) {
	t.Parallel()
	hash := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	good := "# ops tokens\n\nname=ci role=write sha256=" + hash("a") + "\n" +
		"  name=acme-ro role=read prefix=acme. sha256=" + hash("b") + "  \n"
	tok, err := api.ParseTokens(strings.NewReader(good))
	require.NoError(t, err)
	require.Equal(t, 2, tok.Len())
	p, ok := tok.Authenticate("b")
	require.True(t, ok)
	require.Equal(t, api.Principal{Name: "acme-ro", Role: api.RoleRead, Prefix: "acme."}, p)
	_, ok = tok.Authenticate(hash("b")) // the stored hash is not a secret
	require.False(t, ok)

	bad := map[string]string{
		"empty":          "# nothing\n",
		"no name":        "role=read sha256=" + hash("a"),
		"bad name":       "name=a/b role=read sha256=" + hash("a"),
		"long name":      "name=" + strings.Repeat("n", 65) + " role=read sha256=" + hash("a"),
		"no role":        "name=a sha256=" + hash("a"),
		"bad role":       "name=a role=root sha256=" + hash("a"),
		"no hash":        "name=a role=read",
		"short hash":     "name=a role=read sha256=abcd",
		"not hex":        "name=a role=read sha256=" + strings.Repeat("z", 64),
		"unknown key":    "name=a role=read sha256=" + hash("a") + " tenant=x",
		"no equals":      "name=a role=read " + hash("a"),
		"key twice":      "name=a name=b role=read sha256=" + hash("a"),
		"empty prefix":   "name=a role=read prefix= sha256=" + hash("a"),
		"dup name":       "name=a role=read sha256=" + hash("a") + "\nname=a role=read sha256=" + hash("b"),
		"dup secret":     "name=a role=read sha256=" + hash("a") + "\nname=b role=read sha256=" + hash("a"),
		"control prefix": "name=a role=read prefix=a\x01 sha256=" + hash("a"),
	}
	for name, file := range bad {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := api.ParseTokens(strings.NewReader(file))
			require.ErrorIs(t, err, api.ErrBadTokens)
		})
	}
	// Every problem is reported, with its line.
	_, err = api.ParseTokens(strings.NewReader("name=a role=x sha256=" + hash("a") + "\n\nname=b role=read"))
	require.ErrorContains(t, err, "line 1:")
	require.ErrorContains(t, err, "line 3:")
}

// TestNewTokenRoundTrip makes seeded random tokens, writes their lines to a
// file and checks that each secret authenticates as its own principal and
// that other strings (other secrets with one character changed, prefixes
// and extensions of them) never do.
func TestNewTokenRoundTrip(t *testing.T) {
	t.Parallel()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	roles := []api.Role{api.RoleRead, api.RoleWrite, api.RoleAdmin}
	var lines []string
	want := map[string]api.Principal{}
	for i := range 50 {
		p := api.Principal{Name: fmt.Sprintf("t%d", i), Role: roles[rng.IntN(3)]}
		if rng.IntN(2) == 0 {
			p.Prefix = fmt.Sprintf("tenant%d.", rng.IntN(5))
		}
		secret, line, err := api.NewToken(p.Name, p.Role, p.Prefix)
		require.NoError(t, err)
		require.Regexp(t, `^chronos_[A-Za-z0-9_-]{43}$`, secret)
		require.NotContains(t, line, secret)
		lines = append(lines, line)
		want[secret] = p
	}
	tok, err := api.ParseTokens(strings.NewReader(strings.Join(lines, "\n")))
	require.NoError(t, err)
	for secret, p := range want {
		got, ok := tok.Authenticate(secret)
		require.True(t, ok)
		require.Equal(t, p, got)
		i := rng.IntN(len(secret))
		for _, other := range []string{secret[:i], secret + "x", secret[:i] + "!" + secret[i+1:], "Bearer " + secret, ""} {
			_, ok := tok.Authenticate(other)
			require.False(t, ok, "%q", other)
		}
	}
	_, _, err = api.NewToken("bad name", api.RoleRead, "")
	require.True(t, errors.Is(err, api.ErrBadTokens))
	_, _, err = api.NewToken("ok", api.Role(9), "")
	require.ErrorIs(t, err, api.ErrBadTokens)
}

// FuzzParseTokens: any file either parses into tokens that each
// authenticate nothing but their own secret's hash preimage, or fails with
// ErrBadTokens; it never panics and never yields an empty set.
func FuzzParseTokens(f *testing.F) {
	h := sha256.Sum256([]byte("s"))
	hx := hex.EncodeToString(h[:])
	for _, s := range []string{
		"name=a role=read sha256=" + hx,
		"# c\nname=a role=write prefix=acme. sha256=" + hx + "\n",
		"name=a role=admin sha256=" + hx + "\nname=a role=read sha256=" + hx,
		"name= role= sha256=",
		"name=a=b role=read sha256=" + hx,
		"\x00\xff",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, file string) {
		tok, err := api.ParseTokens(strings.NewReader(file))
		if err != nil {
			if !errors.Is(err, api.ErrBadTokens) {
				t.Fatalf("%q: %v", file, err)
			}
			return
		}
		if tok.Len() == 0 {
			t.Fatalf("%q: an empty set without an error", file)
		}
		if _, ok := tok.Authenticate(""); ok {
			t.Fatalf("%q: the empty secret authenticates", file)
		}
		if p, ok := tok.Authenticate("s"); ok && (p.Name == "" || p.Role < api.RoleRead || p.Role > api.RoleAdmin) {
			t.Fatalf("%q: invalid principal %+v", file, p)
		}
	})
}
