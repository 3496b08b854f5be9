package bmc

import (
	"cmp"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
)

// Reading is a server's power draw as its BMC measured it.
type Reading struct {
	Watts float64
	// Source is where it came from: redfish_environment_metrics (a chassis'
	// EnvironmentMetrics PowerWatts), redfish_power (a chassis' Power PowerControl, the older
	// schema) or ipmi_dcmi (DCMI Get Power Reading).
	Source string
}

// ErrNoReading is wrapped by PowerReading when the BMC offers no power reading (no Power or
// EnvironmentMetrics resource with a value, DCMI not supported, power reading deactivated):
// a fact about the BMC, not worth a retry.
var ErrNoReading = errors.New("the bmc offers no power reading")

// Meter reads servers' power draw; Controller implements it over Redfish and ipmitool (the
// loop's tests in memory). Safe for concurrent use.
type Meter interface {
	// PowerReading returns the node's power draw now; an error wrapping ErrNoReading when its
	// BMC offers none.
	PowerReading(ctx context.Context, node string) (Reading, error)
}

var _ Meter = (*Controller)(nil)

// meter reads one BMC's power draw; the real one is bmcMeter, tests may replace it.
type meter interface {
	read(ctx context.Context, node string, ep Endpoint, password Secret) (Reading, error)
}

// PowerReading implements Meter. bmclib v2.3.4 has no power-reading call (its providers read
// and set power state, users, boot devices, firmware, SEL): Redfish readings go through
// gofish, bmclib's own Redfish library, and IPMI readings through ipmitool's `dcmi power
// reading`, the tool bmclib's IPMI provider runs. The call is a read: it waits for the BMC's
// previous read, not for an operation that commands (run); it takes a slot of the concurrency
// cap while it is out, like every request, and is tried once (a reading is asked again at the
// next interval).
func (c *Controller) PowerReading(ctx context.Context, name string) (Reading, error) {
	var r Reading
	err := c.run(ctx, name, "power_reading", "reading the power draw of", read, func(ctx context.Context, s *session) error {
		pass, err := s.password()
		if err != nil {
			return err
		}
		release, err := c.slot(ctx, false)
		if err != nil {
			return err
		}
		defer release()
		cctx, cancel := context.WithTimeout(ctx, c.opts.CallTimeout)
		defer cancel()
		start := s.now()
		r, err = c.opts.meter.read(cctx, name, s.n.ep, pass)
		s.measure("power_reading", start, err, "")
		return err
	})
	return r, err
}

// bmcMeter is the real meter.
type bmcMeter struct {
	d *bmclibDialer // for the Redfish HTTP client (TLS, CA, session reuse)
}

func (m bmcMeter) read(ctx context.Context, node string, ep Endpoint, password Secret) (Reading, error) {
	if ep.Protocol == ProtocolIPMI {
		return readDCMI(ctx, node, ep, password, m.d.cipherSuite(node, ep))
	}
	return m.readRedfish(ctx, node, ep, password)
}

// readRedfish logs in (or uses basic auth) and reads the chassis of the node's system (system)
// until one reports a draw: EnvironmentMetrics' PowerWatts.Reading, else Power's
// PowerControl[0].PowerConsumedWatts; a system that links no chassis, on a BMC serving no
// other, is read from every chassis. A chassis that holds more than the server (ChassisType
// Enclosure, Rack, RackGroup: a blade enclosure's draw is all its blades') is read after the
// others. The JSON is read here rather than through gofish's structs, which give 0 for an
// absent reading. A chassis or reading resource that is not there (404) is no reading; a 404
// anywhere else (the login, the systems) is an error of its own (classifyRedfish).
func (m bmcMeter) readRedfish(ctx context.Context, node string, ep Endpoint, password Secret) (Reading, error) {
	r, err := m.d.openRedfish(ctx, node, ep, password)
	if err != nil {
		return Reading{}, err
	}
	defer r.close(context.WithoutCancel(ctx))
	sys, err := m.d.system(ctx, node, ep, r)
	if err != nil {
		return Reading{}, err
	}
	var uris []string
	for _, ch := range sys.system.Links.Chassis {
		uris = append(uris, ch.URI)
	}
	if len(uris) == 0 && sys.alone {
		if uris, err = r.collection(ctx, "/redfish/v1/Chassis"); err != nil {
			return Reading{}, noReadingIfMissing(err)
		}
	}
	chassis, err := r.chassis(ctx, uris)
	if err != nil {
		return Reading{}, err
	}
	// failed is the first read of a reading resource that failed other than with a 404 (busy,
	// an internal error, cut off): no proof that the BMC offers no reading.
	var failed error
	for _, ch := range chassis {
		if ch.EnvironmentMetrics != nil && ch.EnvironmentMetrics.ID != "" {
			var env struct {
				PowerWatts *struct{ Reading *float64 }
			}
			err := r.get(ctx, ch.EnvironmentMetrics.ID, &env)
			if err == nil && env.PowerWatts != nil && validWatts(env.PowerWatts.Reading) {
				return Reading{Watts: *env.PowerWatts.Reading, Source: "redfish_environment_metrics"}, nil
			}
			failed = cmp.Or(failed, unlessMissing(err))
		}
		if ch.Power != nil && ch.Power.ID != "" {
			var pw struct {
				PowerControl []struct{ PowerConsumedWatts *float64 }
			}
			err := r.get(ctx, ch.Power.ID, &pw)
			if err == nil && len(pw.PowerControl) > 0 && validWatts(pw.PowerControl[0].PowerConsumedWatts) {
				return Reading{Watts: *pw.PowerControl[0].PowerConsumedWatts, Source: "redfish_power"}, nil
			}
			failed = cmp.Or(failed, unlessMissing(err))
		}
	}
	if failed != nil {
		return Reading{}, failed
	}
	return Reading{}, fmt.Errorf("%w: no chassis of system %s has a Power or EnvironmentMetrics reading", ErrNoReading, sys.system.URI)
}

// unlessMissing returns err, but nil for a resource that is not there (404).
func unlessMissing(err error) error {
	if missing(err) {
		return nil
	}
	return err
}

// redfishChassis is the part of a Chassis resource a reading needs.
type redfishChassis struct {
	ChassisType        string
	EnvironmentMetrics *struct {
		ID string `json:"@odata.id"`
	}
	Power *struct {
		ID string `json:"@odata.id"`
	}
}

// chassis reads the chassis at uris, those that hold more than the server last; one that is
// not there (404) is left out.
func (r *redfishReader) chassis(ctx context.Context, uris []string) ([]redfishChassis, error) {
	var own, shared []redfishChassis
	for _, uri := range uris {
		var ch redfishChassis
		if err := r.get(ctx, uri, &ch); err != nil {
			if missing(err) {
				continue
			}
			return nil, err
		}
		switch ch.ChassisType {
		case "Enclosure", "Rack", "RackGroup":
			shared = append(shared, ch)
		default:
			own = append(own, ch)
		}
	}
	return append(own, shared...), nil
}

func validWatts(w *float64) bool { return w != nil && *w >= 0 && *w < 1e7 }

// missing reports whether a Redfish read was answered 404.
func missing(err error) bool {
	code, ok := redfishStatus(err)
	return ok && code == http.StatusNotFound
}

// noReadingIfMissing turns a 404 from a resource that would hold the reading into
// ErrNoReading.
func noReadingIfMissing(err error) error {
	if missing(err) {
		return fmt.Errorf("%w: %v", ErrNoReading, err)
	}
	return err
}

// classifyRedfish sorts a gofish error: 401 and 403 are *AuthError, another 4xx but 429 (too
// many requests: wait and try again) a *RefusedError (412 included: rota sends no If-Match, so it is no ETag race a retry would
// win, but a BMC that wants a precondition rota does not give), a certificate not trusted an
// *AuthError, the rest transient.
func classifyRedfish(node string, err error) error {
	if code, ok := redfishStatus(err); ok {
		switch {
		case code == http.StatusUnauthorized || code == http.StatusForbidden:
			return &AuthError{Node: node, Err: err}
		case code >= 400 && code < 500 && code != http.StatusTooManyRequests:
			return &RefusedError{Node: node, Status: code, Err: err}
		}
		return &transientError{err: err}
	}
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	if errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid) {
		return &AuthError{Node: node, Err: fmt.Errorf("verifying the bmc's tls certificate: %w", err)}
	}
	return &transientError{err: err}
}

// runIpmitool runs ipmitool with args against the endpoint's BMC, with the password in the
// environment (-E), never on the command line, in cipher suite cs (the one the BMC took for
// commands). It returns the combined output; not finding ipmitool is a *RefusedError.
func runIpmitool(ctx context.Context, node string, ep Endpoint, password Secret, cs int, args ...string) (string, error) {
	tool, err := exec.LookPath("ipmitool")
	if err != nil {
		return "", &RefusedError{Node: node, Err: fmt.Errorf("ipmitool not found: %w", err)}
	}
	cmd := exec.CommandContext(ctx, tool, append([]string{"-I", "lanplus", "-H", ep.Host, "-p", strconv.Itoa(portOrDefault(ep)),
		"-U", ep.Username, "-E", "-C", strconv.Itoa(cs), "-N", "5"}, args...)...)
	cmd.Env = []string{"IPMI_PASSWORD=" + password.Reveal()}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// readDCMI runs `ipmitool dcmi power reading` in cipher suite cs.
func readDCMI(ctx context.Context, node string, ep Endpoint, password Secret, cs int) (Reading, error) {
	text, err := runIpmitool(ctx, node, ep, password, cs, "dcmi", "power", "reading")
	if errors.Is(err, ErrRefused) {
		return Reading{}, err
	}
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return Reading{}, &transientError{err: fmt.Errorf("ipmitool dcmi power reading: %w", ctx.Err())}
		case DCMIUnsupported(text):
			return Reading{}, fmt.Errorf("%w: %s", ErrNoReading, lastLine(text))
		case IPMISessionRefused(text):
			return Reading{}, &transientError{err: fmt.Errorf("ipmitool dcmi power reading: %s", lastLine(text))}
		}
		return Reading{}, &transientError{err: fmt.Errorf("ipmitool dcmi power reading: %w: %s", err, lastLine(text))}
	}
	w, err := ParseDCMIPowerReading(text)
	if err != nil {
		return Reading{}, err
	}
	return Reading{Watts: w, Source: "ipmi_dcmi"}, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
