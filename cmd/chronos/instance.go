package main

import (
	"context"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/chronos-scheduler/chronos/clients"
	"github.com/chronos-scheduler/chronos/instance"
	"github.com/chronos-scheduler/chronos/topology"
)

// instanceFlags are the flags of an instance (dev, run, bench): the
// instance's own settings, bound by instance.Config.RegisterFlags (the one
// mapping of flags to the configuration), plus the connection's TLS and
// SASL flags, which the tools share.
type instanceFlags struct {
	cfg      instance.Config
	security securityFlags
}

// register binds the flags with the command's defaults of --http-addr and
// --data-dir.
func (f *instanceFlags) register(fs *pflag.FlagSet, httpDefault, dataDirDefault string) {
	f.cfg = instance.Default()
	f.cfg.HTTP.Addr, f.cfg.DataDir = httpDefault, dataDirDefault
	f.cfg.RegisterFlags(fs)
	f.security.register(fs)
}

// config returns the instance configuration on brokers, with the
// connection's security, the test clock hook and log as the logger.
func (f *instanceFlags) config(brokers []string, log *slog.Logger) (instance.Config, error) {
	cfg := f.cfg
	cfg.Kafka.Brokers = brokers
	f.security.apply(&cfg.Kafka)
	now, err := testClock(log)
	if err != nil {
		return instance.Config{}, err
	}
	cfg.Now, cfg.Logger = now, log
	return cfg, nil
}

// serve runs an instance of cfg until ctx ends.
func serve(ctx context.Context, cfg instance.Config) error {
	inst, err := instance.New(ctx, cfg)
	if err != nil {
		return err
	}
	return inst.Run(ctx)
}

// securityFlags are the TLS and SASL settings of every Kafka connection,
// shared by dev, run, bench and the tools (docs/security.md).
type securityFlags struct {
	tls              bool
	tlsCAFile        string
	tlsCertFile      string
	tlsKeyFile       string
	tlsServerName    string
	tlsInsecure      bool
	saslMechanism    string
	saslUser         string
	saslPassword     string
	saslPasswordFile string
}

// connFlags are the connection flags of the tools: brokers plus security.
type connFlags struct {
	brokers  []string
	security securityFlags
}

// layoutFlags are the topic flags of the tools, the same as an instance's.
type layoutFlags struct{ l topology.Layout }

func (s *securityFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&s.tls, "tls", false, "connect to the brokers with TLS")
	fs.StringVar(&s.tlsCAFile, "tls-ca-file", "", "PEM file of the CAs of the brokers' certificates (empty: system roots)")
	fs.StringVar(&s.tlsCertFile, "tls-cert-file", "", "PEM client certificate for mutual TLS (with --tls-key-file)")
	fs.StringVar(&s.tlsKeyFile, "tls-key-file", "", "PEM client key for mutual TLS (with --tls-cert-file)")
	fs.StringVar(&s.tlsServerName, "tls-server-name", "", "host name to verify in the brokers' certificates (empty: each broker's host)")
	fs.BoolVar(&s.tlsInsecure, "tls-insecure-skip-verify", false, "do not verify the brokers' certificates (INSECURE: tests only)")
	fs.StringVar(&s.saslMechanism, "sasl-mechanism", "", "SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (empty: no SASL)")
	fs.StringVar(&s.saslUser, "sasl-user", "", "SASL user")
	fs.StringVar(&s.saslPassword, "sasl-password", "", "SASL password; prefer CHRONOS_SASL_PASSWORD or --sasl-password-file (flags show in ps)")
	fs.StringVar(&s.saslPasswordFile, "sasl-password-file", "", "file holding the SASL password (trailing newline ignored)")
}

func (s *securityFlags) apply(c *clients.Config) {
	c.TLS = clients.TLS{Enabled: s.tls, CAFile: s.tlsCAFile, CertFile: s.tlsCertFile, KeyFile: s.tlsKeyFile,
		ServerName: s.tlsServerName, InsecureSkipVerify: s.tlsInsecure}
	c.SASL = clients.SASL{Mechanism: strings.ToUpper(s.saslMechanism), User: s.saslUser,
		Password: clients.Secret(s.saslPassword), PasswordFile: s.saslPasswordFile}
}

// register adds --brokers (usage: its help text) and the security flags.
func (c *connFlags) register(fs *pflag.FlagSet, usage string) {
	fs.StringSliceVar(&c.brokers, "brokers", []string{"127.0.0.1:9092"}, usage)
	c.security.register(fs)
}

// config returns the validated client configuration of a tool.
func (c *connFlags) config() (clients.Config, error) {
	cfg := clients.Default(c.brokers...)
	c.security.apply(&cfg)
	if err := cfg.Validate(); err != nil {
		return clients.Config{}, err
	}
	return cfg, nil
}

// admin returns an admin client for the connection settings and the func
// that closes it.
func (c *connFlags) admin() (*kadm.Client, func(), error) {
	kafka, err := c.config()
	if err != nil {
		return nil, nil, err
	}
	cl, err := kafka.NewKgo()
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl.Close, nil
}

func (l *layoutFlags) register(fs *pflag.FlagSet) {
	l.l = instance.Default().Layout
	instance.RegisterLayoutFlags(fs, &l.l)
}

func (l *layoutFlags) layout() topology.Layout { return l.l }
