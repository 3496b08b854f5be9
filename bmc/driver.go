package bmc

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	bmclib "github.com/bmc-toolbox/bmclib/v2"
	"github.com/bombsimon/logrusr/v2"
	"github.com/sirupsen/logrus"
	gofishcommon "github.com/stmcginnis/gofish/common"
)

// Power actions as bmclib names them.
const (
	actionOn   = "on"
	actionOff  = "off"
	actionSoft = "soft"
)

// redfishProvider is bmclib's name for its Redfish provider, built on gofish.
const redfishProvider = "gofish"

// conn is one open connection to a BMC, used for the calls of one operation.
type conn interface {
	// PowerState returns the BMC's raw answer (ParseState normalises it).
	PowerState(ctx context.Context) (string, error)
	// SetPower sends one of the action* commands. task is the task monitor the BMC answered
	// with (Redfish 202 Accepted), empty when none.
	SetPower(ctx context.Context, action string) (task string, err error)
	// Task reads a task monitor SetPower returned: done once the task completed or is gone,
	// a *TaskFailedError when it ended failed.
	Task(ctx context.Context, uri string) (done bool, err error)
	// Provider names the library provider that answered the last call.
	Provider() string
	Close(ctx context.Context) error
}

// dialer opens connections. Errors are classified: *AuthError and *RefusedError are final,
// anything else is worth a retry.
type dialer interface {
	Dial(ctx context.Context, node string, ep Endpoint, password Secret) (conn, error)
}

// bmclibDialer opens connections: bmclib clients with the registry narrowed to IPMI, and rota's
// own Redfish sessions (redfishConn).
type bmclibDialer struct {
	log         *logrus.Entry
	clock       Clock
	callTimeout time.Duration
	// ping tells an IPMI BMC that answers but refuses the session from one that is not there.
	ping func(ctx context.Context, addr string) bool

	mu          sync.Mutex
	tlsSessions map[string]tls.ClientSessionCache
	systems     map[string]systemChoice // by node: the Redfish system its commands reach
	suites      map[string]int          // by node: the IPMI cipher suite its BMC took last
}

// Dial opens a connection. An IPMI BMC with no cipher suite configured is asked with
// DefaultCipherSuite, then, where it refuses that session (it answers, see classify),
// FallbackCipherSuite; the suite it took is asked first from then on. Only a refused session
// moves on: no command has been sent then (bmclib's own fallback would send the same command
// again after any failure).
func (d *bmclibDialer) Dial(ctx context.Context, node string, ep Endpoint, password Secret) (conn, error) {
	switch ep.Protocol {
	case ProtocolRedfish:
		return d.dialRedfish(ctx, node, ep, password)
	case ProtocolIPMI:
	default:
		return nil, &RefusedError{Node: node, Err: fmt.Errorf("unknown protocol %q", ep.Protocol)}
	}
	suites := d.cipherSuites(node, ep)
	var first error
	for i, cs := range suites {
		c, err := d.dial(ctx, node, ep, password, cs)
		if err == nil {
			d.took(node, ep, cs)
			return c, nil
		}
		var auth *AuthError
		if first == nil {
			first = err
		} else if errors.As(first, &auth) {
			auth.Err = fmt.Errorf("%w (cipher suite %d refused too)", auth.Err, cs)
		}
		if !errors.As(err, &auth) || ctx.Err() != nil || i == len(suites)-1 {
			break
		}
	}
	return nil, first
}

// cipherSuites are the IPMI cipher suites to ask node's BMC with, in order: the configured
// one alone, else the one it took last first.
func (d *bmclibDialer) cipherSuites(node string, ep Endpoint) []int {
	if ep.CipherSuite != 0 {
		return []int{ep.CipherSuite}
	}
	if d.cipherSuite(node, ep) == FallbackCipherSuite {
		return []int{FallbackCipherSuite, DefaultCipherSuite}
	}
	return []int{DefaultCipherSuite, FallbackCipherSuite}
}

// cipherSuite is the IPMI cipher suite to ask node's BMC with: the configured one, else the
// one it took last, else DefaultCipherSuite.
func (d *bmclibDialer) cipherSuite(node string, ep Endpoint) int {
	if ep.CipherSuite != 0 {
		return ep.CipherSuite
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return cmp.Or(d.suites[node], DefaultCipherSuite)
}

// took remembers the cipher suite node's BMC took, when none is configured.
func (d *bmclibDialer) took(node string, ep Endpoint, cs int) {
	if ep.CipherSuite != 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.suites == nil {
		d.suites = map[string]int{}
	}
	if d.suites[node] != cs && cs != DefaultCipherSuite {
		d.log.WithFields(logrus.Fields{"node": node, "cipher_suite": cs}).Infof("the BMC refused IPMI cipher suite %d; using %d (set bmc.cipher_suite to skip the first try)", DefaultCipherSuite, cs)
	}
	d.suites[node] = cs
}

// dial opens one IPMI connection in cipher suite cs.
func (d *bmclibDialer) dial(ctx context.Context, node string, ep Endpoint, password Secret, cs int) (conn, error) {
	// bmclib's ipmitool provider joins host and port with a colon and splits them again, which
	// takes an IPv6 address apart: ipmitool ran with no -H at all ("No hostname specified!").
	// In brackets, the address comes back whole.
	host := ep.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	client := bmclib.NewClient(host, ep.Username, password.Reveal(),
		bmclib.WithLogger(logrusr.New(d.log.WithField("node", node))),
		bmclib.WithPerProviderTimeout(d.callTimeout),
		bmclib.WithIpmitoolPort(strconv.Itoa(portOrDefault(ep))), bmclib.WithIpmitoolCipherSuite(strconv.Itoa(cs)))
	// Narrow the registry before Open: otherwise every call pays for all seven providers.
	client.Registry.Drivers = client.Registry.Using("ipmi")
	c := &bmclibConn{client: client, node: node, ep: ep, pass: password, cs: cs, ping: d.ping}
	octx, cancel := context.WithTimeout(ctx, d.callTimeout)
	defer cancel()
	if err := client.Open(octx); err != nil {
		return nil, c.classify(octx, fmt.Errorf("opening connection: %w", err))
	}
	return c, nil
}

// httpClient builds the Redfish HTTP client of one connection: certificates verified against
// ca_file or the system CAs unless insecure_skip_verify is set, TLS sessions resumed from the
// node's previous operations (gofish closes the connection after every request, so a full
// handshake each time would cost more than the request), each request bounded by the call
// timeout, under the redfishTransport it returns too.
func (d *bmclibDialer) httpClient(node string, ep Endpoint) (*http.Client, *redfishTransport, error) {
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, ClientSessionCache: d.sessionCache(node)}
	if ep.InsecureSkipVerify {
		tlsCfg.InsecureSkipVerify = true
	} else {
		pool, err := caPool(ep.CAFile)
		if err != nil {
			return nil, nil, err
		}
		tlsCfg.RootCAs = pool
	}
	dialer := &net.Dialer{Timeout: d.callTimeout}
	rt := &redfishTransport{host: ep.Host, clock: d.clock, base: &http.Transport{
		TLSClientConfig:       tlsCfg,
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   d.callTimeout,
		ResponseHeaderTimeout: d.callTimeout,
		DisableKeepAlives:     true,
	}}
	return &http.Client{Transport: rt, Timeout: d.callTimeout}, rt, nil
}

// sessionCache returns the node's TLS session cache, made on first use.
func (d *bmclibDialer) sessionCache(node string) tls.ClientSessionCache {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.tlsSessions == nil {
		d.tlsSessions = map[string]tls.ClientSessionCache{}
	}
	c, ok := d.tlsSessions[node]
	if !ok {
		c = tls.NewLRUClientSessionCache(4)
		d.tlsSessions[node] = c
	}
	return c
}

// caPool returns the CA bundle of ca_file, or nil (the system CAs) when none is set.
func caPool(file string) (*x509.CertPool, error) {
	if file == "" {
		return nil, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("ca_file %s holds no PEM certificate", file)
	}
	return pool, nil
}

func portOrDefault(ep Endpoint) int {
	if ep.Port != 0 {
		return ep.Port
	}
	if ep.Protocol == ProtocolIPMI {
		return 623
	}
	return 443
}

type bmclibConn struct {
	client *bmclib.Client
	node   string
	ep     Endpoint
	pass   Secret
	cs     int // the IPMI cipher suite the connection opened in
	ping   func(ctx context.Context, addr string) bool
}

func (c *bmclibConn) PowerState(ctx context.Context) (string, error) {
	s, err := c.client.GetPowerState(ctx)
	if err != nil {
		return "", c.classify(ctx, fmt.Errorf("reading power state: %w", err))
	}
	return chassisPowerLine(s), nil
}

// chassisPowerLine returns the line of ipmitool's `chassis power status` output that gives the
// state ("Chassis Power is on"). bmclib reads ipmitool's stdout and stderr together, and
// ipmitool prints notices on stderr around the answer on many BMCs ("Get HPM.x Capabilities
// request failed, compcode = d4" as each session opens, a failed Close Session as it ends):
// a notice is no unknown state. Output with no such line, or more than one, is returned
// whole, for ParseState to find no state in.
func chassisPowerLine(out string) string {
	var found []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.ToLower(strings.TrimSpace(l)), "chassis power is ") {
			found = append(found, l)
		}
	}
	if len(found) != 1 {
		return out
	}
	return found[0]
}

func (c *bmclibConn) SetPower(ctx context.Context, action string) (string, error) {
	if took, ok := ipmitoolTook[action]; ok {
		return "", c.chassisPower(ctx, action, took)
	}
	ok, err := c.client.SetPowerState(ctx, action)
	if err != nil {
		return "", c.classify(ctx, fmt.Errorf("sending power %s: %w", action, err))
	}
	if !ok {
		return "", fmt.Errorf("sending power %s: the bmc did not confirm the request", action)
	}
	return "", nil
}

// Task is never called: IPMI answers a command with no task.
func (c *bmclibConn) Task(context.Context, string) (bool, error) { return true, nil }

// ipmitoolTook is, for each action rota sends through ipmitool itself (chassisPower), what
// ipmitool prints when the BMC took it. bmclib v2.3.4's ipmitool provider gets both wrong:
//   - soft: it reads the power state first and answers success without sending anything when
//     that read fails, so the OS was never asked to shut down while rota waited out the grace
//     period for it and then cut the power;
//   - on: it takes the BMC's answer for a failure unless the output starts with it, and
//     ipmitool prints notices before it on many BMCs ("Get HPM.x Capabilities request failed,
//     compcode = d4"): a power-on taken, reported failed, sent again while the state was
//     behind it, and the operation failed as the server came up.
var ipmitoolTook = map[string]string{
	actionSoft: "Chassis Power Control: Soft",
	actionOn:   "Chassis Power Control: Up/On",
}

// chassisPower sends `chassis power <action>` through ipmitool itself, the BMC's taking it
// read as took anywhere in the output.
func (c *bmclibConn) chassisPower(ctx context.Context, action, took string) error {
	out, err := runIpmitool(ctx, c.node, c.ep, c.pass, c.cs, "chassis", "power", action)
	switch {
	case errors.Is(err, ErrRefused):
		return err
	case err != nil:
		return c.classify(ctx, fmt.Errorf("sending power %s: %w: %s", action, err, lastLine(out)))
	case !strings.Contains(out, took):
		return fmt.Errorf("sending power %s: the bmc did not confirm the request: %q", action, lastLine(out))
	}
	return nil
}

func (c *bmclibConn) Provider() string {
	return providerLabel(c.client.GetMetadata().SuccessfulProvider)
}

func (c *bmclibConn) Close(ctx context.Context) error { return c.client.Close(ctx) }

// classify turns a bmclib IPMI error into *AuthError or a retryable error.
func (c *bmclibConn) classify(ctx context.Context, err error) error {
	// ipmitool says the same thing whether the BMC refused the session (credentials, cipher
	// suite) or never answered. An RMCP presence ping tells them apart: a BMC that answers
	// it is there, so the session was refused.
	if ctx.Err() == nil && IPMISessionRefused(err.Error()) && c.ping != nil {
		if c.ping(ctx, c.ep.Address()) {
			return &AuthError{Node: c.node, Err: err}
		}
	}
	return &transientError{err: err}
}

// redfishStatus finds the HTTP status of a Redfish error answer inside a bmclib error; gofish
// reports a failed collection member inside a CollectionError.
func redfishStatus(err error) (int, bool) {
	var rf *gofishcommon.Error
	if errors.As(err, &rf) && rf.HTTPReturnedStatusCode != 0 {
		return rf.HTTPReturnedStatusCode, true
	}
	var coll *gofishcommon.CollectionError
	if errors.As(err, &coll) {
		code := 0
		for _, e := range coll.Failures {
			if c, ok := redfishStatus(e); ok && (code == 0 || c == 401 || c == 403) {
				code = c
			}
		}
		return code, code != 0
	}
	return 0, false
}

// IPMISessionRefused reports whether ipmitool's output says the RMCP+ session could not be
// established (bad credentials, an unsupported cipher suite, or no answer at all).
func IPMISessionRefused(output string) bool {
	return strings.Contains(output, "Unable to establish IPMI v2 / RMCP+ session") ||
		strings.Contains(output, "Unable to establish LAN session")
}

// providerLabel bounds the provider metric label to bmclib's known provider names.
func providerLabel(p string) string {
	switch p {
	case "ipmitool", "gofish":
		return p
	case "":
		return "none"
	}
	return "other"
}
