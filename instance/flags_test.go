package instance

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

// TestRegisterFlagsBindsEverySetting: every flag RegisterFlags registers
// sets its field of the configuration (a flag that sets nothing, or a
// setting reached by no flag, fails), and is documented in docs/.
func TestRegisterFlagsBindsEverySetting(t *testing.T) {
	t.Parallel()
	args := map[string]string{
		"data-dir": "/d", "log-level": "debug", "resolution": "2s", "clock-max-ahead": "-1s",
		"fanout-chunk": "7", "fanout-chunk-bytes": "4096", "fanout-budget": "1s", "backfill-rate": "12", "max-payload": "1000", "fetch-buffer-bytes": "4194304",
		"sync-store": "true", "store-cache-bytes": "1024", "store-memtable-bytes": "2048", "store-recovery-l0-compaction-threshold": "9",
		"lag-executor-groups": "e1,e2", "pprof-addr": "127.0.0.1:6060",
		"no-history": "true", "history-only": "true", "history-fires": "10", "history-changes": "11", "history-cache-bytes": "4096",
		"http-addr": "127.0.0.1:1", "api-token": "t", "tokens-file": "/tokens", "insecure-no-auth": "true",
		"allowed-origins": "https://a.example", "allowed-hosts": "h.example", "probe-addr": "127.0.0.1:2",
		"http-read-timeout": "1s", "http-write-timeout": "2s", "http-idle-timeout": "3s", "http-max-conns": "9",
		"acks": "leader", "idempotent": "false", "linger": "1ms", "batch-bytes": "2048", "compression": "zstd",
		"tls": "true", "tls-ca-file": "/ca", "tls-cert-file": "/c", "tls-key-file": "/k", "tls-server-name": "k.example",
		"tls-insecure-skip-verify": "true", "sasl-mechanism": "plain", "sasl-user": "u", "sasl-password": "p",
		"sasl-password-file": "/p", "topic-prefix": "x.", "partitions": "3", "replication": "2",
	}
	cfg := Default()
	fs := pflag.NewFlagSet("instance", pflag.ContinueOnError)
	cfg.RegisterFlags(fs)
	docs := readDocs(t, "../docs/configuration.md", "../docs/security.md")
	fs.VisitAll(func(f *pflag.Flag) {
		v, ok := args[f.Name]
		require.True(t, ok, "flag --%s: add it to this test", f.Name)
		require.NoError(t, fs.Set(f.Name, v))
		require.Contains(t, docs, "`--"+f.Name+"`", "flag --%s is not documented", f.Name)
	})
	require.Len(t, args, countFlags(fs), "a flag of this test is not registered")

	want := Default()
	want.DataDir, want.LogLevel = "/d", -4
	want.Clock.Resolution, want.Clock.MaxAhead = 2*time.Second, -time.Second
	want.Fanout.ChunkSize, want.Fanout.ChunkBytes, want.Fanout.Budget, want.Fanout.BackfillRate = 7, 4096, time.Second, 12
	want.Limits.MaxPayload, want.FetchBufferBytes = 1000, 4194304
	want.Store.Sync, want.Store.CacheBytes, want.Store.MemTableBytes, want.Store.RecoveryL0CompactionThreshold = true, 1024, 2048, 9
	want.LagExecutorGroups, want.PprofAddr = []string{"e1", "e2"}, "127.0.0.1:6060"
	want.History = History{Off: true, Only: true, Fires: 10, Changes: 11, CacheBytes: 4096}
	h := &want.HTTP
	h.Addr, h.Token, h.TokensFile, h.InsecureNoAuth, h.ProbeAddr = "127.0.0.1:1", "t", "/tokens", true, "127.0.0.1:2"
	h.AllowedOrigins, h.AllowedHosts = []string{"https://a.example"}, []string{"h.example"}
	h.Server.ReadTimeout, h.Server.WriteTimeout, h.Server.IdleTimeout, h.Server.MaxConns = time.Second, 2*time.Second, 3*time.Second, 9
	k := &want.Kafka
	k.Acks, k.Idempotent, k.Linger, k.BatchBytes, k.Compression = "leader", false, time.Millisecond, 2048, "zstd"
	k.TLS.Enabled, k.TLS.CAFile, k.TLS.CertFile, k.TLS.KeyFile, k.TLS.ServerName, k.TLS.InsecureSkipVerify = true, "/ca", "/c", "/k", "k.example", true
	k.SASL.Mechanism, k.SASL.User, k.SASL.Password, k.SASL.PasswordFile = "PLAIN", "u", "p", "/p"
	want.Layout.Prefix, want.Layout.Partitions, want.Layout.Replication = "x.", 3, 2
	require.Equal(t, want, cfg)
}

func countFlags(fs *pflag.FlagSet) int {
	n := 0
	fs.VisitAll(func(*pflag.Flag) { n++ })
	return n
}

func readDocs(t *testing.T, paths ...string) string {
	var b strings.Builder
	for _, p := range paths {
		d, err := os.ReadFile(p)
		require.NoError(t, err)
		b.Write(d)
	}
	return b.String()
}

// --store-recovery-l0-compaction-threshold takes 0 to 64 and says so.
func TestRecoveryL0CompactionThresholdIsValidated(t *testing.T) {
	t.Parallel()
	for v, ok := range map[int]bool{-1: false, 0: true, 4: true, 16: true, 64: true, 65: false} {
		cfg := Default()
		cfg.DataDir = "/d"
		cfg.Store.RecoveryL0CompactionThreshold = v
		if err := cfg.Validate(); ok {
			require.NotContains(t, fmt.Sprint(err), "l0-compaction-threshold", "%d", v)
		} else {
			require.ErrorContains(t, err, fmt.Sprintf("--store-recovery-l0-compaction-threshold %d, want 0 (off: Pebble's 4 throughout) to 64", v))
		}
	}
}
