package instance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/console"
	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/store"
	"github.com/chronos-scheduler/chronos/views"
)

// httpParts are the job view, the API server and its listeners of an
// instance with an HTTP address. Run owns them.
type httpParts struct {
	cfg  HTTP
	jobs *views.Jobs
	hist *views.History // nil with History.Off
	// jobsStart is closed when the job view may start
	// (Instance.recovered), historyStart when the history view may
	// (Instance.scheduling).
	jobsStart, historyStart <-chan struct{}
	srv                     *api.Server
	ln                      net.Listener // set by listen
	reg                     prometheus.Registerer
}

// newHTTP builds the job view (under DataDir/view), the API and the lag
// collector of /metrics.
func newHTTP(s *Instance) (*httpParts, error) {
	cfg := s.cfg
	tokens, err := cfg.HTTP.tokens()
	if err != nil {
		return nil, err
	}
	jobs, err := views.NewJobs(cfg.Kafka, cfg.Layout, filepath.Join(cfg.DataDir, "view"), s.log.With("component", "view"))
	if err != nil {
		return nil, err
	}
	jobs.Calendars = s.cals
	jobs.RecoveryL0CompactionThreshold = cfg.Store.RecoveryL0CompactionThreshold
	var hist *views.History
	if !cfg.History.Off {
		if hist, err = views.NewHistory(cfg.Kafka, cfg.Layout, filepath.Join(cfg.DataDir, "history-view"),
			store.Options{CacheSize: HistoryStoreCacheBytes, MemTableSize: cfg.historyMemTableBytes(HistoryViewStoreMemTableBytes), OffsetEvery: HistoryStoreOffsetEvery}, s.log.With("component", "history-view")); err != nil {
			return nil, err
		}
	}
	gatherer, _ := cfg.Registerer.(prometheus.Gatherer) // Validate checked it
	targets := append(lag.Targets(cfg.Layout), lag.ExecutorTargets(cfg.Layout, cfg.LagExecutorGroups)...)
	if !cfg.History.Off {
		targets = append(targets, lag.HistoryTargets(cfg.Layout)...)
	}
	cfg.Registerer.MustRegister(&lag.Collector{Admin: kadm.NewClient(s.kgo), Policy: lag.Earliest, Targets: targets})
	srv := &api.Server{Names: cfg.Layout.Names, Limits: cfg.Limits, Producer: s.kgo, Ready: s.Ready,
		Gatherer: gatherer, Token: cfg.HTTP.Token, Tokens: tokens, Jobs: jobs, AllowedOrigins: cfg.HTTP.AllowedOrigins,
		Console: console.Handler(), Calendars: s.cals}
	if hist != nil {
		srv.History = hist
	}
	return &httpParts{cfg: cfg.HTTP, jobs: jobs, hist: hist, jobsStart: s.recovered, historyStart: s.scheduling, srv: srv, reg: cfg.Registerer}, nil
}

// listen opens the API's listener and sets the Host values it answers.
func (h *httpParts) listen(s *Instance) error {
	ln, err := net.Listen("tcp", h.cfg.Addr)
	if err != nil {
		return fmt.Errorf("http: %w", err)
	}
	h.ln = ln
	h.srv.AllowedHosts = h.cfg.allowedHosts(ln.Addr().String())
	c := s.cfg
	s.log.Info("chronos is running", "brokers", strings.Join(c.Kafka.Brokers, ","), "kafka_tls", c.Kafka.TLS.Enabled,
		"kafka_sasl", c.Kafka.SASL.Mechanism, "http", "http://"+ln.Addr().String(),
		"partitions", c.Layout.Partitions, "data_dir", c.DataDir)
	return nil
}

// run serves the API, the probes and the views until ctx is done, then
// shuts the server down (5 s for answers in flight) and then stops the
// views, which the answers in flight read. It returns the first error
// that stopped one of them early.
func (h *httpParts) run(outer context.Context, log *slog.Logger) error {
	// The views run on a context of their own, stopped after the server
	// (adversary round 57: stopped first, reads in flight at a graceful
	// stop answered 503), and also when the server fails (adversary round
	// 56: run waited for views only its caller's cancel would stop, and
	// its caller cancelled only once run returned).
	ctx, stopViews := context.WithCancel(context.WithoutCancel(outer))
	defer stopViews()
	opts := h.cfg.Server
	opts.Registerer = h.reg
	hs := api.NewHTTPServer(h.srv.Handler(), opts)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(h.ln) }()
	stopProbes, err := h.cfg.serveProbes(h.srv, h.cfg.Server, log)
	if err != nil {
		_ = hs.Close()
		<-served
		return err
	}
	defer stopProbes()
	// A view that stops on its own (its storage cannot be opened) says so
	// at once; its Ready then names the error (adversary round 57: a
	// history view that could not open its stores was silent).
	viewDone := make(chan error, 1)
	go func() {
		// After the scheduling groups (Instance.runGroups): reads of jobs
		// answer 503 until it has recovered.
		select {
		case <-h.jobsStart:
		case <-ctx.Done():
			viewDone <- nil
			return
		}
		err := h.jobs.Run(ctx)
		if err != nil && outer.Err() == nil {
			log.Error("job view stopped; /readyz answers 503 until the process is restarted", "err", err)
		}
		viewDone <- err
	}()
	histDone := make(chan error, 1)
	go func() {
		if h.hist == nil {
			histDone <- nil
			return
		}
		// After the scheduling parts, as the history group
		// (Instance.runGroups): reads of runs answer 503 until then.
		select {
		case <-h.historyStart:
		case <-ctx.Done():
			histDone <- nil
			return
		}
		err := h.hist.Run(ctx)
		if err != nil && outer.Err() == nil {
			log.Error("history view stopped; reads of runs answer 503 until the process is restarted", "err", err)
		}
		histDone <- err
	}()
	var runErr error
	select {
	case <-outer.Done():
	case err := <-served:
		runErr = fmt.Errorf("http: %w", err)
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(shutdown)
	stopViews()
	<-viewDone
	<-histDone
	if runErr != nil {
		return runErr
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http: %w", err)
	}
	return nil
}

// allowedHosts returns the Host values an API listening on addr answers
// (nil: any).
func (h HTTP) allowedHosts(addr string) []string {
	if len(h.AllowedHosts) == 0 {
		return api.LoopbackHosts(addr)
	}
	hosts := make([]string, len(h.AllowedHosts))
	for i, host := range h.AllowedHosts {
		hosts[i] = strings.ToLower(host)
	}
	return hosts
}

// serveProbes serves the probes on ProbeAddr until stop is called.
func (h HTTP) serveProbes(srv *api.Server, opts api.HTTPOptions, log *slog.Logger) (stop func(), err error) {
	if h.ProbeAddr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", h.ProbeAddr)
	if err != nil {
		return nil, fmt.Errorf("probes: %w", err)
	}
	hs := api.NewHTTPServer(srv.ProbeHandler(api.LoopbackHosts(ln.Addr().String())), opts)
	go func() { _ = hs.Serve(ln) }()
	log.Info("serving probes", "probes", "http://"+ln.Addr().String())
	return func() { _ = hs.Close() }, nil
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
