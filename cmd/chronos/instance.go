package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/chronos-scheduler/chronos/clients"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/instance"
	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/processors/scheduler"
	"github.com/chronos-scheduler/chronos/topology"
	"github.com/chronos-scheduler/chronos/views"
)

// instanceFlags are the settings of a scheduler instance (dev and run).
// Each is documented in docs/configuration.md.
type instanceFlags struct {
	dataDir    string
	httpAddr   string
	apiToken   string
	auth       authFlags
	http       views.HTTPOptions
	logLevel   string
	kafka      kafkaFlags
	layout     layoutFlags
	resolution time.Duration
	maxAhead   time.Duration
	chunk      int
	chunkBytes int
	maxPayload int
	syncStore  bool
	storeCache int64
	memTable   uint64
	pprofAddr  string
	budget     time.Duration
	executors  []string
}

type kafkaFlags struct {
	acks        string
	idempotent  bool
	linger      time.Duration
	batchBytes  int
	compression string
	security    securityFlags
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

type layoutFlags struct {
	prefix      string
	partitions  int32
	replication int16
}

func (k *kafkaFlags) register(fs *pflag.FlagSet) {
	d := clients.Default()
	fs.StringVar(&k.acks, "acks", d.Acks, "producer acks: all, leader or none")
	fs.BoolVar(&k.idempotent, "idempotent", d.Idempotent, "idempotent producer (needs acks=all)")
	fs.DurationVar(&k.linger, "linger", d.Linger, "how long producers wait to fill a batch")
	fs.IntVar(&k.batchBytes, "batch-bytes", d.BatchBytes, "largest producer batch in bytes")
	fs.StringVar(&k.compression, "compression", d.Compression, "none, gzip, snappy, lz4 or zstd")
	k.security.register(fs)
}

func (k *kafkaFlags) config(brokers []string) clients.Config {
	c := clients.Default(brokers...)
	c.Acks, c.Idempotent, c.Linger, c.BatchBytes, c.Compression = k.acks, k.idempotent, k.linger, k.batchBytes, k.compression
	k.security.apply(&c)
	return c
}

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
	fs.StringVar(&l.prefix, "topic-prefix", "", "prefix of every topic and group name")
	fs.Int32Var(&l.partitions, "partitions", topology.DefaultPartitions, "partitions of the sharded topics (fixed once created)")
	fs.Int16Var(&l.replication, "replication", -1, "replication factor of created topics (-1: broker default)")
}

func (l *layoutFlags) layout() topology.Layout {
	return topology.Layout{Names: topology.Names{Prefix: l.prefix}, Partitions: l.partitions, Replication: l.replication}
}

func (f *instanceFlags) register(fs *pflag.FlagSet, httpDefault string) {
	fs.StringVar(&f.dataDir, "data-dir", "./.chronos", "directory for the partition stores (and the embedded broker)")
	fs.StringVar(&f.httpAddr, "http-addr", httpDefault, "address of the HTTP API, /metrics and health checks")
	fs.StringVar(&f.apiToken, "api-token", "", "DEPRECATED (use --tokens-file): one admin token required on /v1; set CHRONOS_API_TOKEN, never the flag (argv shows in ps)")
	f.auth.register(fs)
	fs.DurationVar(&f.http.ReadTimeout, "http-read-timeout", views.DefaultReadTimeout, "longest time to read one request, body included (headers: at most 5s)")
	fs.DurationVar(&f.http.WriteTimeout, "http-write-timeout", views.DefaultWriteTimeout, "longest time from a request's headers to the end of its answer")
	fs.DurationVar(&f.http.IdleTimeout, "http-idle-timeout", views.DefaultIdleTimeout, "close keep-alive connections idle this long")
	fs.IntVar(&f.http.MaxConns, "http-max-conns", views.DefaultMaxConns, "most open HTTP connections; at the limit idle or slow ones are closed first")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.DurationVar(&f.resolution, "resolution", time.Second, "clock resolution: fires are dispatched at this granularity")
	fs.DurationVar(&f.maxAhead, "clock-max-ahead", time.Second, "how far an instance's tick may be ahead of the broker's time (negative: unbounded)")
	fs.IntVar(&f.chunk, "fanout-chunk", scheduler.DefaultChunkSize, "due jobs fired per produce-and-ack round")
	fs.IntVar(&f.chunkBytes, "fanout-chunk-bytes", scheduler.DefaultChunkBytes, "most bytes of dispatch events a fan-out chunk builds before producing them")
	fs.DurationVar(&f.budget, "fanout-budget", scheduler.DefaultChunkBudget, "how long one callback keeps firing chunks before continuing through the loopback")
	fs.IntVar(&f.maxPayload, "max-payload", codecs.DefaultMaxPayload, "largest job payload in bytes")
	fs.BoolVar(&f.syncStore, "sync-store", false, "fsync every partition store write")
	fs.StringSliceVar(&f.executors, "lag-executor-groups", nil, "also export the lag of these consumer groups on chronos-dispatch (your executors)")
	fs.Int64Var(&f.storeCache, "store-cache-bytes", 256<<20, "Pebble block cache of all partition stores together")
	fs.StringVar(&f.pprofAddr, "pprof-addr", "", "serve Go's /debug/pprof profiles on this address (empty: off; no auth, keep it on localhost)")
	fs.Uint64Var(&f.memTable, "store-memtable-bytes", scheduler.DefaultMemTableSize, "base memtable size of each partition store (staggered up to 2x by partition)")
	f.kafka.register(fs)
	f.layout.register(fs)
}

func (f *instanceFlags) logger() (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(f.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", f.logLevel)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})), nil
}

// serve runs an instance against brokers with its HTTP server until ctx ends.
func (f *instanceFlags) serve(ctx context.Context, brokers []string, storeDir string, log *slog.Logger) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	cfg := instance.Config{Kafka: f.kafka.config(brokers), Layout: f.layout.layout(), DataDir: storeDir,
		Limits: codecs.Limits{MaxPayload: f.maxPayload}, ChunkSize: f.chunk, ChunkBytes: f.chunkBytes, ChunkBudget: f.budget, Resolution: f.resolution, ClockMaxAhead: f.maxAhead,
		SyncStore: f.syncStore, StoreCacheBytes: f.storeCache, StoreMemTableBytes: f.memTable, Registerer: reg, Logger: log}
	now, err := testClock(log)
	if err != nil {
		return err
	}
	cfg.Now = now
	sys, err := instance.New(ctx, cfg)
	if err != nil {
		return err
	}
	targets := lagTargets(cfg.Layout)
	for _, g := range f.executors {
		targets = append(targets, lag.Target{Group: g, Topic: string(cfg.Layout.Dispatch())})
	}
	reg.MustRegister(&lag.Collector{Admin: kadm.NewClient(sys.Client()), Policy: lag.Earliest, Targets: targets})
	jobs, err := views.NewJobs(cfg.Kafka, cfg.Layout, filepath.Join(storeDir, "view"), log.With("component", "view"))
	if err != nil {
		return err
	}
	ready := func() error { return errors.Join(sys.Ready(), jobs.Ready()) }
	tokens, err := f.auth.tokens()
	if err != nil {
		return err
	}
	srv := &views.Server{Names: cfg.Layout.Names, Limits: cfg.Limits, Producer: sys.Client(), Ready: ready,
		Gatherer: reg, Token: f.apiToken, Tokens: tokens, Jobs: jobs, AllowedOrigins: f.auth.origins}
	ln, err := net.Listen("tcp", f.httpAddr)
	if err != nil {
		return fmt.Errorf("http: %w", err)
	}
	srv.AllowedHosts = f.auth.allowedHosts(ln.Addr().String())
	httpOpts := f.http
	httpOpts.Registerer = reg
	hs := views.NewHTTPServer(srv.Handler(), httpOpts)
	errc := make(chan error, 2)
	go func() { errc <- hs.Serve(ln) }()
	stopProbes, err := f.auth.serveProbes(srv, f.http, log)
	if err != nil {
		_ = hs.Close()
		return err
	}
	defer stopProbes()
	log.Info("chronos is running", "brokers", strings.Join(brokers, ","), "kafka_tls", cfg.Kafka.TLS.Enabled,
		"kafka_sasl", cfg.Kafka.SASL.Mechanism, "http", "http://"+ln.Addr().String(),
		"partitions", cfg.Layout.Partitions, "data_dir", storeDir)
	stopPprof, err := servePprof(f.pprofAddr, log)
	if err != nil {
		return err
	}
	defer stopPprof()
	viewDone := make(chan error, 1)
	go func() { viewDone <- jobs.Run(ctx) }()
	runErr := sys.Run(ctx)
	if err := <-viewDone; err != nil && ctx.Err() == nil {
		log.Error("job view stopped", "err", err)
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(shutdown)
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return runErr
}

// servePprof serves Go's runtime profiles on addr until stop is called
// (empty addr: nothing).
func servePprof(addr string, log *slog.Logger) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("pprof: %w", err)
	}
	ps := &http.Server{Handler: pprofHandler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = ps.Serve(ln) }()
	log.Info("serving profiles", "pprof", "http://"+ln.Addr().String()+"/debug/pprof/")
	return func() { _ = ps.Close() }, nil
}

// pprofHandler serves Go's runtime profiles under /debug/pprof/.
func pprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	// No /debug/pprof/cmdline: it would show the command line, secrets
	// given as flags included, to anyone who reaches the port.
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
