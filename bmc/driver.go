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
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	bmclib "github.com/bmc-toolbox/bmclib/v2"
	bmclibbmc "github.com/bmc-toolbox/bmclib/v2/bmc"
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
	// SetPower sends one of the action* commands.
	SetPower(ctx context.Context, action string) error
	// Provider names the bmclib provider that answered the last call.
	Provider() string
	Close(ctx context.Context) error
}

// dialer opens connections. Errors are classified: *AuthError and *RefusedError are final,
// anything else is worth a retry.
type dialer interface {
	Dial(ctx context.Context, node string, ep Endpoint, password Secret) (conn, error)
}

// bmclibDialer opens bmclib clients with the registry narrowed to the endpoint's protocol.
type bmclibDialer struct {
	log         *logrus.Entry
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
	if ep.Protocol != ProtocolIPMI {
		return d.dial(ctx, node, ep, password, 0)
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

// dial opens one connection; cs is the IPMI cipher suite (unused for Redfish).
func (d *bmclibDialer) dial(ctx context.Context, node string, ep Endpoint, password Secret, cs int) (conn, error) {
	opts := []bmclib.Option{
		bmclib.WithLogger(logrusr.New(d.log.WithField("node", node))),
		bmclib.WithPerProviderTimeout(d.callTimeout),
	}
	port := strconv.Itoa(portOrDefault(ep))
	var hc *http.Client
	switch ep.Protocol {
	case ProtocolIPMI:
		opts = append(opts, bmclib.WithIpmitoolPort(port), bmclib.WithIpmitoolCipherSuite(strconv.Itoa(cs)))
	case ProtocolRedfish:
		// No If-Match on the Reset: gofish would send the system's ETag with every Reset, which
		// BMCs that give actions no ETag semantics refuse (412, every time: Lenovo XCC, some
		// iDRAC firmware), and others refuse whenever the ETag moved with a sensor value since
		// the read. The Redfish specification gives actions no ETag semantics, and rota reads
		// the power state before every command and after it, so If-Match would guard nothing.
		opts = append(opts, bmclib.WithRedfishPort(port), bmclib.WithRedfishUseBasicAuth(ep.BasicAuth),
			bmclib.WithRedfishEtagMatchDisabled(true))
		if ep.SystemName != "" {
			opts = append(opts, bmclib.WithRedfishSystemName(ep.SystemName))
		}
		var err error
		if hc, err = d.httpClient(node, ep); err != nil {
			return nil, &RefusedError{Node: node, Err: err}
		}
		opts = append(opts, bmclib.WithHTTPClient(hc))
	default:
		return nil, &RefusedError{Node: node, Err: fmt.Errorf("unknown protocol %q", ep.Protocol)}
	}
	client := bmclib.NewClient(ep.Host, ep.Username, password.Reveal(), opts...)
	// Narrow the registry before Open: otherwise every call pays for all seven providers.
	if ep.Protocol == ProtocolIPMI {
		client.Registry.Drivers = client.Registry.Using("ipmi")
	} else {
		client.Registry.Drivers = client.Registry.For(redfishProvider)
	}
	c := &bmclibConn{client: client, node: node, ep: ep, pass: password, cs: cs, ping: d.ping, d: d}
	octx, cancel := context.WithTimeout(ctx, d.callTimeout)
	defer cancel()
	if err := client.Open(octx); err != nil {
		if ep.Protocol == ProtocolRedfish {
			if nerr := noSessionService(octx, node, ep, hc, err); nerr != nil {
				return nil, nerr
			}
		}
		return nil, c.classify(octx, fmt.Errorf("opening connection: %w", err))
	}
	if ep.Protocol == ProtocolRedfish {
		if err := d.checkSystem(octx, node, ep, password); err != nil {
			_ = client.Close(octx)
			return nil, err
		}
		if sys, ok := d.checkedSystem(node, ep); ok {
			c.system = &sys.system
		}
	}
	return c, nil
}

// httpClient builds the Redfish HTTP client: certificates verified against ca_file or the
// system CAs unless insecure_skip_verify is set, and TLS sessions resumed from the node's
// previous operations (bmclib closes the connection after every request, so a full handshake
// each time would cost more than the request).
func (d *bmclibDialer) httpClient(node string, ep Endpoint) (*http.Client, error) {
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, ClientSessionCache: d.sessionCache(node)}
	if ep.InsecureSkipVerify {
		tlsCfg.InsecureSkipVerify = true
	} else {
		pool, err := caPool(ep.CAFile)
		if err != nil {
			return nil, err
		}
		tlsCfg.RootCAs = pool
	}
	dialer := &net.Dialer{Timeout: d.callTimeout}
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:       tlsCfg,
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   d.callTimeout,
		ResponseHeaderTimeout: d.callTimeout,
		DisableKeepAlives:     true,
	}}, nil
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
	d      *bmclibDialer
	// system is the Redfish system the commands reach (nil for IPMI).
	system *redfishSystem
}

func (c *bmclibConn) PowerState(ctx context.Context) (string, error) {
	s, err := c.client.GetPowerState(ctx)
	if err != nil {
		return "", c.classifyRead(ctx, fmt.Errorf("reading power state: %w", err))
	}
	return s, nil
}

func (c *bmclibConn) SetPower(ctx context.Context, action string) error {
	if action == actionSoft && c.ep.Protocol == ProtocolIPMI {
		return c.softIPMI(ctx)
	}
	if err := c.offered(action); err != nil {
		return err
	}
	ok, err := c.client.SetPowerState(ctx, action)
	if !ok && acceptedGraceful(action, c.ep.Protocol, c.client.GetMetadata()) {
		return nil
	}
	if err != nil {
		return c.classify(ctx, fmt.Errorf("sending power %s: %w", action, err))
	}
	if !ok {
		return fmt.Errorf("sending power %s: the bmc did not confirm the request", action)
	}
	return nil
}

// softIPMI sends `chassis power soft` through ipmitool itself: bmclib v2.3.4's ipmitool provider
// reads the power state first and answers success without sending anything when that read
// fails, so the OS was never asked to shut down while rota waited out the grace period for it
// and then cut the power.
func (c *bmclibConn) softIPMI(ctx context.Context) error {
	out, err := runIpmitool(ctx, c.node, c.ep, c.pass, c.cs, "chassis", "power", "soft")
	switch {
	case errors.Is(err, ErrRefused):
		return err
	case err != nil:
		return c.classify(ctx, fmt.Errorf("sending power soft: %w: %s", err, lastLine(out)))
	case !strings.Contains(out, "Chassis Power Control: Soft"):
		return fmt.Errorf("sending power soft: the bmc did not confirm the request: %q", lastLine(out))
	}
	return nil
}

// acceptedGraceful reports whether a Redfish graceful shutdown that bmclib calls failed was in
// fact sent and accepted. bmclib v2.3.4's Redfish provider (gofish) answers not-ok without an
// error for every GracefulShutdown the BMC accepted, which bmclib turns into "failed to set
// power state"; a request the BMC refused or that never got an answer is an error of the
// provider, kept in FailedProviderDetail. Whether the server then shuts down is for the
// confirmation to tell, as for every command.
func acceptedGraceful(action string, p Protocol, md bmclibbmc.Metadata) bool {
	return action == actionSoft && p == ProtocolRedfish &&
		slices.Contains(md.ProvidersAttempted, redfishProvider) && md.FailedProviderDetail[redfishProvider] == ""
}

func (c *bmclibConn) Provider() string {
	return providerLabel(c.client.GetMetadata().SuccessfulProvider)
}

func (c *bmclibConn) Close(ctx context.Context) error { return c.client.Close(ctx) }

// classifyRead classifies the failure of a state read on the open connection. A 401 there, in
// the Redfish session the BMC granted when the connection opened, says the BMC ended that
// session (it expired, its web server restarted, a session limit or another client's logout
// dropped it), not that the credentials are wrong: a transient failure, which the next try
// mends with a new login (refused, that one is the *AuthError). A 401 to a Reset stays an
// *AuthError: BMCs answer it to an account without the privilege to power a server. With basic
// auth every request carries the credentials, so a 401 is theirs.
func (c *bmclibConn) classifyRead(ctx context.Context, err error) error {
	if code, ok := redfishStatus(err); ok && code == http.StatusUnauthorized && c.ep.Protocol == ProtocolRedfish && !c.ep.BasicAuth {
		return &transientError{err: fmt.Errorf("the bmc ended its session (401 after the login), logging in again: %w", err)}
	}
	return c.classify(ctx, err)
}

// classify turns a bmclib error into *AuthError, *RefusedError or a retryable error.
func (c *bmclibConn) classify(ctx context.Context, err error) error {
	if code, ok := redfishStatus(err); ok {
		switch {
		case code == 401 || code == 403:
			return &AuthError{Node: c.node, Err: err}
		case code >= 400 && code < 500:
			// 412 included: rota sends no If-Match (Dial), so it is no ETag race a retry
			// would win, but a BMC that wants a precondition rota does not give.
			return &RefusedError{Node: c.node, Status: code, Err: err}
		}
		return &transientError{err: err}
	}
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	if errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid) {
		return &AuthError{Node: c.node, Err: fmt.Errorf("verifying the bmc's tls certificate: %w", err)}
	}
	// ipmitool says the same thing whether the BMC refused the session (credentials, cipher
	// suite) or never answered. An RMCP presence ping tells them apart: a BMC that answers
	// it is there, so the session was refused.
	if c.ep.Protocol == ProtocolIPMI && ctx.Err() == nil && IPMISessionRefused(err.Error()) && c.ping != nil {
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
