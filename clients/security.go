package clients

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// SASL mechanisms.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// Secret is a string that never prints: String, GoString, MarshalText,
// MarshalJSON and LogValue all return "[redacted]" (or "" when empty), so a
// Config can be logged, printed with %v/%+v/%#v or encoded without leaking
// it. Read the value with Reveal.
type Secret string

const redacted = "[redacted]"

func (s Secret) shown() string {
	if s == "" {
		return ""
	}
	return redacted
}

// Reveal returns the secret itself.
func (s Secret) Reveal() string { return string(s) }

// String implements fmt.Stringer.
func (s Secret) String() string { return s.shown() }

// GoString implements fmt.GoStringer (%#v).
func (s Secret) GoString() string { return fmt.Sprintf("%q", s.shown()) }

// MarshalText implements encoding.TextMarshaler (JSON, YAML, slog text).
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.shown()), nil }

// MarshalJSON implements json.Marshaler.
func (s Secret) MarshalJSON() ([]byte, error) { return fmt.Appendf(nil, "%q", s.shown()), nil }

// Format implements fmt.Formatter so that every verb (%s, %q, %x, ...) is
// redacted, not only %v.
func (s Secret) Format(f fmt.State, verb rune) {
	switch verb {
	case 'q':
		fmt.Fprintf(f, "%q", s.shown())
	case 'v':
		if f.Flag('#') {
			fmt.Fprint(f, s.GoString())
			return
		}
		fmt.Fprint(f, s.shown())
	default:
		fmt.Fprint(f, s.shown())
	}
}

// TLS is the TLS configuration of the Kafka connections.
type TLS struct {
	// Enabled turns TLS on. The other fields need it.
	Enabled bool
	// CAFile is a PEM file of the CAs that sign the brokers' certificates
	// (empty: the system roots).
	CAFile string
	// CertFile and KeyFile are the PEM client certificate and key for
	// mutual TLS (both or neither).
	CertFile, KeyFile string
	// ServerName overrides the host name verified in the brokers'
	// certificates (empty: the host of each broker address).
	ServerName string
	// InsecureSkipVerify disables verification of the brokers'
	// certificates. For tests only: it allows a man in the middle.
	InsecureSkipVerify bool
}

// SASL is the SASL authentication of the Kafka connections.
type SASL struct {
	// Mechanism is "" (no SASL), PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	Mechanism string
	// User is the SASL user name.
	User string
	// Password is the SASL password; it never prints.
	Password Secret
	// PasswordFile, instead of Password, is a file holding the password
	// (trailing newline ignored); it is read whenever a client is built.
	PasswordFile string
}

// validate reports every problem of t.
func (t TLS) validate() []error {
	var errs []error
	if !t.Enabled {
		if t != (TLS{}) {
			errs = append(errs, errors.New("clients: TLS settings given but TLS is not enabled (--tls)"))
		}
		return errs
	}
	if t.CAFile != "" {
		if _, err := t.pool(); err != nil {
			errs = append(errs, err)
		}
	}
	switch {
	case t.CertFile != "" && t.KeyFile == "":
		errs = append(errs, errors.New("clients: TLS client certificate without a key file"))
	case t.CertFile == "" && t.KeyFile != "":
		errs = append(errs, errors.New("clients: TLS client key without a certificate file"))
	case t.CertFile != "":
		if _, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile); err != nil {
			errs = append(errs, fmt.Errorf("clients: TLS client certificate: %w", err))
		}
	}
	return errs
}

func (t TLS) pool() (*x509.CertPool, error) {
	pem, err := os.ReadFile(t.CAFile)
	if err != nil {
		return nil, fmt.Errorf("clients: TLS CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("clients: TLS CA file %s holds no PEM certificate", t.CAFile)
	}
	return pool, nil
}

// Config returns the *tls.Config of t, nil if TLS is disabled.
func (t TLS) Config() (*tls.Config, error) {
	if !t.Enabled {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName,
		InsecureSkipVerify: t.InsecureSkipVerify} // #nosec G402 -- opt-in, documented as test-only
	if t.CAFile != "" {
		pool, err := t.pool()
		if err != nil {
			return nil, err
		}
		c.RootCAs = pool
	}
	if t.CertFile != "" || t.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("clients: TLS client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// tlsConfig is Config for building clients: a broken configuration (which
// Validate reports) fails every handshake instead of falling back.
func (t TLS) tlsConfig() *tls.Config {
	c, err := t.Config()
	if err != nil {
		return &tls.Config{MinVersion: tls.VersionTLS12,
			VerifyConnection: func(tls.ConnectionState) error { return err }}
	}
	return c
}

func (s SASL) validate() []error {
	var errs []error
	switch s.Mechanism {
	case "":
		if s.User != "" || s.Password != "" || s.PasswordFile != "" {
			errs = append(errs, errors.New("clients: SASL user or password given without a mechanism (--sasl-mechanism)"))
		}
		return errs
	case SASLPlain, SASLScramSHA256, SASLScramSHA512:
	default:
		errs = append(errs, fmt.Errorf("clients: SASL mechanism %q, want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", s.Mechanism))
	}
	if s.User == "" {
		errs = append(errs, errors.New("clients: SASL without a user"))
	}
	switch {
	case s.Password != "" && s.PasswordFile != "":
		errs = append(errs, errors.New("clients: SASL password and password file both given; set one"))
	case s.Password == "" && s.PasswordFile == "":
		errs = append(errs, errors.New("clients: SASL without a password"))
	case s.PasswordFile != "":
		if _, err := s.password(); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// password returns the password, read from PasswordFile if that is set.
func (s SASL) password() (string, error) {
	if s.PasswordFile == "" {
		return s.Password.Reveal(), nil
	}
	b, err := os.ReadFile(s.PasswordFile)
	if err != nil {
		return "", fmt.Errorf("clients: SASL password file: %w", err)
	}
	p := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if p == "" {
		return "", fmt.Errorf("clients: SASL password file %s is empty", s.PasswordFile)
	}
	return p, nil
}

// mechanism returns the franz-go mechanism of s; the password is read at
// each authentication, so a rotated password file is picked up by new
// connections.
func (s SASL) mechanism() sasl.Mechanism {
	switch s.Mechanism {
	case SASLPlain:
		return plain.Plain(func(context.Context) (plain.Auth, error) {
			p, err := s.password()
			return plain.Auth{User: s.User, Pass: p}, err
		})
	case SASLScramSHA256, SASLScramSHA512:
		fn := func(context.Context) (scram.Auth, error) {
			p, err := s.password()
			return scram.Auth{User: s.User, Pass: p}, err
		}
		if s.Mechanism == SASLScramSHA256 {
			return scram.Sha256(fn)
		}
		return scram.Sha512(fn)
	}
	return nil
}

// kgoSecurity returns the franz-go options of the TLS and SASL settings.
func (c Config) kgoSecurity() []kgo.Opt {
	var opts []kgo.Opt
	if c.TLS.Enabled {
		opts = append(opts, kgo.DialTLSConfig(c.TLS.tlsConfig()))
	}
	if m := c.SASL.mechanism(); m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	return opts
}

// saramaSecurity sets the TLS and SASL settings on s.
func (c Config) saramaSecurity(s *sarama.Config) {
	if c.TLS.Enabled {
		s.Net.TLS.Enable = true
		s.Net.TLS.Config = c.TLS.tlsConfig()
	}
	if c.SASL.Mechanism == "" {
		return
	}
	s.Net.SASL.Enable = true
	s.Net.SASL.Handshake = true
	s.Net.SASL.Version = sarama.SASLHandshakeV1
	s.Net.SASL.User = c.SASL.User
	s.Net.SASL.Password, _ = c.SASL.password() // empty on error: sarama refuses the config
	switch c.SASL.Mechanism {
	case SASLPlain:
		s.Net.SASL.Mechanism = sarama.SASLTypePlaintext
	case SASLScramSHA256:
		s.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA256
		s.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{sha512: false} }
	case SASLScramSHA512:
		s.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
		s.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{sha512: true} }
	default:
		s.Net.SASL.Mechanism = sarama.SASLMechanism(c.SASL.Mechanism) // Validate reports it; sarama refuses it
	}
}

// scramClient is sarama's SCRAMClient on top of franz-go's SCRAM
// implementation (RFC 5802), so no further module is needed.
type scramClient struct {
	sha512  bool
	session sasl.Session
	first   []byte
	done    bool
}

// Begin starts a conversation for user and password.
func (c *scramClient) Begin(user, password, authzID string) error {
	a := scram.Auth{Zid: authzID, User: user, Pass: password}
	m := a.AsSha256Mechanism()
	if c.sha512 {
		m = a.AsSha512Mechanism()
	}
	s, first, err := m.Authenticate(context.Background(), "")
	if err != nil {
		return err
	}
	c.session, c.first, c.done = s, first, false
	return nil
}

// Step answers the server's challenge; the first call, with no challenge,
// returns the client-first message.
func (c *scramClient) Step(challenge string) (string, error) {
	if c.session == nil {
		return "", errors.New("clients: SCRAM step before begin")
	}
	if c.first != nil {
		first := c.first
		c.first = nil
		return string(first), nil
	}
	done, resp, err := c.session.Challenge([]byte(challenge))
	if err != nil {
		return "", err
	}
	c.done = done
	return string(resp), nil
}

// Done reports whether the conversation is over.
func (c *scramClient) Done() bool { return c.done }
