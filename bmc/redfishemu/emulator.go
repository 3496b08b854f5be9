package redfishemu

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/internal/webconfig"
)

// Emulator runs the configured servers, one TLS listener each, and the control endpoint.
type Emulator struct {
	cfg     Config
	log     *logrus.Entry
	servers map[string]*Server
	hooks   *hookRunner
	certPEM []byte
	https   []*http.Server
	control *http.Server
	ctlAddr string
	errLog  *io.PipeWriter
	wg      sync.WaitGroup

	mu              sync.Mutex
	answering, peak int // Redfish requests being answered now, across the servers, and the most at once
}

// Start listens on every server's address and the control address, and serves until Close.
// Each listener has rota's own timeouts and header bound (webconfig.NewServer), so a lab
// reachable from other hosts holds no connection for ever.
func Start(cfg Config, clock Clock, log *logrus.Entry) (*Emulator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	res, err := loadResources()
	if err != nil {
		return nil, err
	}
	cert, certPEM, err := selfSigned(clock.Now(), cfg.Hosts)
	if err != nil {
		return nil, err
	}
	e := &Emulator{cfg: cfg, log: log, servers: map[string]*Server{}, hooks: newHookRunner(log), certPEM: certPEM}
	// net/http's own complaints (TLS handshakes a client broke off) go to the debug log.
	e.errLog = log.WriterLevel(logrus.DebugLevel)
	errLog := stdlog.New(e.errLog, "", 0)
	tlsCfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	for _, sc := range cfg.Servers {
		s, err := newServer(sc, clock, log, res, e.hooks)
		if err != nil {
			e.Close()
			return nil, fmt.Errorf("server %s: %w", sc.Name, err)
		}
		l, err := net.Listen("tcp", sc.Listen)
		if err != nil {
			e.Close()
			return nil, fmt.Errorf("server %s: %w", sc.Name, err)
		}
		s.addr = l.Addr().String()
		e.servers[sc.Name] = s
		hs := webconfig.NewServer(e.counted(s), errLog)
		e.https = append(e.https, hs)
		e.serve(func() error { return hs.Serve(tls.NewListener(l, tlsCfg)) })
	}
	if cfg.ControlListen != "" {
		l, err := net.Listen("tcp", cfg.ControlListen)
		if err != nil {
			e.Close()
			return nil, fmt.Errorf("control endpoint: %w", err)
		}
		e.ctlAddr = l.Addr().String()
		e.control = webconfig.NewServer(e.controlHandler(), errLog)
		e.serve(func() error { return e.control.Serve(l) })
	}
	log.WithField("servers", len(e.servers)).Info("redfish emulator started")
	return e, nil
}

func (e *Emulator) serve(f func() error) {
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		if err := f(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.log.WithError(err).Error("listener stopped")
		}
	}()
}

// Close stops every listener and waits for running hooks.
func (e *Emulator) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, hs := range e.https {
		_ = hs.Shutdown(ctx)
	}
	if e.control != nil {
		_ = e.control.Shutdown(ctx)
	}
	e.wg.Wait()
	for _, s := range e.servers {
		s.mu.Lock()
		s.cancelLocked()
		s.mu.Unlock()
	}
	e.hooks.wait()
	_ = e.errLog.Close()
}

// counted answers with h, counting the request among those being answered (PeakRequests).
func (e *Emulator) counted(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.answering++
		e.peak = max(e.peak, e.answering)
		e.mu.Unlock()
		defer func() { e.mu.Lock(); e.answering--; e.mu.Unlock() }()
		h.ServeHTTP(w, r)
	})
}

// PeakRequests is the most Redfish requests the servers were answering at once, all servers
// together, since Start: a test reads it to prove a client's cap on the requests it has out.
func (e *Emulator) PeakRequests() int { e.mu.Lock(); defer e.mu.Unlock(); return e.peak }

// CertPEM is the generated certificate, which is also the CA clients verify it with.
func (e *Emulator) CertPEM() []byte { return e.certPEM }

// Server returns the named server, or nil.
func (e *Emulator) Server(name string) *Server { return e.servers[name] }

// ControlAddr is the control endpoint's host:port ("" when none is configured).
func (e *Emulator) ControlAddr() string { return e.ctlAddr }

// ServerStatus is what the control endpoint says about one server.
type ServerStatus struct {
	Name  string `json:"name"`
	Addr  string `json:"addr"`
	Power string `json:"power"`
	// OtherPower is the power of each of the other systems, by Id.
	OtherPower map[string]string `json:"other_power,omitempty"`
	Faults     Faults            `json:"faults"`
	Stats      Stats             `json:"stats"`
}

func (s *Server) status() ServerStatus {
	st := ServerStatus{Name: s.cfg.Name, Addr: s.Addr(), Power: s.Power(), Faults: s.Faults(), Stats: s.Stats()}
	if len(s.others) > 0 {
		st.OtherPower = map[string]string{}
		for _, o := range s.others {
			st.OtherPower[o.id] = s.OtherPower(o.id)
		}
	}
	return st
}

// controlHandler serves:
//
//	GET /-/ready                   200 when serving
//	GET /servers                   every server's status
//	GET /servers/{name}            one server's status
//	PUT /servers/{name}/faults     replace the faults (JSON Faults)
//	PUT /servers/{name}/power      force the power state ({"power":"On"|"Off"})
func (e *Emulator) controlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /-/ready", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET /servers", func(w http.ResponseWriter, _ *http.Request) {
		names := make([]string, 0, len(e.servers))
		for n := range e.servers {
			names = append(names, n)
		}
		sort.Strings(names)
		out := make([]ServerStatus, 0, len(names))
		for _, n := range names {
			out = append(out, e.servers[n].status())
		}
		writeJSON(w, http.StatusOK, out, "")
	})
	mux.HandleFunc("GET /servers/{name}", e.withServer(func(w http.ResponseWriter, _ []byte, s *Server) {
		writeJSON(w, http.StatusOK, s.status(), "")
	}))
	mux.HandleFunc("PUT /servers/{name}/faults", e.withServer(func(w http.ResponseWriter, body []byte, s *Server) {
		f, err := ParseFaults(body)
		if err == nil {
			err = s.SetFaults(f)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, http.StatusOK, s.status(), "")
	}))
	mux.HandleFunc("PUT /servers/{name}/power", e.withServer(func(w http.ResponseWriter, body []byte, s *Server) {
		var p struct{ Power string }
		err := json.Unmarshal(body, &p)
		if err == nil {
			err = s.SetPower(p.Power)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, http.StatusOK, s.status(), "")
	}))
	return mux
}

func (e *Emulator) withServer(f func(http.ResponseWriter, []byte, *Server)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s := e.servers[r.PathValue("name")]
		if s == nil {
			http.Error(w, "no such server", http.StatusNotFound)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f(w, body, s)
	}
}
