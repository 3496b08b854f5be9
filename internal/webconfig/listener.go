package webconfig

import (
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"time"

	"github.com/alecthomas/kingpin/v2"
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

// LimitConnections returns l accepting at most max connections open at once, or l itself when
// max is 0. One more is left in the kernel's accept queue, unanswered, until one closes: idle
// or slow clients cannot take every file descriptor the process has, whose store and BMC
// sessions need them too. It counts bare connections, so with TLS served over it a connection
// counts from before its handshake.
func LimitConnections(l net.Listener, max int) net.Listener {
	if max == 0 {
		return l
	}
	return netutil.LimitListener(l, max)
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
