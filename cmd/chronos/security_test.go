package main

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
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/clients"
	"github.com/chronos-scheduler/chronos/testenv/timebound"
)

const (
	secUser     = "chronos"
	secPassword = "Kafka-pa55word-never-logged"
)

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestSecurityFlags(t *testing.T) {
	t.Setenv(EnvName("sasl-password"), secPassword)
	t.Setenv(EnvName("tls-server-name"), "kafka.internal")
	var f instanceFlags
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	f.register(fs, "127.0.0.1:0", "")
	require.NoError(t, fs.Parse([]string{"--tls", "--tls-ca-file", "/ca.pem", "--tls-cert-file", "/c.pem", "--tls-key-file", "/k.pem",
		"--tls-insecure-skip-verify", "--sasl-mechanism", "scram-sha-512", "--sasl-user", secUser}))
	require.NoError(t, bindEnv(fs))
	icfg, err := f.config([]string{"b:9093"}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	c := icfg.Kafka
	require.Equal(t, clients.TLS{Enabled: true, CAFile: "/ca.pem", CertFile: "/c.pem", KeyFile: "/k.pem",
		ServerName: "kafka.internal", InsecureSkipVerify: true}, c.TLS)
	require.Equal(t, clients.SASL{Mechanism: clients.SASLScramSHA512, User: secUser, Password: secPassword}, c.SASL)

	// The tools take the same flags, plus --brokers; they validate.
	var conn connFlags
	fs = pflag.NewFlagSet("tail", pflag.ContinueOnError)
	conn.register(fs, "bootstrap brokers")
	require.NoError(t, fs.Parse([]string{"--brokers", "b:9093", "--sasl-mechanism", "PLAIN", "--sasl-user", secUser,
		"--sasl-password-file", "/nonexistent/password"}))
	_, err = conn.config()
	require.ErrorContains(t, err, "password file")
	require.NotContains(t, err.Error(), secPassword)
}

// TestRunWithSASL runs an instance (serve: instance.New and Run, the job
// view, the HTTP server) against a SASL/PLAIN cluster, with the password
// from CHRONOS_SASL_PASSWORD, puts a job through a kgo client of the same
// configuration and waits for its dispatch: goka's sarama consumer groups,
// producers and topic managers, the view and the franz-go clients all
// authenticate. The log and /metrics never show the password.
func TestRunWithSASL(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("PLAIN", secUser, secPassword),
		kfake.BrokerConfigs(map[string]string{"default.replication.factor": "1"}))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()

	t.Setenv(EnvName("sasl-password"), secPassword)
	var f instanceFlags
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	f.register(fs, "127.0.0.1:0", t.TempDir())
	require.NoError(t, fs.Parse([]string{"--partitions", "2", "--sasl-mechanism", "PLAIN", "--sasl-user", secUser}))
	require.NoError(t, bindEnv(fs))
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg, err := f.config(brokers, log)
	require.NoError(t, err)
	kafka := cfg.Kafka
	require.NoError(t, kafka.Validate())

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, false) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not return")
		}
		require.NotContains(t, logs.String(), secPassword)
	}()

	running := regexp.MustCompile(`msg="chronos is running".* http=(http://\S+)`)
	var m []string
	require.Eventually(t, func() bool {
		select {
		case err := <-done:
			t.Fatalf("serve returned early: %v\n%s", err, logs.String())
		default:
		}
		m = running.FindStringSubmatch(logs.String())
		return m != nil
	}, timebound.Scaled(60*time.Second), 50*time.Millisecond)
	line := m[0]
	require.Contains(t, line, "kafka_sasl=PLAIN")
	require.Contains(t, line, "kafka_tls=false")

	cl, err := kafka.NewKgo(kgo.ConsumeTopics(string(cfg.Layout.Dispatch())))
	require.NoError(t, err)
	defer cl.Close()
	put := &kgo.Record{Topic: string(cfg.Layout.Jobs()), Key: []byte("sasl-job"),
		Value: []byte(`{"v":1,"op":"put","job":{"every":"1s","payload":{"hello":"sasl"}}}`)}
	require.NoError(t, cl.ProduceSync(ctx, put).FirstErr())

	wait, stop := context.WithTimeout(ctx, timebound.Scaled(60*time.Second))
	defer stop()
	for found := false; !found; {
		fetches := cl.PollFetches(wait)
		require.NoError(t, wait.Err(), "no dispatch; log:\n%s", logs.String())
		for _, r := range fetches.Records() {
			var ev struct {
				JobID string `json:"job_id"`
			}
			require.NoError(t, json.Unmarshal(r.Value, &ev))
			found = found || ev.JobID == "sasl-job"
		}
	}

	resp, err := http.Get(m[1] + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Contains(t, string(body), "chronos_")
	require.NotContains(t, string(body), secPassword)
}

// writePKI writes a CA and a server certificate for 127.0.0.1 and returns
// the CA file and the server certificate.
func writePKI(t *testing.T) (string, tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &key.PublicKey, key)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	srvTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, key)
	require.NoError(t, err)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600))
	return caFile, tls.Certificate{Certificate: [][]byte{srvDER}, PrivateKey: srvKey}
}

// TestToolsWithTLSAndSCRAM runs topics --create, tail and lag against a
// TLS + SCRAM-SHA-256 cluster with the password in a file.
func TestToolsWithTLSAndSCRAM(t *testing.T) {
	t.Parallel()
	caFile, cert := writePKI(t)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", secUser, secPassword),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}),
		kfake.BrokerConfigs(map[string]string{"default.replication.factor": "1"}))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	pwFile := filepath.Join(t.TempDir(), "password")
	require.NoError(t, os.WriteFile(pwFile, []byte(secPassword+"\n"), 0o600))
	conn := []string{"--brokers", strings.Join(c.ListenAddrs(), ","), "--tls", "--tls-ca-file", caFile,
		"--sasl-mechanism", "SCRAM-SHA-256", "--sasl-user", secUser, "--sasl-password-file", pwFile, "--topic-prefix", "sec.", "--partitions", "2"}

	out, err := run(t, append([]string{"topics", "--create"}, conn...)...)
	require.NoError(t, err)
	require.Contains(t, out, "sec.chronos-dispatch")

	kafka := clients.Default(c.ListenAddrs()...)
	kafka.TLS = clients.TLS{Enabled: true, CAFile: caFile}
	kafka.SASL = clients.SASL{Mechanism: clients.SASLScramSHA256, User: secUser, PasswordFile: pwFile}
	cl, err := kafka.NewKgo()
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	r := &kgo.Record{Topic: "sec.chronos-dispatch", Key: []byte("k"), Value: []byte(`{"fire_id":"k@1"}`)}
	require.NoError(t, cl.ProduceSync(t.Context(), r).FirstErr())

	out, err = run(t, append([]string{"tail", "--from-beginning", "--count", "1", "--timeout", "20s"}, conn...)...)
	require.NoError(t, err)
	require.Equal(t, `{"fire_id":"k@1"}`+"\n", out)

	out, err = run(t, append([]string{"lag"}, conn...)...)
	require.NoError(t, err)
	require.Contains(t, out, "sec.chronos-jobs")

	// Without the CA or with a wrong password the tools fail.
	noCA := withoutFlag(conn, "--tls-ca-file")
	_, err = run(t, append([]string{"tail", "--from-beginning", "--count", "1", "--timeout", "3s"}, noCA...)...)
	require.Error(t, err)
	wrong := withoutFlag(conn, "--sasl-password-file")
	wrong = append(wrong, "--sasl-password", "wrong")
	_, err = run(t, append([]string{"tail", "--from-beginning", "--count", "1", "--timeout", "3s"}, wrong...)...)
	require.Error(t, err)
	// An invalid configuration is reported before connecting, without the password.
	_, err = run(t, append([]string{"lag"}, append(wrong, "--sasl-mechanism", "GSSAPI")...)...)
	require.ErrorContains(t, err, "GSSAPI")
	require.NotContains(t, err.Error(), "wrong")
}

// withoutFlag returns args without flag and its value.
func withoutFlag(args []string, flag string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == flag {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}
