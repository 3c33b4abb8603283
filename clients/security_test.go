package clients_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/clients"
)

const (
	testUser     = "chronos"
	testPassword = "s3cr3t-Pa55word"
	testTopic    = "sec"
)

// cluster starts a one-broker kfake cluster with the topic testTopic.
func cluster(t *testing.T, opts ...kfake.Opt) []string {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(1, testTopic)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// roundTrip produces one record and consumes it with kgo clients of cfg.
func roundTrip(t *testing.T, cfg clients.Config) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	p, err := cfg.NewKgo(kgo.RetryTimeout(3 * time.Second))
	require.NoError(t, err)
	defer p.Close()
	value := fmt.Sprintf("v-%d", time.Now().UnixNano())
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: testTopic, Key: []byte("k"), Value: []byte(value)}).FirstErr(); err != nil {
		return err
	}
	c, err := cfg.NewKgo(kgo.ConsumeTopics(testTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer c.Close()
	for {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return errs[0].Err
		}
		for _, r := range fs.Records() {
			if string(r.Value) == value {
				return nil
			}
		}
	}
}

// saramaConnect builds a sarama client from cfg.Sarama and refreshes the
// metadata, as goka does.
func saramaConnect(cfg clients.Config) error {
	s := cfg.Sarama()
	s.Metadata.Retry.Max = 1
	s.Metadata.Retry.Backoff = 50 * time.Millisecond
	s.Net.DialTimeout, s.Net.ReadTimeout, s.Net.WriteTimeout = 3*time.Second, 3*time.Second, 3*time.Second
	sc, err := sarama.NewClient(cfg.Brokers, s)
	if err != nil {
		return err
	}
	defer sc.Close()
	if err := sc.RefreshMetadata(testTopic); err != nil {
		return err
	}
	_, err = sc.Partitions(testTopic)
	return err
}

// ping connects a kgo client of cfg to the cluster.
func ping(t *testing.T, cfg clients.Config) error {
	t.Helper()
	cl, err := cfg.NewKgo()
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	return cl.Ping(ctx)
}

func TestSASL(t *testing.T) {
	t.Parallel()
	for _, mech := range []string{clients.SASLPlain, clients.SASLScramSHA256, clients.SASLScramSHA512} {
		t.Run(mech, func(t *testing.T) {
			t.Parallel()
			brokers := cluster(t, kfake.EnableSASL(), kfake.Superuser(mech, testUser, testPassword))
			cfg := clients.Default(brokers...)
			cfg.SASL = clients.SASL{Mechanism: mech, User: testUser, Password: testPassword}
			require.NoError(t, cfg.Validate())

			require.NoError(t, roundTrip(t, cfg), "kgo with the right password")
			require.NoError(t, saramaConnect(cfg), "sarama with the right password")

			file := filepath.Join(t.TempDir(), "password")
			require.NoError(t, os.WriteFile(file, []byte(testPassword+"\n"), 0o600))
			fromFile := cfg
			fromFile.SASL.Password, fromFile.SASL.PasswordFile = "", file
			require.NoError(t, fromFile.Validate())
			require.NoError(t, ping(t, fromFile), "kgo with the password file")
			require.NoError(t, saramaConnect(fromFile), "sarama with the password file")

			wrong := cfg
			wrong.SASL.Password = "wrong"
			kerr, serr := ping(t, wrong), saramaConnect(wrong)
			t.Logf("wrong password: kgo: %v; sarama: %v", kerr, serr)
			require.Error(t, kerr, "kgo with a wrong password")
			require.Error(t, serr, "sarama with a wrong password")

			none := cfg
			none.SASL = clients.SASL{}
			require.Error(t, ping(t, none), "kgo without SASL")
			require.Error(t, saramaConnect(none), "sarama without SASL")
		})
	}
}

// pki is a test CA with a server certificate for 127.0.0.1 and a client
// certificate, as PEM files in a temporary directory.
type pki struct {
	dir                   string
	caFile                string
	clientCert, clientKey string
	server                tls.Certificate
	pool                  *x509.CertPool
}

func newPKI(t *testing.T) pki {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "chronos test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	issue := func(serial int64, cn string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			DNSNames: []string{"localhost", "kafka.test"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		require.NoError(t, err)
		kder, err := x509.MarshalECPrivateKey(key)
		require.NoError(t, err)
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	}
	p := pki{dir: dir, caFile: filepath.Join(dir, "ca.pem"), clientCert: filepath.Join(dir, "client.pem"),
		clientKey: filepath.Join(dir, "client-key.pem"), pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	require.NoError(t, os.WriteFile(p.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600))
	sc, sk := issue(2, "127.0.0.1", x509.ExtKeyUsageServerAuth)
	p.server, err = tls.X509KeyPair(sc, sk)
	require.NoError(t, err)
	cc, ck := issue(3, "chronos", x509.ExtKeyUsageClientAuth)
	require.NoError(t, os.WriteFile(p.clientCert, cc, 0o600))
	require.NoError(t, os.WriteFile(p.clientKey, ck, 0o600))
	return p
}

func TestTLS(t *testing.T) {
	t.Parallel()
	p := newPKI(t)

	t.Run("server certificate", func(t *testing.T) {
		t.Parallel()
		brokers := cluster(t, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{p.server}, MinVersion: tls.VersionTLS12}))
		cfg := clients.Default(brokers...)
		cfg.TLS = clients.TLS{Enabled: true, CAFile: p.caFile}
		require.NoError(t, cfg.Validate())
		require.NoError(t, roundTrip(t, cfg), "kgo with the CA")
		require.NoError(t, saramaConnect(cfg), "sarama with the CA")

		named := cfg
		named.TLS.ServerName = "kafka.test"
		require.NoError(t, ping(t, named), "kgo with a server name in the certificate")
		require.NoError(t, saramaConnect(named), "sarama with a server name in the certificate")
		named.TLS.ServerName = "elsewhere.test"
		require.Error(t, ping(t, named), "kgo with a server name not in the certificate")
		require.Error(t, saramaConnect(named), "sarama with a server name not in the certificate")

		noCA := cfg
		noCA.TLS.CAFile = "" // system roots: the test CA is unknown
		require.Error(t, ping(t, noCA), "kgo without the CA")
		require.Error(t, saramaConnect(noCA), "sarama without the CA")

		skip := noCA
		skip.TLS.InsecureSkipVerify = true
		require.NoError(t, ping(t, skip), "kgo skipping verification")

		plain := cfg
		plain.TLS = clients.TLS{}
		require.Error(t, ping(t, plain), "kgo without TLS")
	})

	t.Run("mutual TLS with SASL", func(t *testing.T) {
		t.Parallel()
		brokers := cluster(t, kfake.EnableSASL(), kfake.Superuser(clients.SASLScramSHA512, testUser, testPassword),
			kfake.TLS(&tls.Config{Certificates: []tls.Certificate{p.server}, ClientAuth: tls.RequireAndVerifyClientCert,
				ClientCAs: p.pool, MinVersion: tls.VersionTLS12}))
		cfg := clients.Default(brokers...)
		cfg.TLS = clients.TLS{Enabled: true, CAFile: p.caFile, CertFile: p.clientCert, KeyFile: p.clientKey}
		cfg.SASL = clients.SASL{Mechanism: clients.SASLScramSHA512, User: testUser, Password: testPassword}
		require.NoError(t, cfg.Validate())
		require.NoError(t, roundTrip(t, cfg), "kgo with a client certificate")
		require.NoError(t, saramaConnect(cfg), "sarama with a client certificate")

		anon := cfg
		anon.TLS.CertFile, anon.TLS.KeyFile = "", ""
		require.Error(t, ping(t, anon), "kgo without a client certificate")
		require.Error(t, saramaConnect(anon), "sarama without a client certificate")
	})
}

func TestValidateSecurity(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	notPEM := filepath.Join(t.TempDir(), "not.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("hello"), 0o600))
	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	missing := filepath.Join(t.TempDir(), "missing")

	tests := []struct {
		name string
		tls  clients.TLS
		sasl clients.SASL
		want []string // every one in the error; none: valid
	}{
		{"none", clients.TLS{}, clients.SASL{}, nil},
		{"tls system roots", clients.TLS{Enabled: true}, clients.SASL{}, nil},
		{"mtls", clients.TLS{Enabled: true, CAFile: p.caFile, CertFile: p.clientCert, KeyFile: p.clientKey, ServerName: "x"}, clients.SASL{}, nil},
		{"plain", clients.TLS{}, clients.SASL{Mechanism: "PLAIN", User: "u", Password: "p"}, nil},
		{"scram file", clients.TLS{}, clients.SASL{Mechanism: "SCRAM-SHA-256", User: "u", PasswordFile: p.caFile}, nil},
		{"tls settings without tls", clients.TLS{CAFile: p.caFile}, clients.SASL{}, []string{"not enabled"}},
		{"unreadable CA", clients.TLS{Enabled: true, CAFile: missing}, clients.SASL{}, []string{"CA file", "no such file"}},
		{"CA not PEM", clients.TLS{Enabled: true, CAFile: notPEM}, clients.SASL{}, []string{"no PEM certificate"}},
		{"cert without key", clients.TLS{Enabled: true, CertFile: p.clientCert}, clients.SASL{}, []string{"without a key"}},
		{"key without cert", clients.TLS{Enabled: true, KeyFile: p.clientKey}, clients.SASL{}, []string{"without a certificate"}},
		{"mismatched pair", clients.TLS{Enabled: true, CertFile: p.clientCert, KeyFile: p.caFile}, clients.SASL{}, []string{"client certificate"}},
		{"unknown mechanism", clients.TLS{}, clients.SASL{Mechanism: "GSSAPI", User: "u", Password: "p"}, []string{`"GSSAPI"`}},
		{"user without password", clients.TLS{}, clients.SASL{Mechanism: "PLAIN", User: "u"}, []string{"without a password"}},
		{"password without user", clients.TLS{}, clients.SASL{Mechanism: "PLAIN", Password: "p"}, []string{"without a user"}},
		{"user without mechanism", clients.TLS{}, clients.SASL{User: "u", Password: "p"}, []string{"without a mechanism"}},
		{"password and file", clients.TLS{}, clients.SASL{Mechanism: "PLAIN", User: "u", Password: "p", PasswordFile: p.caFile}, []string{"both"}},
		{"missing password file", clients.TLS{}, clients.SASL{Mechanism: "PLAIN", User: "u", PasswordFile: missing}, []string{"password file"}},
		{"empty password file", clients.TLS{}, clients.SASL{Mechanism: "PLAIN", User: "u", PasswordFile: empty}, []string{"is empty"}},
		{"every problem at once", clients.TLS{Enabled: true, CAFile: missing, CertFile: p.clientCert},
			clients.SASL{Mechanism: "plain", Password: "p"}, []string{"CA file", "without a key", `"plain"`, "without a user"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := clients.Default("127.0.0.1:9092")
			cfg.TLS, cfg.SASL = tc.tls, tc.sasl
			err := cfg.Validate()
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
			require.NotContains(t, err.Error(), "\"p\"")
		})
	}
}

// TestBrokenTLSFailsClosed: a TLS configuration Validate rejects makes the
// clients fail their handshakes instead of connecting without it.
func TestBrokenTLSFailsClosed(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	brokers := cluster(t, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{p.server}, MinVersion: tls.VersionTLS12}))
	cfg := clients.Default(brokers...)
	cfg.TLS = clients.TLS{Enabled: true, CAFile: p.caFile, InsecureSkipVerify: true, CertFile: p.clientCert}
	require.Error(t, cfg.Validate())
	require.Error(t, ping(t, cfg))
	require.Error(t, saramaConnect(cfg))
}

func TestPasswordNeverPrints(t *testing.T) {
	t.Parallel()
	cfg := clients.Default("127.0.0.1:9092")
	cfg.SASL = clients.SASL{Mechanism: clients.SASLScramSHA256, User: testUser, Password: testPassword}
	var outs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%T"} {
		outs = append(outs, fmt.Sprintf(verb, cfg), fmt.Sprintf(verb, cfg.SASL), fmt.Sprintf(verb, cfg.SASL.Password),
			fmt.Sprintf(verb, &cfg))
	}
	outs = append(outs, fmt.Sprint(cfg), fmt.Sprintln(cfg.SASL.Password), cfg.SASL.Password.String())
	j, err := json.Marshal(cfg)
	require.NoError(t, err)
	outs = append(outs, string(j))
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("text", "kafka", cfg, "sasl", cfg.SASL, "password", cfg.SASL.Password)
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("json", "kafka", cfg, "sasl", cfg.SASL, "password", cfg.SASL.Password)
	outs = append(outs, logs.String())
	for _, out := range outs {
		require.NotContains(t, out, testPassword)
		require.NotContains(t, out, fmt.Sprintf("%x", testPassword))
	}
	require.Contains(t, string(j), `"Password":"[redacted]"`)
	require.Contains(t, fmt.Sprintf("%+v", cfg), "Password:[redacted]")
	require.Contains(t, fmt.Sprintf("%#v", cfg), `Password:"[redacted]"`)
	require.Equal(t, testPassword, cfg.SASL.Password.Reveal())
	require.Equal(t, testPassword, cfg.Sarama().Net.SASL.Password)
	require.Empty(t, fmt.Sprint(clients.Secret("")), "an unset password shows as unset")
}

func TestSaramaConfigValid(t *testing.T) {
	t.Parallel()
	for _, mech := range []string{"", clients.SASLPlain, clients.SASLScramSHA256, clients.SASLScramSHA512} {
		cfg := clients.Default("127.0.0.1:9092")
		cfg.TLS.Enabled = true
		if mech != "" {
			cfg.SASL = clients.SASL{Mechanism: mech, User: "u", Password: "p"}
		}
		s := cfg.Sarama()
		require.NoError(t, s.Validate(), mech)
		require.True(t, s.Net.TLS.Enable)
		require.Equal(t, mech != "", s.Net.SASL.Enable)
		if mech != "" {
			require.Equal(t, sarama.SASLMechanism(mech), s.Net.SASL.Mechanism)
			require.True(t, s.Net.SASL.Handshake)
		}
		require.Equal(t, strings.HasPrefix(mech, "SCRAM"), s.Net.SASL.SCRAMClientGeneratorFunc != nil)
	}
}
