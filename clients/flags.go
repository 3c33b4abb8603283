package clients

import (
	"strings"

	"github.com/spf13/pflag"
)

// RegisterProducerFlags binds the producer settings (--acks, --idempotent,
// --linger, --batch-bytes, --compression) to c, with c's values as the
// defaults.
func (c *Config) RegisterProducerFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.Acks, "acks", c.Acks, "producer acks: all, leader or none")
	fs.BoolVar(&c.Idempotent, "idempotent", c.Idempotent, "idempotent producer (needs acks=all)")
	fs.DurationVar(&c.Linger, "linger", c.Linger, "how long producers wait to fill a batch")
	fs.IntVar(&c.BatchBytes, "batch-bytes", c.BatchBytes, "largest producer batch in bytes")
	fs.StringVar(&c.Compression, "compression", c.Compression, "none, gzip, snappy, lz4 or zstd")
}

// RegisterSecurityFlags binds the TLS and SASL settings of every Kafka
// connection (docs/security.md) to c, with c's values as the defaults. The
// instances and the tools share them.
func (c *Config) RegisterSecurityFlags(fs *pflag.FlagSet) {
	t, s := &c.TLS, &c.SASL
	fs.BoolVar(&t.Enabled, "tls", t.Enabled, "connect to the brokers with TLS")
	fs.StringVar(&t.CAFile, "tls-ca-file", t.CAFile, "PEM file of the CAs of the brokers' certificates (empty: system roots)")
	fs.StringVar(&t.CertFile, "tls-cert-file", t.CertFile, "PEM client certificate for mutual TLS (with --tls-key-file)")
	fs.StringVar(&t.KeyFile, "tls-key-file", t.KeyFile, "PEM client key for mutual TLS (with --tls-cert-file)")
	fs.StringVar(&t.ServerName, "tls-server-name", t.ServerName, "host name to verify in the brokers' certificates (empty: each broker's host)")
	fs.BoolVar(&t.InsecureSkipVerify, "tls-insecure-skip-verify", t.InsecureSkipVerify, "do not verify the brokers' certificates (INSECURE: tests only)")
	fs.Var(&upperString{&s.Mechanism}, "sasl-mechanism", "SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (empty: no SASL)")
	fs.StringVar(&s.User, "sasl-user", s.User, "SASL user")
	fs.StringVar((*string)(&s.Password), "sasl-password", "", "SASL password; prefer CHRONOS_SASL_PASSWORD or --sasl-password-file (flags show in ps)")
	fs.StringVar(&s.PasswordFile, "sasl-password-file", s.PasswordFile, "file holding the SASL password (trailing newline ignored)")
}

// upperString is a pflag.Value that stores its value in upper case.
type upperString struct{ s *string }

func (u *upperString) String() string {
	if u.s == nil {
		return ""
	}
	return *u.s
}

func (u *upperString) Set(v string) error {
	*u.s = strings.ToUpper(v)
	return nil
}

func (u *upperString) Type() string { return "string" }
