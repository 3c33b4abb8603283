package instance

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"

	"github.com/chronos-scheduler/chronos/topology"
)

// RegisterFlags binds every setting of c that has a flag to fs, with c's
// current values as the defaults (start from Default, then change what a
// command defaults differently, like --http-addr). This is the one mapping
// of flags, and through the binary's CHRONOS_<FLAG> variables of the
// environment, to the configuration; each flag is documented once in
// docs/configuration.md (the TLS and SASL flags in docs/security.md). Only
// the brokers are the binary's own flags.
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "directory for the partition stores (and the embedded broker)")
	fs.Var(&logLevel{&c.LogLevel}, "log-level", "debug, info, warn or error")
	fs.DurationVar(&c.Clock.Resolution, "resolution", c.Clock.Resolution, "clock resolution: fires are dispatched at this granularity")
	fs.DurationVar(&c.Clock.MaxAhead, "clock-max-ahead", c.Clock.MaxAhead, "how far an instance's tick may be ahead of the broker's time (negative: unbounded)")
	fs.IntVar(&c.Fanout.ChunkSize, "fanout-chunk", c.Fanout.ChunkSize, "due jobs fired per produce-and-ack round")
	fs.IntVar(&c.Fanout.ChunkBytes, "fanout-chunk-bytes", c.Fanout.ChunkBytes, "most bytes of dispatch events a fan-out chunk builds before producing them")
	fs.DurationVar(&c.Fanout.Budget, "fanout-budget", c.Fanout.Budget, "how long one callback keeps firing chunks before continuing through the loopback")
	fs.IntVar(&c.Fanout.BackfillRate, "backfill-rate", c.Fanout.BackfillRate, "most fires per second one backfill dispatches")
	fs.IntVar(&c.FetchBufferBytes, "fetch-buffer-bytes", c.FetchBufferBytes, "bytes of records each consumer holds ahead of its callbacks per partition, counted at the largest record --max-payload allows")
	fs.IntVar(&c.Limits.MaxPayload, "max-payload", c.Limits.MaxPayload, "largest job payload in bytes")
	fs.BoolVar(&c.Store.Sync, "sync-store", c.Store.Sync, "fsync every partition store write")
	fs.Int64Var(&c.Store.CacheBytes, "store-cache-bytes", c.Store.CacheBytes, "Pebble block cache of all partition stores together")
	fs.Uint64Var(&c.Store.MemTableBytes, "store-memtable-bytes", c.Store.MemTableBytes, "base memtable size of each partition store (staggered up to 2x by partition)")
	fs.IntVar(&c.Store.RecoveryL0CompactionThreshold, "store-recovery-l0-compaction-threshold", c.Store.RecoveryL0CompactionThreshold, "Pebble level-0 compaction threshold of the scheduler's and the job view's stores while they recover from an empty disk: compactions wait for half as many sublevels (0: Pebble's 4 throughout)")
	fs.BoolVar(&c.History.Off, "no-history", c.History.Off, "run no history group and serve no fire or change history on this instance")
	fs.BoolVar(&c.History.Only, "history-only", c.History.Only, "run only the history group (and the HTTP API) on this instance: no scheduling; run the others with --no-history")
	fs.IntVar(&c.History.Fires, "history-fires", c.History.Fires, "fires kept per job by the history group")
	fs.IntVar(&c.History.Changes, "history-changes", c.History.Changes, "commands (changes) kept per job by the history group")
	fs.Int64Var(&c.History.CacheBytes, "history-cache-bytes", c.History.CacheBytes, "Pebble block cache of the history group's partition stores together")
	fs.StringSliceVar(&c.LagExecutorGroups, "lag-executor-groups", c.LagExecutorGroups, "also export the lag of these consumer groups on chronos-dispatch (your executors)")
	fs.StringVar(&c.PprofAddr, "pprof-addr", c.PprofAddr, "serve Go's /debug/pprof profiles on this address (empty: off; no auth, keep it on localhost)")
	c.registerHTTP(fs)
	c.Kafka.RegisterProducerFlags(fs)
	c.Kafka.RegisterSecurityFlags(fs)
	RegisterLayoutFlags(fs, &c.Layout)
}

func (c *Config) registerHTTP(fs *pflag.FlagSet) {
	h := &c.HTTP
	fs.StringVar(&h.Addr, "http-addr", h.Addr, "address of the HTTP API, /metrics and health checks")
	fs.StringVar(&h.Token, "api-token", h.Token, "DEPRECATED (use --tokens-file): one admin token required on /v1; set CHRONOS_API_TOKEN, never the flag (argv shows in ps)")
	fs.StringVar(&h.TokensFile, "tokens-file", h.TokensFile, "file of named, hashed API tokens with roles and prefixes (make lines with `chronos tokens new`)")
	fs.BoolVar(&h.InsecureNoAuth, "insecure-no-auth", h.InsecureNoAuth, "serve the API without credentials to anyone who reaches --http-addr (INSECURE)")
	fs.StringSliceVar(&h.AllowedOrigins, "allowed-origins", h.AllowedOrigins, "browser origins besides the API's own allowed to call /v1, like https://ops.example.com")
	fs.StringSliceVar(&h.AllowedHosts, "allowed-hosts", h.AllowedHosts, "Host header values the API answers, like chronos.example.com (default: on loopback localhost, 127.0.0.1 and [::1] with the port; elsewhere any)")
	fs.StringVar(&h.ProbeAddr, "probe-addr", h.ProbeAddr, "also serve /healthz, /readyz and /metrics on this address, apart from the API's connections (empty: off)")
	fs.DurationVar(&h.Server.ReadTimeout, "http-read-timeout", h.Server.ReadTimeout, "longest time to read one request, body included (headers: at most 5s)")
	fs.DurationVar(&h.Server.WriteTimeout, "http-write-timeout", h.Server.WriteTimeout, "longest time from a request's headers to the end of its answer")
	fs.DurationVar(&h.Server.IdleTimeout, "http-idle-timeout", h.Server.IdleTimeout, "close keep-alive connections idle this long")
	fs.IntVar(&h.Server.MaxConns, "http-max-conns", h.Server.MaxConns, "most open HTTP connections; at the limit idle or slow ones are closed first")
}

// RegisterLayoutFlags binds the topic flags (--topic-prefix, --partitions,
// --replication) to l, with l's values as the defaults. The tools name an
// instance's topics with the same flags.
func RegisterLayoutFlags(fs *pflag.FlagSet, l *topology.Layout) {
	fs.StringVar(&l.Prefix, "topic-prefix", l.Prefix, "prefix of every topic and group name")
	fs.Int32Var(&l.Partitions, "partitions", l.Partitions, "partitions of the sharded topics (fixed once created)")
	fs.Int16Var(&l.Replication, "replication", l.Replication, "replication factor of created topics (-1: broker default)")
}

// logLevel is the pflag.Value of --log-level.
type logLevel struct{ l *slog.Level }

func (v *logLevel) String() string {
	if v.l == nil {
		return "info"
	}
	return strings.ToLower(v.l.String())
}

func (v *logLevel) Set(s string) error {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return fmt.Errorf("want debug, info, warn or error")
	}
	*v.l = l
	return nil
}

func (v *logLevel) Type() string { return "string" }
