package webconfig

import (
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/netutil"
)

// MaxHeaderBytes bounds a request's headers on rota's and rota-exporter's listeners: a bearer
// token or basic auth takes a few hundred bytes, and net/http's default (1 MB) is memory any
// client can make each connection hold before auth is checked.
const MaxHeaderBytes = 64 << 10

// DefaultMaxConnections is --web.max-connections' default, as Prometheus's: far more than the
// scrapers, Alertmanagers and rotactl calls a listener serves, far fewer than the file
// descriptors the process has (systemd's soft limit is 1024, and Go raises it to the hard one).
const DefaultMaxConnections = 512

// AddMaxConnectionsFlag registers --web.max-connections on app, into max; a negative value is
// refused when the command line is parsed, naming the flag.
func AddMaxConnectionsFlag(app *kingpin.Application, max *int) {
	app.Flag("web.max-connections", "Maximum number of connections open at once on the listener (on each, with several); one more waits unanswered until one closes. 0 means no limit.").
		Default(fmt.Sprint(DefaultMaxConnections)).
		Action(func(*kingpin.ParseContext) error {
			if *max < 0 {
				return fmt.Errorf("--web.max-connections must not be negative (0 means no limit), got %d", *max)
			}
			return nil
		}).IntVar(max)
}

// Connections is the gauges of the listeners LimitConnections limits, by listener (its
// address): <namespace>_http_connections_open, the connections open now, and
// <namespace>_http_connections_max, the bound (0: none). Open at the bound for long, further
// connections are waiting unanswered. Register it on the registry served.
type Connections struct {
	open, max *prometheus.GaugeVec
}

// NewConnections returns the gauges, named under namespace (rota, rota_exporter).
func NewConnections(namespace string) *Connections {
	return &Connections{
		open: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "http_connections_open",
			Help: "Connections open on the listener; at http_connections_max, one more waits unanswered.",
		}, []string{"listener"}),
		max: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "http_connections_max",
			Help: "Connections the listener keeps open at once (--web.max-connections; 0: no limit).",
		}, []string{"listener"}),
	}
}

// Describe implements prometheus.Collector.
func (c *Connections) Describe(ch chan<- *prometheus.Desc) {
	c.open.Describe(ch)
	c.max.Describe(ch)
}

// Collect implements prometheus.Collector.
func (c *Connections) Collect(ch chan<- prometheus.Metric) {
	c.open.Collect(ch)
	c.max.Collect(ch)
}

// LimitConnections returns l accepting at most max connections open at once (0: no limit),
// counted in c under l's address. One more is left in the kernel's accept queue, unanswered,
// until one closes: idle or slow clients cannot take every file descriptor the process has,
// whose store and BMC sessions need them too. It counts bare connections, so with TLS served
// over it a connection counts from before its handshake.
func LimitConnections(l net.Listener, max int, c *Connections) net.Listener {
	name := l.Addr().String()
	c.max.WithLabelValues(name).Set(float64(max))
	open := c.open.WithLabelValues(name)
	if max > 0 {
		l = netutil.LimitListener(l, max)
	}
	return &countedListener{Listener: l, open: open}
}

// countedListener counts in open the connections it accepted that are not closed yet.
type countedListener struct {
	net.Listener
	open prometheus.Gauge
}

func (l *countedListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.open.Inc()
	return &countedConn{Conn: conn, open: l.open}, nil
}

// countedConn takes itself off open at its first Close.
type countedConn struct {
	net.Conn
	open prometheus.Gauge
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(c.open.Dec)
	return c.Conn.Close()
}

// NewServer returns an http.Server for handler with the bounds rota's listeners share: 10
// seconds to send the headers, a minute for the whole request, 2 minutes to take the answer (a
// dry-run plan observes the whole fleet), 2 minutes idle between requests, and headers up to
// MaxHeaderBytes. A connection that outstays them is closed, not held for ever. errLog takes
// net/http's own complaints; nil leaves them on stderr.
func NewServer(handler http.Handler, errLog *stdlog.Logger) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          errLog,
	}
}
