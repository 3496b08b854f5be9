package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/rotahq/rota/bmc/spec"
	"github.com/rotahq/rota/internal/errtext"
	"github.com/rotahq/rota/internal/jobclass"
)

// Validate checks the whole config for the daemon and reports every problem at once as a
// *ValidationError. It also compiles the schedules (time zones, days, times), so call it (or
// Load) before use.
func (c *Config) Validate() error { return c.ValidateFor(Daemon) }

// ValidateFor is Validate for the reader mode says.
func (c *Config) ValidateFor(mode Mode) error {
	var p problems
	c.validate(&p, mode)
	if len(p) > 0 {
		return &ValidationError{Problems: p}
	}
	return nil
}

func (c *Config) validate(p *problems, mode Mode) {
	if mode == Daemon {
		c.validateWiring(p)
	}
	c.validatePolicy(p)
	c.validateClasses(p)
	c.validatePools(p, mode)
	c.validateTelemetry(p)
	c.validateMoves(p, mode)
	c.validateAccounting(p)
	c.validateBounds(p)
	c.resolveTariffs(p)
	c.resolveCurrencies(p)
}

// validateCost: rent by the hour, or watts at an energy price (flat or a tariff), never both
// prices; a rented server may give watts for its energy.
func validateCost(p *problems, path string, cost Cost) {
	bad := false
	for _, f := range []struct {
		key string
		v   float64
	}{{"hourly", cost.Hourly}, {"watts", cost.Watts}, {"price_per_kwh", cost.PricePerKWh}} {
		switch {
		case !finite(f.v):
			p.add(path+"."+f.key, "%v is not a finite number", f.v)
		case f.v < 0:
			p.add(path+"."+f.key, "must not be negative")
		default:
			continue
		}
		bad = true
	}
	if bad {
		return
	}
	energyPrice := cost.PricePerKWh > 0 || cost.Tariff != ""
	switch {
	case cost.PricePerKWh > 0 && cost.Tariff != "":
		p.add(path, "give price_per_kwh (one price) or tariff (time-of-use prices), not both")
	case cost.Hourly > 0 && energyPrice:
		p.add(path, "give hourly (rent) or watts with an energy price (owned), not both")
	case cost.Hourly == 0 && (cost.Watts > 0) != energyPrice:
		p.add(path, "watts and an energy price (price_per_kwh or tariff) go together")
	}
}

// HTTPURL reads s as an http or https URL with a host (Prometheus's, an etcd member's, rota's
// own API), or says why it is none, quoting it.
func HTTPURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s is not an http(s) URL (http://host:port)", errtext.Quote(s))
	}
	return u, nil
}

func (c *Config) validateWiring(p *problems) {
	if _, err := HTTPURL(c.Prometheus.URL); err != nil {
		p.add("prometheus.url", "%v", err)
	}
	positive(p, "prometheus.scrape_interval", c.Prometheus.ScrapeInterval)
	c.validateScrapes(p)
	positive(p, "prometheus.timeout", c.Prometheus.Timeout)
	if f := c.Prometheus.Fleet; f != "" && !fleetName.MatchString(f) {
		p.add("prometheus.fleet", "%s is not a fleet name (letters, digits, '.', '_', '-'; up to 64)", errtext.Quote(f))
	}
	validateListen(p, c.Server.ListenAddress)
	c.validateStore(p)
	positive(p, "jobs.timeout", c.Jobs.Timeout)
	positive(p, "bmc.operation_timeout", c.BMC.OperationTimeout)
	validateGraceful(p, c.BMC)
	if err := c.Prometheus.HTTPClient.Validate(); err != nil {
		p.add("prometheus.http_client", "%v", err)
	}
	c.validateTokens(p)
	if c.Server.WebhookMaxBodyBytes <= 0 {
		p.add("server.webhook_max_body_bytes", "must be positive")
	}
	switch c.Jobs.Adapter {
	case "none", "slurm":
	case "kubernetes":
		c.validateKubernetes(p)
	case "exec":
		e := c.Jobs.Exec
		for _, f := range []struct{ name, v string }{
			{"state_command", e.State}, {"demand_command", e.Demand},
			{"drain_command", e.Drain}, {"resume_command", e.Resume},
		} {
			if f.v == "" {
				p.add("jobs.exec."+f.name, "required with adapter exec")
			}
		}
	default:
		p.add("jobs.adapter", "%s is not one of none, exec, slurm, kubernetes", errtext.Quote(c.Jobs.Adapter))
	}
	if c.BMC.Concurrency <= 0 {
		p.add("bmc.concurrency", "must be positive")
	}
}

// validateListen: what net.Listen takes, host:port (the host may be empty: every address),
// so a listener rota cannot open is named here rather than by rota failing at start.
func validateListen(p *problems, addr string) {
	if addr == "" {
		p.add("server.listen_address", "must not be empty")
		return
	}
	host, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = net.LookupPort("tcp", port)
	}
	var reason string
	var ae *net.AddrError
	var de *net.DNSError
	switch {
	case errors.As(err, &ae):
		reason = ae.Err // missing port in address, invalid port, ...
	case errors.As(err, &de):
		reason = de.Err // unknown port
	case err != nil:
		reason = "not an address"
	case strings.ContainsAny(host, " \t\r\n/"):
		reason = "a host has no spaces or slashes"
	default:
		return
	}
	p.add("server.listen_address", "%s is not host:port (127.0.0.1:10091, :10091): %s", errtext.Quote(addr), reason)
}

// validateGraceful: the graceful shutdown's wait is a positive time within the operation that
// holds it. bmc.operation_timeout bounds the whole power-off, so a wait as long would end the
// operation before the hard off is sent; and a zero would not mean "hard off at once" (the
// BMC controller reads it as its own default).
func validateGraceful(p *problems, b BMCLimits) {
	positive(p, "bmc.graceful_timeout", b.GracefulTimeout)
	if b.GracefulTimeout > 0 && b.OperationTimeout > 0 && b.GracefulTimeout >= b.OperationTimeout {
		p.add("bmc.graceful_timeout", "%s is not shorter than bmc.operation_timeout (%s), which bounds the whole power-off: the hard off after it would never be sent", b.GracefulTimeout, b.OperationTimeout)
	}
}

// validateScrapes: a window must hold a scrape (the idle and underuse windows a whole number
// of them), and the max age and the failure window more than one. Shorter, a window's steps (one a scrape interval) fall in it at some evaluations
// and at none at others: the idle alert never holds for its pass, and the scaler reads a
// server whole one pass and without data the next; a max age of one scrape interval finds
// every server stale just before its next scrape lands; a failure window of one holds no
// increase.
func (c *Config) validateScrapes(p *problems) {
	step := c.Prometheus.ScrapeInterval
	if step <= 0 {
		return
	}
	for _, w := range []struct {
		path string
		d    model.Duration
	}{{"policy.idle.window", c.Policy.Idle.Window}, {"policy.underuse.window", c.Policy.Underuse.Window}} {
		switch {
		case w.d > 0 && w.d < step:
			p.add(w.path, "%s is shorter than prometheus.scrape_interval (%s): no window would hold a scrape at every evaluation", w.d, step)
		case w.d%step != 0:
			p.add(w.path, "%s is not a whole number of prometheus.scrape_interval (%s): the window's steps would be one more at some evaluations than at others, and a missed scrape could pass unseen", w.d, step)
		}
	}
	if age := c.Policy.Telemetry.MaxAge; age > 0 && age <= step {
		p.add("policy.telemetry.max_age", "%s is not more than prometheus.scrape_interval (%s): every server would read stale before each scrape", age, step)
	}
	// increase() over the failure window needs two scrapes in it: the power alerts on it would
	// never fire.
	if w := c.Policy.Failure.AlertWindow; w > 0 && w <= step {
		p.add("policy.failure.alert_window", "%s is not more than prometheus.scrape_interval (%s): no window would hold the two scrapes a failure is counted between", w, step)
	}
}

// validateStore: a bbolt file needs its path; etcd needs endpoints, a fleet name, a prefix
// of its own and a lease of whole seconds (etcd's unit), at least 2.
func (c *Config) validateStore(p *problems) {
	s := c.Store
	switch s.Backend {
	case BackendBolt:
		switch {
		case s.Path == "":
			p.add("store.path", "must not be empty")
		case !filepath.IsAbs(s.Path):
			// Every other relative path is read from the config file's folder, but the
			// store's was read from the working directory until then: resolved either way,
			// a rota started where the other place is would open an empty store and forget
			// what it drained and powered off. Neither is guessed: the user says which.
			was, _ := filepath.Abs(s.Path)
			p.add("store.path", "%s is relative: give the store's absolute path (from this working directory it is %s; rota reads other relative paths from the config file's folder, and under systemd runs in /)", errtext.Quote(s.Path), was)
		}
		return
	case BackendEtcd:
	default:
		p.add("store.backend", "%s is not one of bbolt, etcd", errtext.Quote(s.Backend))
		return
	}
	e := s.Etcd
	if len(e.Endpoints) == 0 {
		p.add("store.etcd.endpoints", "required with store.backend etcd")
	}
	schemes := map[string]bool{}
	for i, ep := range e.Endpoints {
		u, err := HTTPURL(ep)
		if err != nil {
			p.add(fmt.Sprintf("store.etcd.endpoints[%d]", i), "%v", err)
			continue
		}
		schemes[u.Scheme] = true
	}
	switch {
	case len(schemes) > 1:
		p.add("store.etcd.endpoints", "mixes http:// and https://: every member speaks TLS, or none does")
	case schemes["http"] && !reflect.ValueOf(e.TLS).IsZero():
		p.add("store.etcd.tls_config", "set, but the endpoints are http://: use https:// endpoints for TLS")
	}
	if !fleetName.MatchString(e.Fleet) {
		p.add("store.etcd.fleet", "%s is not a fleet name (letters, digits, '.', '_', '-'; up to 64)", errtext.Quote(e.Fleet))
	}
	if e.Name != "" && !fleetName.MatchString(e.Name) { // it names the leader in logs, status and alerts
		p.add("store.etcd.name", "%s is not a name (letters, digits, '.', '_', '-'; up to 64)", errtext.Quote(e.Name))
	}
	if e.Prefix != "" && (!strings.HasPrefix(e.Prefix, "/") || strings.HasSuffix(e.Prefix, "/") || strings.ContainsAny(e.Prefix, " \t\n")) {
		p.add("store.etcd.prefix", "%s must start with / and not end with one, without spaces", errtext.Quote(e.Prefix))
	}
	if e.AdvertiseURL != "" {
		if _, err := HTTPURL(e.AdvertiseURL); err != nil {
			p.add("store.etcd.advertise_url", "%v", err)
		}
	}
	if d := time.Duration(e.LeaseTTL); d < 2*time.Second || d%time.Second != 0 {
		p.add("store.etcd.lease_ttl", "%s is not a whole number of seconds, at least 2s (etcd counts leases in seconds)", e.LeaseTTL)
	}
	positive(p, "store.etcd.dial_timeout", e.DialTimeout)
	positive(p, "store.etcd.request_timeout", e.RequestTimeout)
	if d := time.Duration(e.RequestTimeout); d > 0 && d > time.Duration(e.LeaseTTL) {
		p.add("store.etcd.request_timeout", "%s is longer than store.etcd.lease_ttl (%s): a request could outlast the lease it is fenced on", e.RequestTimeout, e.LeaseTTL)
	}
	if (e.Username == "") != (e.PasswordFile == "") {
		p.add("store.etcd.password_file", "store.etcd.username and password_file go together")
	}
	if err := e.TLS.Validate(); err != nil {
		p.add("store.etcd.tls_config", "%v", err)
	}
}

// fleetName is what store.etcd.fleet, store.etcd.name and prometheus.fleet may be.
var fleetName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// EtcdPrefix is the fleet's key prefix: store.etcd.prefix, else /rota/FLEET.
func (e EtcdStore) EtcdPrefix() string {
	if e.Prefix != "" {
		return e.Prefix
	}
	return "/rota/" + e.Fleet
}

// validateTokens: the webhook is authenticated or says it is not, never both; the operator API
// and the webhook have tokens of their own (Alertmanager's side holds the webhook token, so
// sharing it would hand the fleet's power to whoever reads Alertmanager's config).
func (c *Config) validateTokens(p *problems) {
	s := c.Server
	switch {
	case s.WebhookTokenFile == "" && !s.WebhookAuthDisabled:
		p.add("server.webhook_token_file", "required (or set server.webhook_auth_disabled: true to accept unauthenticated webhooks)")
	case s.WebhookTokenFile != "" && s.WebhookAuthDisabled:
		p.add("server.webhook_token_file", "set together with server.webhook_auth_disabled: true, which would ignore it; keep one")
	case s.WebhookTokenFile != "" && s.APITokenFile != "" && filepath.Clean(s.WebhookTokenFile) == filepath.Clean(s.APITokenFile):
		p.add("server.webhook_token_file", "is server.api_token_file too: the webhook (whose token Alertmanager also holds) and the operator API need a token each")
	}
}

func positive(p *problems, path string, d model.Duration) {
	if d <= 0 {
		p.add(path, "must be a positive duration")
	}
}

// The checks of numbers are written so that NaN fails them: every comparison with NaN is false.

func ratio(p *problems, path string, v float64) {
	if !(v > 0 && v <= 1) {
		p.add(path, "%v is not a ratio in (0, 1]", v)
	}
}

func share(p *problems, path string, v float64) {
	if !(v >= 0 && v <= 1) {
		p.add(path, "%v is not a share in [0, 1]", v)
	}
}

// notNegative: a finite number, zero or more.
func notNegative(p *problems, path string, v float64) {
	switch {
	case !finite(v):
		p.add(path, "%v is not a finite number", v)
	case v < 0:
		p.add(path, "must not be negative")
	}
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func (c *Config) validatePolicy(p *problems) {
	pol := &c.Policy
	positive(p, "policy.evaluation_interval", pol.EvaluationInterval)
	ratio(p, "policy.idle.cpu_threshold", pol.Idle.CPUThreshold)
	ratio(p, "policy.idle.gpu_threshold", pol.Idle.GPUThreshold)
	positive(p, "policy.idle.window", pol.Idle.Window)
	if pol.Backlog.QueuedJobs < 0 {
		p.add("policy.backlog.queued_jobs", "must not be negative")
	}
	if pol.Backlog.For < 0 {
		p.add("policy.backlog.for", "must not be negative")
	}
	ratio(p, "policy.underuse.gpu_threshold", pol.Underuse.GPUThreshold)
	positive(p, "policy.underuse.window", pol.Underuse.Window)
	positive(p, "policy.telemetry.max_age", pol.Telemetry.MaxAge)
	if pol.Node.MaxCyclesPerDay < 0 {
		p.add("policy.node.max_cycles_per_day", "must not be negative")
	}
	if pol.Disruption.MaxPowerOffs < 0 {
		p.add("policy.disruption.max_power_offs", "must not be negative")
	}
	share(p, "policy.disruption.max_power_offs_share", pol.Disruption.MaxPowerOffsShare)
	if pol.Disruption.MaxConcurrent <= 0 {
		p.add("policy.disruption.max_concurrent", "%d is not a positive count: it caps every action in flight, power-ons included (to stop scale-down, set policy.disruption.max_power_offs: 0 or run rotactl pause)", pol.Disruption.MaxConcurrent)
	}
	share(p, "policy.disruption.max_concurrent_share", pol.Disruption.MaxConcurrentShare)
	positive(p, "policy.disruption.window", pol.Disruption.Window)
	positive(p, "policy.drain.timeout", pol.Drain.Timeout)
	positive(p, "policy.spares.window", pol.Spares.Window)
	notNegative(p, "policy.spares.factor", pol.Spares.Factor)
	share(p, "policy.spares.max_share", pol.Spares.MaxShare)
	if !(pol.Spares.Quantile >= 0 && pol.Spares.Quantile < 1) {
		p.add("policy.spares.quantile", "%v is not a probability in [0, 1)", pol.Spares.Quantile)
	}
	for _, f := range []struct {
		path string
		v    float64
	}{
		{"policy.break_even.wear_cost", pol.BreakEven.WearCost},
		{"policy.break_even.wait_per_job_hour", pol.BreakEven.WaitPerJobHour},
		{"policy.break_even.wait_per_gpu_hour", pol.BreakEven.WaitPerGPUHour},
	} {
		if !(f.v >= 0) || !finite(f.v) {
			p.add(f.path, "%v is not a price (zero or more)", f.v)
		}
	}

	if pol.Failure.AlertAfter <= 0 {
		p.add("policy.failure.alert_after", "must be positive")
	}
	positive(p, "policy.failure.alert_window", pol.Failure.AlertWindow)
	// a server whose power step failed would be retried at every pass, and doubling no wait
	// never reaches max_backoff
	positive(p, "policy.failure.backoff", pol.Failure.Backoff)
	if pol.Failure.MaxBackoff < pol.Failure.Backoff {
		p.add("policy.failure.max_backoff", "%s is shorter than policy.failure.backoff (%s), the first wait it bounds", pol.Failure.MaxBackoff, pol.Failure.Backoff)
	}
	names := map[string]bool{}
	for i := range pol.Schedules {
		s := &pol.Schedules[i]
		path := fmt.Sprintf("policy.schedules[%d]", i)
		if s.Name == "" {
			p.add(path+".name", "required")
		} else if names[s.Name] {
			p.add(path+".name", "%s is used twice", errtext.Quote(s.Name))
		}
		names[s.Name] = true
		s.compile(p, path)
		share(p, path+".min_on_share", s.MinOnShare)
		if s.BacklogQueuedJobs != nil && *s.BacklogQueuedJobs < 0 {
			p.add(path+".backlog_queued_jobs", "must not be negative")
		}
		for j, pool := range s.Pools {
			if c.Pool(pool) == nil {
				p.add(fmt.Sprintf("%s.pools[%d]", path, j), "no pool named %s", errtext.Quote(pool))
			}
		}
	}
	seen := map[string]bool{}
	for i, q := range pol.Quotas {
		path := fmt.Sprintf("policy.quotas[%d]", i)
		if q.Department == "" {
			p.add(path+".department", "required")
		}
		if c.Pool(q.Pool) == nil {
			p.add(path+".pool", "no pool named %s", errtext.Quote(q.Pool))
		}
		if q.MaxServers < 0 {
			p.add(path+".max_servers", "must not be negative")
		}
		key := q.Department + "\x00" + q.Pool
		if seen[key] {
			p.add(path, "a second quota for department %s in pool %s", errtext.Quote(q.Department), errtext.Quote(q.Pool))
		}
		seen[key] = true
	}
}

func (c *Config) validateClasses(p *problems) {
	names := map[string]bool{}
	for i, cl := range c.Classes {
		path := fmt.Sprintf("classes[%d]", i)
		uniqueName(p, names, path, cl.Name)
		if cl.MaxCPUs < 0 {
			p.add(path+".max_cpus", "must not be negative")
		}
		if cl.MaxGPUs != nil && *cl.MaxGPUs < 0 {
			p.add(path+".max_gpus", "must not be negative")
		}
		if d := cl.Defer; d != nil {
			if c.schedule(d.Until) == nil {
				p.add(path+".defer.until", "no schedule named %s", errtext.Quote(d.Until))
			}
			positive(p, path+".defer.max", d.Max)
			if cl.Service {
				p.add(path+".defer", "a service class cannot be deferred")
			}
		}
	}
	if len(c.Classes) == 0 {
		p.add("classes", "%s", jobclass.EmptyList)
	} else {
		last := c.Classes[len(c.Classes)-1]
		if len(last.Partitions) > 0 || last.MaxCPUs != 0 || last.MaxGPUs != nil || last.MaxMemory != 0 {
			p.add(fmt.Sprintf("classes[%d]", len(c.Classes)-1), "the last class must have no limits and no partitions, so every job has a class")
		}
	}
}

func (c *Config) validatePools(p *problems, mode Mode) {
	if len(c.Pools) == 0 {
		p.add("pools", "at least one pool is required")
	}
	pools, nodes, exporters := map[string]bool{}, map[string]string{}, map[string]string{}
	for i := range c.Pools {
		pl := &c.Pools[i]
		path := fmt.Sprintf("pools[%d]", i)
		uniqueName(p, pools, path, pl.Name)
		if pl.Profile.CPUCores <= 0 {
			p.add(path+".profile.cpu_cores", "must be positive")
		}
		if pl.Profile.GPUs < 0 {
			p.add(path+".profile.gpus", "must not be negative")
		}
		validateCost(p, path+".cost", pl.Cost)
		if b := pl.Cost.BaseWatts; !finite(b) || b < 0 {
			notNegative(p, path+".cost.base_watts", b)
		} else if b > 0 && pl.Profile.GPUs == 0 {
			p.add(path+".cost.base_watts", "is the draw apart from the GPUs: the profile declares none")
		}
		positive(p, path+".boot_timeout", pl.BootTimeout)
		if pl.Min < 0 {
			p.add(path+".min", "must not be negative")
		}
		// A min beyond the nodes is the min's problem: max (by default the number of nodes) is
		// then held to the nodes alone, not blamed for being under that min too.
		if pl.Min > len(pl.Nodes) {
			p.add(path+".min", "%d is more than the pool's %d nodes", pl.Min, len(pl.Nodes))
		}
		if pl.Max != nil && ((*pl.Max < pl.Min && pl.Min <= len(pl.Nodes)) || *pl.Max > len(pl.Nodes)) {
			p.add(path+".max", "%d is not between min (%d) and the number of nodes (%d)", *pl.Max, pl.Min, len(pl.Nodes))
		}
		for j := range pl.Nodes {
			n := &pl.Nodes[j]
			npath := fmt.Sprintf("%s.nodes[%d]", path, j)
			if !IsName(n.Name) {
				p.add(npath+".name", "%s is not a name (%s)", errtext.Quote(n.Name), nameRule)
			} else if prev, dup := nodes[n.Name]; dup {
				p.add(npath+".name", "%s is already a node of %s", errtext.Quote(n.Name), prev)
			} else {
				nodes[n.Name] = path
			}
			if mode != Daemon {
				continue // a replay sends no power command and scrapes nothing
			}
			validateExporter(p, exporters, npath, n.Exporter)
			for _, err := range n.BMC.Validate() {
				var fe *spec.FieldError
				if errors.As(err, &fe) {
					p.add(npath+".bmc."+fe.Field, "%s", fe.Msg)
				} else {
					p.add(npath+".bmc", "%v", err)
				}
			}
		}
	}
}

// validateExporter checks a node's exporter (when given): host:port, and no other node's, for
// the target's series would be read as both servers'.
func validateExporter(p *problems, seen map[string]string, npath, addr string) {
	if addr == "" {
		return
	}
	host, port, err := net.SplitHostPort(addr)
	if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 || host == "" || strings.ContainsAny(host, " \t\r\n/@") {
		p.add(npath+".exporter", "%s is not host:port of the server's rota-exporter (gpu01.example.internal:10090)", errtext.Quote(addr))
		return
	}
	if prev, dup := seen[addr]; dup {
		p.add(npath+".exporter", "%s is already the exporter of %s", errtext.Quote(addr), prev)
		return
	}
	seen[addr] = npath
}

// uniqueName checks the name at path+".name": a name, and not one of seen (which it joins).
func uniqueName(p *problems, seen map[string]bool, path, name string) {
	if !IsName(name) {
		p.add(path+".name", "%s is not a name (%s)", errtext.Quote(name), nameRule)
	} else if seen[name] {
		p.add(path+".name", "%s is used twice", errtext.Quote(name))
	}
	seen[name] = true
}

// nameRule says what IsName takes.
const nameRule = "up to 128 letters, digits, '-', '_', '.', not starting with '-'"

// IsName reports whether s may be a name in the config (a pool's, a class's, a node's, a
// telemetry source's, a storage's): 1 to 128 letters, digits, '-', '_' and '.', not starting
// with '-' (a node's name is the first argument of the job manager's commands, never an
// option).
func IsName(s string) bool {
	if s == "" || len(s) > 128 || s[0] == '-' {
		return false
	}
	for _, r := range s {
		ok := r == '-' || r == '_' || r == '.' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !ok {
			return false
		}
	}
	return true
}
