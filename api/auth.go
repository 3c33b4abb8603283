package api

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Role is what a token may do on the API: RoleRead < RoleWrite < RoleAdmin.
type Role int

// The roles, each allowing what the ones before it allow.
const (
	// RoleRead may get and list jobs.
	RoleRead Role = iota + 1
	// RoleWrite may also put, delete, pause, resume and fire jobs, and
	// trigger buckets (a confined token only under its prefix).
	RoleWrite
	// RoleAdmin may do everything; it exists so that a token's role can be
	// raised later without a new token (today it allows what write allows).
	RoleAdmin
)

// String returns "read", "write" or "admin".
func (r Role) String() string {
	switch r {
	case RoleRead:
		return "read"
	case RoleWrite:
		return "write"
	case RoleAdmin:
		return "admin"
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// ParseRole parses "read", "write" or "admin".
func ParseRole(s string) (Role, error) {
	for _, r := range []Role{RoleRead, RoleWrite, RoleAdmin} {
		if s == r.String() {
			return r, nil
		}
	}
	return 0, fmt.Errorf("%w: role %q: want read, write or admin", ErrBadTokens, s)
}

// Principal is who sent a request: the name of its token, the token's role
// and the job-id prefix it is confined to ("": not confined).
type Principal struct {
	Name   string
	Role   Role
	Prefix string
}

// Anonymous is the principal of every request to a server without
// credentials (--insecure-no-auth, or dev on loopback).
var Anonymous = Principal{Name: "anonymous", Role: RoleAdmin}

// owns reports whether p may act on a job id or bucket name.
func (p Principal) owns(name string) bool { return strings.HasPrefix(name, p.Prefix) }

type principalKey struct{}

// PrincipalFrom returns the principal a request was authenticated as
// (false outside an authenticated handler).
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// ErrBadTokens is wrapped by every problem of a tokens file.
var ErrBadTokens = errors.New("api: invalid tokens")

// tokenEntry is one line of a tokens file.
type tokenEntry struct {
	Principal
	hash [sha256.Size]byte
}

// Tokens is a set of named API tokens, stored as SHA-256 hashes of their
// secrets. The secrets are 256 random bits (NewToken), so an unsalted fast
// hash is enough: nobody can guess a preimage, and a leaked file does not
// reveal a usable secret. Immutable once built; safe for concurrent use.
type Tokens struct {
	entries []tokenEntry
}

// Len returns how many tokens the set holds.
func (t *Tokens) Len() int {
	if t == nil {
		return 0
	}
	return len(t.entries)
}

// Authenticate returns the principal of the token whose secret is secret.
// It compares the secret's hash with every entry in constant time and does
// not stop at the first match, so the time taken says nothing about which
// entry, if any, matched.
func (t *Tokens) Authenticate(secret string) (Principal, bool) {
	if t == nil || secret == "" {
		return Principal{}, false
	}
	h := sha256.Sum256([]byte(secret))
	found := -1
	for i := range t.entries {
		if subtle.ConstantTimeCompare(h[:], t.entries[i].hash[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Principal{}, false
	}
	return t.entries[found].Principal, true
}

// LoadTokens reads a tokens file (see ParseTokens).
func LoadTokens(path string) (*Tokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tokens file: %w", err)
	}
	defer f.Close()
	t, err := ParseTokens(f)
	if err != nil {
		return nil, fmt.Errorf("tokens file %s: %w", path, err)
	}
	return t, nil
}

// ParseTokens reads tokens, one per line:
//
//	name=ci role=write prefix=acme. sha256=<64 hex digits>
//
// name (letters, digits, '.', '_', '-'; at most 64) and role (read, write,
// admin) and sha256 (of the secret) are required, prefix is optional. Blank
// lines and lines starting with '#' are ignored. Every problem is reported,
// with its line number; names and secrets must be unique. An empty set is an
// error: a server given a tokens file must not end up open.
func ParseTokens(r io.Reader) (*Tokens, error) {
	t := &Tokens{}
	var errs []error
	names := map[string]bool{}
	hashes := map[[sha256.Size]byte]bool{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		e, err := parseTokenLine(line)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("line %d: %w", n, err))
		case names[e.Name]:
			errs = append(errs, fmt.Errorf("%w: line %d: name %q used twice", ErrBadTokens, n, e.Name))
		case hashes[e.hash]:
			errs = append(errs, fmt.Errorf("%w: line %d: the same secret as an earlier line", ErrBadTokens, n))
		default:
			names[e.Name], hashes[e.hash] = true, true
			t.entries = append(t.entries, e)
		}
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", ErrBadTokens, err))
	}
	if len(errs) == 0 && len(t.entries) == 0 {
		errs = append(errs, fmt.Errorf("%w: no tokens (make one with `chronos tokens new`)", ErrBadTokens))
	}
	errs = append(errs, overlappingPrefixes(t.entries)...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return t, nil
}

// overlappingPrefixes reports each pair of tenants where one prefix is a
// proper prefix of the other without ending in a separator: prefix "acme"
// also covers every id of a tenant "acme2.", which is almost never meant.
// A prefix that ends in a separator (any character but a letter or digit,
// as in "acme." and "acme.ci.") may contain another: that is a tenant and
// its sub-tenant.
func overlappingPrefixes(entries []tokenEntry) []error {
	var errs []error
	for _, a := range entries {
		if a.Prefix == "" || endsWithSeparator(a.Prefix) {
			continue
		}
		for _, b := range entries {
			if len(b.Prefix) > len(a.Prefix) && strings.HasPrefix(b.Prefix, a.Prefix) {
				errs = append(errs, fmt.Errorf("%w: token %q with prefix %q also covers the ids of token %q (prefix %q): "+
					"end tenant prefixes with a separator, like %q", ErrBadTokens, a.Name, a.Prefix, b.Name, b.Prefix, a.Prefix+"."))
			}
		}
	}
	return errs
}

// endsWithSeparator reports whether a prefix ends in a character that is
// neither a letter nor a digit.
func endsWithSeparator(prefix string) bool {
	r, _ := utf8.DecodeLastRuneInString(prefix)
	return !unicode.IsLetter(r) && !unicode.IsDigit(r)
}

func parseTokenLine(line string) (tokenEntry, error) {
	var e tokenEntry
	var hash string
	seen := map[string]bool{}
	for _, field := range strings.Fields(line) {
		k, v, ok := strings.Cut(field, "=")
		if !ok || seen[k] {
			return e, fmt.Errorf("%w: %q: want name=… role=… [prefix=…] sha256=…, each once", ErrBadTokens, field)
		}
		seen[k] = true
		switch k {
		case "name":
			e.Name = v
		case "role":
			role, err := ParseRole(v)
			if err != nil {
				return e, err
			}
			e.Role = role
		case "prefix":
			e.Prefix = v
		case "sha256":
			hash = v
		default:
			return e, fmt.Errorf("%w: unknown key %q: want name, role, prefix, sha256", ErrBadTokens, k)
		}
	}
	if err := validateTokenName(e.Name); err != nil {
		return e, err
	}
	if e.Role == 0 {
		return e, fmt.Errorf("%w: token %q has no role", ErrBadTokens, e.Name)
	}
	if seen["prefix"] {
		if err := validatePrefix(e.Prefix); err != nil {
			return e, err
		}
	}
	b, err := hex.DecodeString(hash)
	if err != nil || len(b) != sha256.Size {
		return e, fmt.Errorf("%w: token %q: sha256 must be 64 hex digits", ErrBadTokens, e.Name)
	}
	copy(e.hash[:], b)
	return e, nil
}

func validateTokenName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("%w: name %q: want 1 to 64 characters", ErrBadTokens, name)
	}
	for _, r := range name {
		if !(r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '_' || r == '-')) {
			return fmt.Errorf("%w: name %q: use letters, digits, '.', '_' and '-'", ErrBadTokens, name)
		}
	}
	return nil
}

func validatePrefix(prefix string) error {
	if prefix == "" || !utf8.ValidString(prefix) {
		return fmt.Errorf("%w: prefix %q: want a non-empty UTF-8 job-id prefix", ErrBadTokens, prefix)
	}
	for _, r := range prefix {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("%w: prefix %q: no spaces or control characters", ErrBadTokens, prefix)
		}
	}
	return nil
}

// secretPrefix starts every secret NewToken makes, so that secret scanners
// and people can recognise one.
const secretPrefix = "chronos_"

// NewToken makes a token: a secret of 256 random bits (shown once, never
// stored) and its line for a tokens file.
func NewToken(name string, role Role, prefix string) (secret, line string, err error) {
	if err := validateTokenName(name); err != nil {
		return "", "", err
	}
	if role < RoleRead || role > RoleAdmin {
		return "", "", fmt.Errorf("%w: role %v", ErrBadTokens, role)
	}
	line = "name=" + name + " role=" + role.String()
	if prefix != "" {
		if err := validatePrefix(prefix); err != nil {
			return "", "", err
		}
		line += " prefix=" + prefix
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	secret = secretPrefix + base64.RawURLEncoding.EncodeToString(b)
	h := sha256.Sum256([]byte(secret))
	return secret, line + " sha256=" + hex.EncodeToString(h[:]), nil
}
