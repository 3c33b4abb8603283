package api

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// HTTPOptions are the limits of an HTTP server (NewHTTPServer). Zero fields
// take their defaults.
type HTTPOptions struct {
	// ReadHeaderTimeout bounds reading a request's headers (default 5s): a
	// client that trickles them (slowloris) is cut off.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included (default
	// 30s): a client that trickles its body is cut off.
	ReadTimeout time.Duration
	// WriteTimeout bounds a request from the end of its headers to the end
	// of its answer (default 30s; keep it above the produce timeout plus the
	// read-your-writes wait, 13s).
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long (default 60s).
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers (default 16 KiB); larger
	// ones are answered 431.
	MaxHeaderBytes int
	// MaxConns bounds the open connections (default 1024). At the limit a
	// new connection closes the connection that has waited longest without
	// a request in a handler (idle, or still sending its headers); only when
	// every connection has a request in a handler is the new one closed.
	MaxConns int
	// Registerer, when set, gets chronos_http_connections_open and
	// chronos_http_connections_shed_total{reason="evicted"|"refused"}.
	Registerer prometheus.Registerer
}

// Defaults of HTTPOptions.
const (
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	DefaultMaxHeaderBytes    = 16 << 10
	DefaultMaxConns          = 1024
)

func (o HTTPOptions) withDefaults() HTTPOptions {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&o.ReadTimeout, DefaultReadTimeout)
	def(&o.WriteTimeout, DefaultWriteTimeout)
	def(&o.IdleTimeout, DefaultIdleTimeout)
	if o.ReadHeaderTimeout > o.ReadTimeout {
		o.ReadHeaderTimeout = o.ReadTimeout
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	return o
}

// HTTPServer is an http.Server whose listener holds at most MaxConns
// connections. Safe for concurrent use.
type HTTPServer struct {
	*http.Server
	limit *connLimiter
}

// NewHTTPServer returns a server of h with the limits of o.
func NewHTTPServer(h http.Handler, o HTTPOptions) *HTTPServer {
	o = o.withDefaults()
	l := &connLimiter{max: o.MaxConns}
	l.mu.conns = map[net.Conn]*connInfo{}
	if o.Registerer != nil {
		o.Registerer.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "chronos_http_connections_open",
				Help: "Open connections of the HTTP API."}, func() float64 { return float64(l.Open()) }),
			shedCounter("evicted", &l.evicted), shedCounter("refused", &l.refused))
	}
	hs := &http.Server{
		Handler:           l.handler(h),
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		ReadTimeout:       o.ReadTimeout,
		WriteTimeout:      o.WriteTimeout,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    o.MaxHeaderBytes,
		ConnState:         l.track,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
	}
	return &HTTPServer{Server: hs, limit: l}
}

func shedCounter(reason string, n *atomic.Uint64) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "chronos_http_connections_shed_total",
		Help:        "Connections of the HTTP API closed at the connection limit: evicted (idle or sending headers) or refused (every slot busy).",
		ConstLabels: prometheus.Labels{"reason": reason}}, func() float64 { return float64(n.Load()) })
}

// Serve accepts connections on ln, at most MaxConns at a time, until
// Shutdown or Close.
func (s *HTTPServer) Serve(ln net.Listener) error {
	return s.Server.Serve(&limitListener{Listener: ln, l: s.limit})
}

// Open returns the number of open connections.
func (s *HTTPServer) Open() int { return s.limit.Open() }

// Shed returns how many connections were evicted and refused at the limit.
func (s *HTTPServer) Shed() (evicted, refused uint64) {
	return s.limit.evicted.Load(), s.limit.refused.Load()
}

type connKey struct{}

// connInfo is what the limiter knows of one connection.
type connInfo struct {
	since     time.Time // of the last state change: the oldest is evicted first
	inHandler bool      // a request is in the handler: never evicted
}

// connLimiter tracks the open connections of one server.
type connLimiter struct {
	max              int
	evicted, refused atomic.Uint64
	mu               struct {
		sync.Mutex
		conns map[net.Conn]*connInfo
	}
}

func (l *connLimiter) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.mu.conns)
}

// admit registers c, evicting the longest-waiting connection without a
// request in a handler when at the limit; false: every slot is busy.
func (l *connLimiter) admit(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.mu.conns) >= l.max {
		var victim net.Conn
		var oldest time.Time
		for vc, ci := range l.mu.conns {
			if !ci.inHandler && (victim == nil || ci.since.Before(oldest)) {
				victim, oldest = vc, ci.since
			}
		}
		if victim == nil {
			l.refused.Add(1)
			return false
		}
		delete(l.mu.conns, victim)
		_ = victim.Close()
		l.evicted.Add(1)
	}
	l.mu.conns[c] = &connInfo{since: time.Now()}
	return true
}

// track follows the server's connection states (http.Server.ConnState).
func (l *connLimiter) track(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ci := l.mu.conns[c]
	switch {
	case ci == nil:
	case st == http.StateClosed || st == http.StateHijacked:
		delete(l.mu.conns, c)
	default:
		ci.since = time.Now()
	}
}

// handler marks a connection busy while its request is in h.
func (l *connLimiter) handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(net.Conn)
		l.setBusy(c, true)
		defer l.setBusy(c, false)
		h.ServeHTTP(w, r)
	})
}

func (l *connLimiter) setBusy(c net.Conn, busy bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ci := l.mu.conns[c]; ci != nil {
		ci.inHandler, ci.since = busy, time.Now()
	}
}

// limitListener admits each accepted connection through the limiter.
type limitListener struct {
	net.Listener
	l *connLimiter
}

func (ll *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := ll.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if ll.l.admit(c) {
			return c, nil
		}
		_ = c.Close()
	}
}
