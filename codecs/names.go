package codecs

import (
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/chronos-scheduler/chronos/topology"
)

// Names (job ids, bucket names, trigger ids) follow one set of rules at
// every entrance (Kafka, HTTP, CLI), documented in docs/topics.md "Ids and
// names". checkName applies the rules common to all three; the callers add
// what is specific.
//
// A name is 1..256 bytes of valid UTF-8 in Unicode NFC, made only of
// graphic characters (letters, marks, numbers, punctuation, symbols) and
// the ASCII space, with no space at either end, not "." or "..", and none
// of the invisible letters (Hangul fillers, braille blank). This excludes
// C0 and C1 controls, DEL, format characters (category Cf: bidi overrides
// and isolates, zero-width spaces and joiners, the BOM), line and
// paragraph separators, private-use and unassigned code points, and every
// space other than U+0020 (no-break and ideographic spaces, which look
// like it).
func checkName(kind, field, code, s string, maxLen int) *Error {
	if plainName(s, maxLen) {
		return nil // the common case, without the rune checks below
	}
	return checkNameRunes(kind, field, code, s, maxLen)
}

// plainName reports whether s is a name made of printable ASCII alone
// (U+0020..U+007E), which every rule of checkNameRunes accepts: no such
// byte is a control, a format or private-use character, a space other than
// U+0020 or an invisible letter, and ASCII is in NFC. It is a shortcut
// (registration checked every job id rune by rune and for NFC: ~0.7 µs of
// the ~90 µs a command costs), and TestPlainNameAgreesWithTheRules holds it
// to the rules.
func plainName(s string, maxLen int) bool {
	if s == "" || len(s) > maxLen || s[0] == ' ' || s[len(s)-1] == ' ' || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// checkNameRunes is checkName without the shortcut.
func checkNameRunes(kind, field, code, s string, maxLen int) *Error {
	switch {
	case s == "":
		return errorf(code, field, "empty %s", kind)
	case len(s) > maxLen:
		return errorf(code, field, "%s is %d bytes, the limit is %d", kind, len(s), maxLen)
	case !utf8.ValidString(s):
		return errorf(code, field, "%s is not valid UTF-8", kind)
	case s == "." || s == "..":
		return errorf(code, field, "%s may not be %q (it cannot be a URL path segment)", kind, s)
	}
	for _, r := range s {
		if reason := badRune(r); reason != "" {
			return errorf(code, field, "%s contains %s %U", kind, reason, r)
		}
	}
	if first, _ := utf8.DecodeRuneInString(s); first == ' ' {
		return errorf(code, field, "%s starts with a space", kind)
	}
	if last, _ := utf8.DecodeLastRuneInString(s); last == ' ' {
		return errorf(code, field, "%s ends with a space", kind)
	}
	if !norm.NFC.IsNormalString(s) {
		return errorf(code, field, "%s is not in Unicode NFC (normalization form C); send its NFC form, e.g. %q", kind, norm.NFC.String(s))
	}
	return nil
}

// badRune names why r may not appear in a name ("" if it may).
func badRune(r rune) string {
	switch {
	case r == ' ':
		return ""
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
		return "control character"
	case unicode.Is(unicode.Cf, r):
		return "invisible format character"
	case unicode.Is(unicode.Zs, r), r == '\u2028', r == '\u2029':
		return "space other than U+0020"
	case r == '\u115f', r == '\u1160', r == '\u3164', r == '\uffa0', r == '\u2800':
		return "invisible character"
	case unicode.Is(unicode.Co, r):
		return "private-use character"
	case !unicode.IsGraphic(r):
		return "unassigned or non-graphic character"
	}
	return ""
}

// ValidateID checks a job id: the name rules of docs/topics.md ("Ids and
// names"), and not starting with the reserved shard-key prefix.
func ValidateID(id string) error {
	if strings.HasPrefix(id, topology.ShardKeyPrefix) && utf8.ValidString(id) {
		return errorf(CodeReservedID, "id", "job ids may not start with the reserved prefix %q", topology.ShardKeyPrefix)
	}
	if err := checkName("job id", "id", CodeInvalidID, id, MaxIDLen); err != nil {
		return err
	}
	return nil
}

// IsLegacyID reports whether id breaks the name rules (ValidateID) but
// passes those of releases before them: a job may be stored under it.
func IsLegacyID(id string) bool { return ValidateID(id) != nil && validateLegacyID(id) == nil }

// validateLegacyID checks a job id with the rules of releases before the
// name rules (1..256 bytes of UTF-8 without C0 controls or DEL, not
// reserved). Only delete accepts such ids, so that jobs stored under them
// before can still be removed.
func validateLegacyID(id string) error {
	switch {
	case id == "":
		return errorf(CodeInvalidID, "id", "empty job id")
	case len(id) > MaxIDLen:
		return errorf(CodeInvalidID, "id", "job id is %d bytes, the limit is %d", len(id), MaxIDLen)
	case !utf8.ValidString(id):
		return errorf(CodeInvalidID, "id", "job id is not valid UTF-8")
	case strings.HasPrefix(id, topology.ShardKeyPrefix):
		return errorf(CodeReservedID, "id", "job ids may not start with the reserved prefix %q", topology.ShardKeyPrefix)
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f {
			return errorf(CodeInvalidID, "id", "job id contains control character %U", r)
		}
	}
	return nil
}

// ValidateBucket checks a bucket name with the name rules ("" is no bucket).
func ValidateBucket(b string) error { return validateBucket(b) }

func validateBucket(b string) error {
	if b == "" {
		return nil
	}
	if err := checkName("bucket", "bucket", CodeInvalidField, b, MaxBucketLen); err != nil {
		return err
	}
	return nil
}

// derivedTriggerID matches the trigger ids Chronos derives from a record's
// position ("m-<partition>-<offset>" for fires, "b-<partition>-<offset>"
// for bucket triggers); a given trigger id may not look like one.
var derivedTriggerID = regexp.MustCompile(`^[mb]-[0-9]+-[0-9]+$`)

// ValidateTriggerID checks a trigger id ("" lets Chronos derive one): the
// name rules, no '@', not an RFC 3339 time, and not of the derived form
// "m-<p>-<o>" or "b-<p>-<o>". Together with the job id rules this makes a
// fire_id name exactly one fire (see FireID).
func ValidateTriggerID(id string) error {
	if id == "" {
		return nil
	}
	if err := checkName("trigger id", "trigger_id", CodeInvalidField, id, MaxIDLen); err != nil {
		return err
	}
	switch {
	case strings.Contains(id, "@"):
		return errorf(CodeInvalidField, "trigger_id", "trigger id may not contain '@' (it separates the job id in a fire_id)")
	case isRFC3339(id):
		return errorf(CodeInvalidField, "trigger_id", "trigger id may not be an RFC 3339 time (it would read as a scheduled fire's fire_id)")
	case derivedTriggerID.MatchString(id):
		return errorf(CodeInvalidField, "trigger_id", "trigger ids of the form m-<n>-<n> and b-<n>-<n> are reserved for the ones Chronos derives")
	}
	return nil
}

func validateTriggerID(id string) error { return ValidateTriggerID(id) }

// isRFC3339 reports whether s parses as an RFC 3339 time (with or without
// fractional seconds).
func isRFC3339(s string) bool {
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}
