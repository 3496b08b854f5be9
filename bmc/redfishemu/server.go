package redfishemu

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	mrand "math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// Redfish PowerState values.
const (
	powerOn          = "On"
	powerOff         = "Off"
	powerPoweringOn  = "PoweringOn"
	powerPoweringOff = "PoweringOff"
)

// Stats counts what one emulated BMC saw; tests read them to prove what a client sent.
type Stats struct {
	Requests int `json:"requests"`
	// Resets lists every ResetType posted and accepted, in order (dropped ones included).
	Resets []string `json:"resets"`
	// OtherResets lists every Reset posted to one of the other systems, as "id:ResetType".
	OtherResets []string `json:"other_resets"`
	// DroppedPowerOns counts power-ons accepted and ignored (fault drop_power_on).
	DroppedPowerOns int `json:"dropped_power_ons"`
	Logins          int `json:"logins"`
	FailedAuth      int `json:"failed_auth"`
	Injected5xx     int `json:"injected_5xx"`
	Conflicts       int `json:"conflicts"`
	PreconditionErr int `json:"precondition_failed"`
	Sessions        int `json:"open_sessions"`
}

// Server is one emulated BMC.
type Server struct {
	cfg    ServerConfig
	clock  Clock
	log    *logrus.Entry
	res    resources
	hooks  *hookRunner
	others []*otherSystem
	resets map[string]bool // the ResetTypes its system offers

	mu         sync.Mutex
	power      string
	target     string
	stopTimer  func() bool
	generation int
	faults     Faults
	rng        *mrand.Rand
	sessions   map[string]string // token -> session id
	nextID     int
	stats      Stats
	addr       string
}

func newServer(cfg ServerConfig, clock Clock, log *logrus.Entry, res resources, hooks *hookRunner) (*Server, error) {
	p, err := initialPower(cfg.Power)
	if err != nil {
		return nil, err
	}
	others, err := newOtherSystems(cfg.OtherSystems)
	if err != nil {
		return nil, err
	}
	resets := mockupResets
	if len(cfg.ResetTypes) > 0 {
		resets = map[string]bool{}
		for _, rt := range cfg.ResetTypes {
			resets[rt] = true
		}
	}
	return &Server{
		cfg: cfg, clock: clock, log: log.WithField("server", cfg.Name), res: res, hooks: hooks, others: others, resets: resets,
		power: p, faults: cfg.Faults, sessions: map[string]string{},
		rng: mrand.New(mrand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
	}, nil
}

// Name is the server's name from the config.
func (s *Server) Name() string { return s.cfg.Name }

// Addr is the host:port the server listens on.
func (s *Server) Addr() string { s.mu.Lock(); defer s.mu.Unlock(); return s.addr }

// Power returns the current Redfish PowerState.
func (s *Server) Power() string { s.mu.Lock(); defer s.mu.Unlock(); return s.power }

// Stats returns a copy of the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Resets = append([]string(nil), s.stats.Resets...)
	st.OtherResets = append([]string(nil), s.stats.OtherResets...)
	st.Sessions = len(s.sessions)
	return st
}

// Faults returns the faults in force.
func (s *Server) Faults() Faults { s.mu.Lock(); defer s.mu.Unlock(); return s.faults }

// SetFaults replaces the faults. Clearing stuck_transition finishes a stuck transition after
// the transition delay.
func (s *Server) SetFaults(f Faults) error {
	if err := f.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	wasStuck := s.faults.StuckTransition
	s.faults = f
	if wasStuck && !f.StuckTransition && s.target != "" && s.stopTimer == nil {
		s.scheduleLocked()
	}
	s.log.WithField("faults", fmt.Sprintf("%+v", f)).Info("faults changed")
	return nil
}

// SetPower forces the power state (On or Off) at once, as if someone pressed the button; the
// hook runs.
func (s *Server) SetPower(p string) error {
	v, err := initialPower(p)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.cancelLocked()
	s.target = v
	s.completeLocked()
	s.mu.Unlock()
	return nil
}

// EndSessions ends every open session at once, as a BMC does whose sessions time out or whose
// web server restarts: their tokens are answered 401 from then on.
func (s *Server) EndSessions() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.sessions)
}

func (s *Server) cancelLocked() {
	if s.stopTimer != nil {
		s.stopTimer()
		s.stopTimer = nil
	}
}

// beginLocked starts a transition to target (On or Off).
func (s *Server) beginLocked(target string) {
	s.cancelLocked()
	s.target = target
	s.power = powerPoweringOn
	if target == powerOff {
		s.power = powerPoweringOff
	}
	s.generation++
	if s.faults.StuckTransition {
		return
	}
	if s.cfg.TransitionDelay == 0 {
		s.completeLocked()
		return
	}
	s.scheduleLocked()
}

func (s *Server) scheduleLocked() {
	gen := s.generation
	s.stopTimer = s.clock.AfterFunc(time.Duration(s.cfg.TransitionDelay), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.generation == gen && !s.faults.StuckTransition {
			s.stopTimer = nil
			s.completeLocked()
		}
	})
}

func (s *Server) completeLocked() {
	changed := s.power != s.target
	s.power, s.target = s.target, ""
	s.generation++
	s.log.WithField("power", s.power).Info("power transition done")
	if changed {
		s.hooks.run(s.cfg.Name, s.cfg.Hook, s.power)
	}
}

func (s *Server) etagLocked() string { return fmt.Sprintf(`"%d"`, s.generation) }

// ServeHTTP answers Redfish requests.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.stats.Requests++
	f := s.faults
	inject := f.ErrorRate > 0 && s.rng.Float64() < f.ErrorRate
	if inject {
		s.stats.Injected5xx++
	}
	s.mu.Unlock()
	if f.Latency > 0 {
		if err := s.clock.Sleep(r.Context(), time.Duration(f.Latency)); err != nil {
			return
		}
	}
	if inject {
		writeError(w, http.StatusServiceUnavailable, "Base.1.0.ServiceTemporarilyUnavailable", "injected fault: service temporarily unavailable")
		return
	}
	uri := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case uri == "/redfish" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"v1": "/redfish/v1/"}, "")
		return
	case uri == "/redfish/v1" && r.Method == http.MethodGet:
		s.serveRoot(w)
		return
	case uri == sessionsURI && r.Method == http.MethodPost && s.cfg.NoSessions:
		writeError(w, http.StatusMethodNotAllowed, "Base.1.0.OperationNotAllowed", "this service offers no sessions: use basic auth")
		return
	case uri == sessionsURI && r.Method == http.MethodPost:
		s.login(w, r)
		return
	}
	if !s.authenticate(r) {
		w.Header().Set("WWW-Authenticate", `Basic realm="redfish"`)
		writeError(w, http.StatusUnauthorized, "Base.1.0.NoValidSession", "authentication required")
		return
	}
	other, sub := s.otherOf(uri)
	switch {
	case uri == resetPath && r.Method == http.MethodPost:
		s.reset(w, r)
	case other != nil && sub == "Actions/ComputerSystem.Reset" && r.Method == http.MethodPost:
		s.resetOther(w, r, other)
	case other != nil && sub == "" && r.Method == http.MethodGet:
		s.serveOther(w, other)
	case uri == systemsPath && r.Method == http.MethodGet:
		s.serveSystems(w)
	case uri == sessionsURI && r.Method == http.MethodGet:
		s.serveSessions(w)
	case strings.HasPrefix(uri, sessionsURI+"/") && r.Method == http.MethodGet:
		s.serveSession(w, strings.TrimPrefix(uri, sessionsURI+"/"))
	case strings.HasPrefix(uri, sessionsURI+"/") && r.Method == http.MethodDelete:
		s.logout(w, strings.TrimPrefix(uri, sessionsURI+"/"))
	case (uri == chassisPowerPath || uri == environmentPath) && r.Method == http.MethodGet:
		s.servePower(w, uri)
	case r.Method == http.MethodGet:
		s.serveResource(w, uri)
	default:
		writeError(w, http.StatusMethodNotAllowed, "Base.1.0.OperationNotAllowed", "method not allowed")
	}
}

// authenticate accepts a live X-Auth-Token or basic auth.
func (s *Server) authenticate(r *http.Request) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.faults.RejectCredentials {
		if tok := r.Header.Get("X-Auth-Token"); tok != "" {
			if _, ok := s.sessions[tok]; ok {
				return true
			}
		} else if u, p, ok := r.BasicAuth(); ok && s.credentialsOK(u, p) {
			return true
		}
	}
	s.stats.FailedAuth++
	return false
}

func (s *Server) credentialsOK(user, pass string) bool {
	return subtle.ConstantTimeCompare([]byte(user), []byte(s.cfg.Username)) == 1 &&
		subtle.ConstantTimeCompare([]byte(pass), []byte(s.cfg.Password)) == 1
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	var body struct{ UserName, Password string }
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "Base.1.0.MalformedJSON", "malformed JSON")
		return
	}
	s.mu.Lock()
	s.stats.Logins++
	if code := s.faults.LoginStatus; code != 0 {
		s.mu.Unlock()
		writeError(w, code, "Base.1.0.OperationNotAllowed", "injected fault: login answered "+http.StatusText(code))
		return
	}
	if s.faults.RejectCredentials || !s.credentialsOK(body.UserName, body.Password) {
		s.stats.FailedAuth++
		s.mu.Unlock()
		writeError(w, http.StatusUnauthorized, "Base.1.0.InsufficientPrivilege", "invalid credentials")
		return
	}
	s.nextID++
	id := fmt.Sprintf("%d", s.nextID)
	tok := newToken()
	s.sessions[tok] = id
	s.mu.Unlock()
	loc := sessionsURI + "/" + id
	w.Header().Set("X-Auth-Token", tok)
	w.Header().Set("Location", loc)
	writeJSON(w, http.StatusCreated, sessionDoc(id, body.UserName), "")
}

func (s *Server) logout(w http.ResponseWriter, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tok, sid := range s.sessions {
		if sid == id {
			delete(s.sessions, tok)
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	writeError(w, http.StatusNotFound, "Base.1.0.ResourceMissingAtURI", "no such session")
}

func sessionDoc(id, user string) map[string]any {
	return map[string]any{
		"@odata.type": "#Session.v1_6_0.Session", "@odata.id": sessionsURI + "/" + id,
		"Id": id, "Name": "User Session", "UserName": user,
	}
}

func (s *Server) serveSessions(w http.ResponseWriter) {
	doc, _ := s.res.clone(sessionsURI)
	s.mu.Lock()
	members := []any{}
	for _, id := range s.sessions {
		members = append(members, map[string]any{"@odata.id": sessionsURI + "/" + id})
	}
	s.mu.Unlock()
	doc["Members"] = members
	doc["Members@odata.count"] = len(members)
	writeJSON(w, http.StatusOK, doc, "")
}

func (s *Server) serveSession(w http.ResponseWriter, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sid := range s.sessions {
		if sid == id {
			writeJSON(w, http.StatusOK, sessionDoc(id, s.cfg.Username), "")
			return
		}
	}
	writeError(w, http.StatusNotFound, "Base.1.0.ResourceMissingAtURI", "no such session")
}

func (s *Server) serveResource(w http.ResponseWriter, uri string) {
	doc, ok := s.res.clone(uri)
	if !ok {
		writeError(w, http.StatusNotFound, "Base.1.0.ResourceMissingAtURI", "resource not found: "+uri)
		return
	}
	etag := ""
	if uri == systemPath {
		s.mu.Lock()
		doc["PowerState"] = s.visiblePowerLocked()
		etag = s.etagLocked()
		s.mu.Unlock()
		doc["@odata.etag"] = etag
		if len(s.cfg.ResetTypes) > 0 {
			doc["Actions"] = withResetTypes(doc["Actions"].(map[string]any), s.cfg.ResetTypes)
		}
	}
	writeJSON(w, http.StatusOK, doc, etag)
}

// serveRoot answers the service root; without sessions (no_sessions) it links none.
func (s *Server) serveRoot(w http.ResponseWriter) {
	doc, _ := s.res.clone("/redfish/v1")
	if s.cfg.NoSessions {
		delete(doc, "SessionService")
		links := maps.Clone(doc["Links"].(map[string]any))
		delete(links, "Sessions")
		doc["Links"] = links
	}
	writeJSON(w, http.StatusOK, doc, "")
}

// visiblePowerLocked is the PowerState a client reads: with hide_transitions, the state a
// transition started from until it is done.
func (s *Server) visiblePowerLocked() string {
	if !s.faults.HideTransitions {
		return s.power
	}
	switch s.power {
	case powerPoweringOn:
		return powerOff
	case powerPoweringOff:
		return powerOn
	}
	return s.power
}

// withResetTypes returns a copy of the system's Actions whose Reset offers types alone (the
// mockup's documents are shared, so they are copied, not changed).
func withResetTypes(actions map[string]any, types []string) map[string]any {
	out := maps.Clone(actions)
	reset := maps.Clone(out["#ComputerSystem.Reset"].(map[string]any))
	reset["ResetType@Redfish.AllowableValues"] = types
	out["#ComputerSystem.Reset"] = reset
	return out
}

// mockupResets are the mockup's ResetType@Redfish.AllowableValues (no PowerCycle).
var mockupResets = map[string]bool{
	"On": true, "ForceOff": true, "GracefulShutdown": true, "GracefulRestart": true,
	"ForceRestart": true, "Nmi": true, "ForceOn": true, "PushPowerButton": true,
}

// readResetType reads a Reset's body; when it is malformed or the ResetType not one of
// allowed it answers 400 and returns false.
func readResetType(w http.ResponseWriter, r *http.Request, allowed map[string]bool) (string, bool) {
	var body struct{ ResetType string }
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "Base.1.0.MalformedJSON", "malformed JSON")
		return "", false
	}
	if !allowed[body.ResetType] {
		writeError(w, http.StatusBadRequest, "Base.1.0.ActionParameterNotSupported", fmt.Sprintf("ResetType %q is not supported", body.ResetType))
		return "", false
	}
	return body.ResetType, true
}

func (s *Server) reset(w http.ResponseWriter, r *http.Request) {
	resetType, ok := readResetType(w, r, s.resets)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := r.Header.Get("If-Match"); m != "" && (s.faults.RejectIfMatch ||
		m != "*" && strings.Trim(strings.TrimPrefix(m, "W/"), `"`) != strings.Trim(s.etagLocked(), `"`)) {
		s.stats.PreconditionErr++
		writeError(w, http.StatusPreconditionFailed, "Base.1.0.PreconditionFailed", "ETag does not match")
		return
	}
	target := resetTarget(resetType, s.power)
	if s.faults.ConflictOnSameState && target != "" && (s.power == target || s.target == target) {
		s.stats.Conflicts++
		msg := "the system is already " + s.power
		if s.target == target {
			msg = "the system is already powering " + strings.ToLower(target)
		}
		writeError(w, http.StatusConflict, "Base.1.0.ResourceInStandby", msg)
		return
	}
	s.stats.Resets = append(s.stats.Resets, resetType)
	s.log.WithField("reset_type", resetType).Info("reset requested")
	switch {
	case target == powerOn && s.faults.DropPowerOn != 0:
		if s.faults.DropPowerOn > 0 {
			s.faults.DropPowerOn--
		}
		s.stats.DroppedPowerOns++
	case resetType == "GracefulShutdown" && s.faults.IgnoreGracefulShutdown:
	case resetType == "ForceRestart" || resetType == "GracefulRestart":
		if s.power == powerOn {
			s.hooks.run(s.cfg.Name, s.cfg.Hook, powerOff)
			s.beginLocked(powerOn)
		}
	case target != "" && s.power != target && s.target != target:
		s.beginLocked(target)
	}
	w.WriteHeader(http.StatusNoContent)
}

// resetTarget is the power state a ResetType leads to ("" when it does not change power).
func resetTarget(resetType, power string) string {
	switch resetType {
	case "On", "ForceOn":
		return powerOn
	case "ForceOff", "GracefulShutdown":
		return powerOff
	case "PushPowerButton":
		if power == powerOn || power == powerPoweringOn {
			return powerOff
		}
		return powerOn
	}
	return ""
}

func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func writeJSON(w http.ResponseWriter, code int, doc any, etag string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("OData-Version", "4.0")
	if etag != "" {
		w.Header().Set("ETag", etag)
	}
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(doc)
}

// writeError answers with a Redfish error body, which gofish parses into common.Error.
func writeError(w http.ResponseWriter, code int, id, msg string) {
	writeJSON(w, code, map[string]any{"error": map[string]any{
		"code": id, "message": msg,
		"@Message.ExtendedInfo": []any{map[string]any{"MessageId": id, "Message": msg}},
	}}, "")
}
