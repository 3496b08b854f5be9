package api

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/internal/errtext"
	"github.com/rotahq/rota/internal/webconfig"
)

// Options configure a Server. Backend, Registry, Clock and Log are required.
type Options struct {
	Backend Backend
	// Registry is served on /metrics and receives the server's own rota_api_* and
	// rota_webhook_* metrics.
	Registry *prometheus.Registry
	// APIToken is the bearer token the operator API requires; zero turns the operator API off
	// (every call answers 403).
	APIToken Token
	// WebhookToken is the bearer token the webhook requires, unless WebhookAuthDisabled.
	WebhookToken        Token
	WebhookAuthDisabled bool
	// WebhookMaxBodyBytes rejects larger webhook bodies with 413; 0 means 1 MiB.
	WebhookMaxBodyBytes int64
	// Ready says whether rota is ready (for /-/ready); nil means ready once serving.
	Ready func() error
	// Clock paces the log of rejected webhook calls (one line a minute at most).
	Clock Clock
	// Web is the listener's web config (--web.config.file): TLS for every endpoint, and the
	// basic-auth users /metrics then requires. Nil: plain HTTP, /metrics open.
	Web *webconfig.File
	// MaxConnections bounds the connections open at once on the listener Serve is given
	// (--web.max-connections); 0 means no limit.
	MaxConnections int
	Log            *logrus.Entry
}

// Server is rota's one HTTP listener: /metrics, /-/healthy, /-/ready, the operator API under
// /api/v1/ and the Alertmanager webhook at POST /api/v1/alerts. It is an http.Handler.
type Server struct {
	opts    Options
	mux     *http.ServeMux
	log     *logrus.Entry
	metrics *metrics
	tokens  atomic.Pointer[tokenPair]
	rejects *rejectLog
	// webhooks holds a slot per webhook request being read (maxWebhooksInFlight).
	webhooks chan struct{}
}

// maxWebhooksInFlight bounds the webhook requests read at once: each may hold up to
// server.webhook_max_body_bytes for as long as its sender takes, and the webhook may take no
// token. Alertmanager sends one request per group at a time and retries a 503.
const maxWebhooksInFlight = 8

// tokenPair is the tokens in force; SetTokens swaps them whole.
type tokenPair struct {
	api, webhook Token
}

// NewServer checks the options, registers the metrics and builds the routes.
func NewServer(o Options) (*Server, error) {
	if o.Backend == nil || o.Registry == nil || o.Clock == nil || o.Log == nil {
		return nil, errors.New("api server: Backend, Registry, Clock and Log are required")
	}
	if o.MaxConnections < 0 {
		return nil, fmt.Errorf("api server: MaxConnections must not be negative, got %d", o.MaxConnections)
	}
	if err := checkTokens(o.APIToken, o.WebhookToken, o.WebhookAuthDisabled); err != nil {
		return nil, err
	}
	if o.WebhookMaxBodyBytes <= 0 {
		o.WebhookMaxBodyBytes = 1 << 20
	}
	m, err := newMetrics(o.Registry)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: o, mux: http.NewServeMux(), log: o.Log, metrics: m, rejects: &rejectLog{clock: o.Clock},
		webhooks: make(chan struct{}, maxWebhooksInFlight)}
	s.tokens.Store(&tokenPair{api: o.APIToken, webhook: o.WebhookToken})
	s.routes()
	return s, nil
}

// SetTokens replaces the API and webhook tokens (rota re-reads its token files on SIGHUP);
// requests already past authentication are not affected. The same rules as in NewServer hold.
func (s *Server) SetTokens(apiToken, webhookToken Token) error {
	if err := checkTokens(apiToken, webhookToken, s.opts.WebhookAuthDisabled); err != nil {
		return err
	}
	s.tokens.Store(&tokenPair{api: apiToken, webhook: webhookToken})
	return nil
}

// checkTokens: a webhook token unless webhook auth is disabled, and never the API's token
// (Alertmanager's config holds the webhook token; the API token powers servers off).
func checkTokens(apiToken, webhookToken Token, webhookAuthDisabled bool) error {
	switch {
	case webhookToken.IsZero() && !webhookAuthDisabled:
		return errors.New("api server: a webhook token is required unless webhook auth is disabled")
	case !apiToken.IsZero() && apiToken.matches(webhookToken.value):
		return errors.New("api server: the operator API token and the webhook token are the same; each needs its own")
	}
	return nil
}

// ServeHTTP implements http.Handler.
//
// Under /api/ a path with an empty, "." or ".." segment is no endpoint (404): ServeMux would
// answer it with a 307 to its clean form, so an empty node name (`/api/v1/nodes//explain`) was
// sent to /api/v1/nodes/explain, and a client that follows redirects would repeat a POST on
// another path.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/api/") && !cleanPath(r.URL.EscapedPath()) {
		writeError(w, http.StatusNotFound, "no such endpoint: "+errtext.Quote(r.URL.Path)+
			" (an empty, \".\" or \"..\" segment: a node name cannot be empty)")
		return
	}
	s.mux.ServeHTTP(w, r)
}

// cleanPath reports whether p is its own clean form, as ServeMux judges it (a trailing slash
// kept): no empty, "." or ".." segment.
func cleanPath(p string) bool {
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c == p
}

// Serve answers on l, at most Options.MaxConnections connections at once, until ctx ends, then
// shuts down, letting requests in flight finish for up to ten seconds.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	errLog := s.log.WriterLevel(logrus.WarnLevel)
	defer errLog.Close()
	hs := webconfig.NewServer(s, stdlog.New(errLog, "", 0))
	tlsConfig, err := s.opts.Web.TLS()
	if err != nil {
		return err
	}
	l = webconfig.LimitConnections(l, s.opts.MaxConnections, s.metrics.connections)
	errc := make(chan error, 1)
	if tlsConfig == nil {
		go func() { errc <- hs.Serve(l) }()
	} else {
		hs.TLSConfig = tlsConfig
		if !s.opts.Web.HTTP2() {
			hs.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
		}
		go func() { errc <- hs.ServeTLS(l, "", "") }()
	}
	select {
	case err := <-errc:
		return fmt.Errorf("serving http: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutting down http: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving http: %w", err)
	}
	return nil
}

// endpoint is one method on one path of the operator API.
type endpoint struct {
	method  string
	handler http.HandlerFunc
}

func (s *Server) routes() {
	s.mux.Handle("GET /metrics", s.requireMetricsUser(promhttp.HandlerFor(s.opts.Registry, promhttp.HandlerOpts{Registry: s.opts.Registry})))
	s.mux.HandleFunc("GET /-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "rota is healthy.")
	})
	s.mux.HandleFunc("GET /-/ready", s.ready)
	for _, path := range []string{"/metrics", "/-/healthy", "/-/ready"} {
		s.notAllowed(path, http.MethodGet+", "+http.MethodHead)
	}

	api := map[string][]endpoint{
		"/api/v1/status":                   {{http.MethodGet, s.status}},
		"/api/v1/nodes/{name}/explain":     {{http.MethodGet, s.explain}},
		"/api/v1/plan":                     {{http.MethodPost, s.plan}},
		"/api/v1/nodes/{name}/pin":         {{http.MethodPost, s.pin(true)}, {http.MethodDelete, s.pin(false)}},
		"/api/v1/nodes/{name}/maintenance": {{http.MethodPost, s.maintenance(true)}, {http.MethodDelete, s.maintenance(false)}},
		"/api/v1/nodes/{name}/forget":      {{http.MethodPost, s.forget}},
		"/api/v1/pause":                    {{http.MethodPost, s.pause(true)}, {http.MethodDelete, s.pause(false)}},
		"/api/v1/store/backup":             {{http.MethodGet, s.backup}},
		"/api/v1/wake":                     {{http.MethodPost, s.wake}},
	}
	for path, eps := range api {
		s.handle(path, eps, s.requireAPIToken)
	}
	s.handle("/api/v1/alerts", []endpoint{{http.MethodPost, s.webhook}}, nil)
	// Every other path, in or outside the API, answers as the API does (ServeMux's own answers
	// are plain text): a client pointed at another version or behind a prefix reads why.
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint: "+errtext.Quote(r.URL.Path))
	})
}

// handle registers each endpoint of path, wrapped in auth (if not nil) and counted, and a
// JSON 405 for every other method.
func (s *Server) handle(path string, eps []endpoint, auth func(http.HandlerFunc) http.HandlerFunc) {
	allow := ""
	for _, ep := range eps {
		pattern := ep.method + " " + path
		h := ep.handler
		if auth != nil {
			h = auth(h)
		}
		s.mux.Handle(pattern, s.metrics.count(pattern, h))
		if allow != "" {
			allow += ", "
		}
		allow += ep.method
		if ep.method == http.MethodGet {
			allow += ", " + http.MethodHead // the mux answers HEAD on a GET route
		}
	}
	s.notAllowed(path, allow)
}

// notAllowed answers every method on path that no pattern takes with a JSON 405 naming allow.
func (s *Server) notAllowed(path, allow string) {
	s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, errtext.Quote(r.Method)+" is not allowed here; allowed: "+allow)
	})
}

func (s *Server) ready(w http.ResponseWriter, _ *http.Request) {
	if s.opts.Ready != nil {
		if err := s.opts.Ready(); err != nil {
			http.Error(w, "rota is not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
	}
	fmt.Fprintln(w, "rota is ready.")
}

// requireMetricsUser answers 401 to a /metrics request without a user and password of the web
// config's basic_auth_users, when it names any.
func (s *Server) requireMetricsUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.opts.Web.Authorized(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="rota metrics"`)
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// requireAPIToken answers 401 without a bearer token and 403 with a wrong one (or when the
// operator API is off).
func (s *Server) requireAPIToken(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		want := s.tokens.Load().api
		if want.IsZero() {
			writeError(w, http.StatusForbidden, "the operator API is off: set server.api_token_file")
			return
		}
		switch err := checkBearer(r.Header.Get("Authorization"), want); {
		case errors.Is(err, errNoCredentials):
			w.Header().Set("WWW-Authenticate", `Bearer realm="rota"`)
			writeError(w, http.StatusUnauthorized, err.Error()+"; rotactl sends one from --rota.token-file (the token of server.api_token_file)")
		case err != nil:
			writeError(w, http.StatusForbidden, err.Error())
		default:
			next(w, r)
		}
	}
}

// metrics are the server's own.
type metrics struct {
	apiRequests     *prometheus.CounterVec
	webhookRequests *prometheus.CounterVec
	connections     *webconfig.Connections // rota_http_connections_open and _max
}

// The results of a webhook request, the values of rota_webhook_requests_total{result}.
const (
	resultAccepted     = "accepted"
	resultUnauthorized = "unauthorized"
	resultForbidden    = "forbidden"
	resultTooLarge     = "too_large"
	resultMalformed    = "malformed"
	resultBusy         = "busy"
)

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		apiRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rota_api_requests_total",
			Help: "Operator API and webhook requests, by route and HTTP status code.",
		}, []string{"route", "code"}),
		webhookRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rota_webhook_requests_total",
			Help: "Alertmanager webhook requests, by result.",
		}, []string{"result"}),
		connections: webconfig.NewConnections("rota"),
	}
	for _, r := range []string{resultAccepted, resultUnauthorized, resultForbidden, resultTooLarge, resultMalformed, resultBusy} {
		m.webhookRequests.WithLabelValues(r)
	}
	for _, c := range []prometheus.Collector{m.apiRequests, m.webhookRequests, m.connections} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering api metrics: %w", err)
		}
	}
	return m, nil
}

// count counts the answers of h by route (a registered pattern: bounded) and status code.
func (m *metrics) count(route string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		h(rec, r)
		m.apiRequests.WithLabelValues(route, strconv.Itoa(rec.code)).Inc()
	})
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}
