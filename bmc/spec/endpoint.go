package spec

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/rotahq/rota/internal/errtext"
	"github.com/rotahq/rota/internal/secretfile"
)

// Protocol is how rota talks to a BMC.
type Protocol string

// The protocols rota supports.
const (
	ProtocolIPMI    Protocol = "ipmi"
	ProtocolRedfish Protocol = "redfish"
)

// DefaultCipherSuite is the IPMI RMCP+ cipher suite tried first when none is configured (3:
// HMAC-SHA1 authentication and integrity, AES-128 confidentiality), and FallbackCipherSuite
// the one tried when a BMC refuses it (17: the same with SHA-256, which hardened BMCs keep
// alone).
const (
	DefaultCipherSuite  = 3
	FallbackCipherSuite = 17
)

// Endpoint is how to reach one server's BMC. The config package embeds it under each node's
// `bmc:` key. The password is never written here: it is read from PasswordFile or PasswordEnv
// when an operation needs it.
type Endpoint struct {
	// Protocol is ipmi or redfish.
	Protocol Protocol `yaml:"protocol" json:"protocol"`
	// Host is the BMC's address (name or IP, no scheme).
	Host string `yaml:"host" json:"host"`
	// Port overrides the protocol's default port (IPMI 623/udp, Redfish 443/tcp).
	Port int `yaml:"port,omitempty" json:"port,omitempty"`
	// Username is the BMC account.
	Username string `yaml:"username" json:"username"`
	// PasswordFile is a file holding the password (surrounding whitespace is trimmed).
	PasswordFile string `yaml:"password_file,omitempty" json:"password_file,omitempty"`
	// PasswordEnv names an environment variable holding the password.
	PasswordEnv string `yaml:"password_env,omitempty" json:"password_env,omitempty"`
	// CAFile is a PEM bundle that signs the Redfish BMC's certificate (default: system CAs).
	CAFile string `yaml:"ca_file,omitempty" json:"ca_file,omitempty"`
	// InsecureSkipVerify turns off Redfish certificate verification; only when set.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify,omitempty" json:"insecure_skip_verify,omitempty"`
	// BasicAuth makes Redfish calls with HTTP basic auth instead of a session.
	BasicAuth bool `yaml:"basic_auth,omitempty" json:"basic_auth,omitempty"`
	// SystemName picks the Redfish ComputerSystem (its Name) on BMCs that have several.
	SystemName string `yaml:"system_name,omitempty" json:"system_name,omitempty"`
	// CipherSuite is the IPMI RMCP+ cipher suite (0: DefaultCipherSuite, then
	// FallbackCipherSuite where the BMC refuses the session).
	CipherSuite int `yaml:"cipher_suite,omitempty" json:"cipher_suite,omitempty"`
}

// FieldError is a problem with one field of an Endpoint. Field is the yaml name, so a caller
// can prefix the path of the endpoint in its file ("pools[0].nodes[3].bmc.host: required").
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Validate reports every problem with the endpoint at once; nil when it is usable. It does not
// read the password (see Password).
func (e Endpoint) Validate() []error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	switch e.Protocol {
	case ProtocolIPMI, ProtocolRedfish:
	case "":
		add("protocol", "required (ipmi or redfish)")
	default:
		add("protocol", "unknown protocol %s (want ipmi or redfish)", errtext.Quote(string(e.Protocol)))
	}
	if strings.TrimSpace(e.Host) == "" {
		add("host", "required")
	} else if msg := hostProblem(e.Host); msg != "" {
		add("host", "%s", msg)
	} else if a, err := netip.ParseAddr(e.Host); err == nil && a.Zone() != "" && e.Protocol == ProtocolRedfish {
		// The Redfish URL would not parse ("invalid URL escape"): the BMC would fail at its
		// first command, not here.
		add("host", "%s has an IPv6 zone (%%%s), which a Redfish URL cannot carry: give a routable address of the BMC", errtext.Quote(e.Host), a.Zone())
	}
	if e.Port < 0 || e.Port > 65535 {
		add("port", "out of range 1-65535: %d", e.Port)
	}
	if e.Username == "" {
		add("username", "required")
	}
	switch {
	case e.PasswordFile == "" && e.PasswordEnv == "":
		add("password_file", "required, or password_env")
	case e.PasswordFile != "" && e.PasswordEnv != "":
		add("password_env", "set only one of password_file and password_env")
	}
	if e.Protocol == ProtocolIPMI {
		redfishOnly := []struct {
			field string
			set   bool
		}{{"ca_file", e.CAFile != ""}, {"insecure_skip_verify", e.InsecureSkipVerify}, {"basic_auth", e.BasicAuth}, {"system_name", e.SystemName != ""}}
		for _, f := range redfishOnly {
			if f.set {
				add(f.field, "only for protocol redfish")
			}
		}
	}
	if e.CAFile != "" && e.InsecureSkipVerify {
		add("insecure_skip_verify", "set only one of ca_file and insecure_skip_verify")
	}
	if e.CipherSuite != 0 && e.Protocol == ProtocolRedfish {
		add("cipher_suite", "only for protocol ipmi")
	}
	if e.CipherSuite < 0 || e.CipherSuite > 17 {
		add("cipher_suite", "out of range 0-17: %d", e.CipherSuite)
	}
	return errs
}

// hostProblem says what makes host no BMC host ("" when it is one): an IP address (IPv6
// without brackets) or a DNS name, without scheme, user, port or path. ipmitool takes it as
// -H and the Redfish client puts it in a URL, so "bmc:623" or "admin@bmc" would reach
// another port or send another user, and a leading '-' reads as an option.
func hostProblem(host string) string {
	if _, err := netip.ParseAddr(host); err == nil {
		return ""
	}
	if h, port, err := net.SplitHostPort(host); err == nil && h != "" && strings.Trim(port, "0123456789") == "" && port != "" {
		return fmt.Sprintf("%s has a port: give the host alone, and the port in port", errtext.Quote(host))
	}
	if !isDNSName(host) {
		return fmt.Sprintf("want a host name (letters, digits, '-', '.') or IP address, without scheme, user, port or path, got %s", errtext.Quote(host))
	}
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		// A name never ends in a number, and ipmitool's resolver reads such a host as an
		// IPv4 address its own way: 10.1.5 as 10.1.0.5, 010.0.0.1 as octal 8.0.0.1.
		return fmt.Sprintf("%s is no IP address, and a host name does not end in a number", errtext.Quote(host))
	}
	return ""
}

// isDNSName reports whether s is a host name: dot-separated labels of 1 to 63 ASCII letters,
// digits, '-' and '_', none starting or ending with '-', 253 bytes at most.
func isDNSName(s string) bool {
	if len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(strings.TrimSuffix(s, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return false
			}
		}
	}
	return true
}

// Address returns host:port with the protocol's default port when none is set (an IPv6
// host in brackets).
func (e Endpoint) Address() string {
	port := e.Port
	if port == 0 {
		port = 443
		if e.Protocol == ProtocolIPMI {
			port = 623
		}
	}
	return net.JoinHostPort(e.Host, strconv.Itoa(port))
}

// maxPasswordFile bounds what Password reads of a password file.
const maxPasswordFile = 4096

// Password reads the endpoint's password from its file or environment variable. lookupEnv is
// os.LookupEnv in production. A file every user may read or write is refused, as the API's
// token files are (internal/secretfile). Errors name the source, never the value.
func (e Endpoint) Password(lookupEnv func(string) (string, bool)) (Secret, error) {
	switch {
	case e.PasswordFile != "":
		b, err := secretfile.Read("password_file", e.PasswordFile, maxPasswordFile)
		if err != nil {
			return "", err
		}
		s := strings.TrimSpace(string(b))
		if s == "" {
			return "", fmt.Errorf("password_file %s is empty", e.PasswordFile)
		}
		return Secret(s), nil
	case e.PasswordEnv != "":
		v, ok := lookupEnv(e.PasswordEnv)
		if !ok || v == "" {
			return "", fmt.Errorf("password_env: environment variable %s is not set", e.PasswordEnv)
		}
		return Secret(v), nil
	}
	return "", fmt.Errorf("password_file or password_env: required")
}

// Secret is a password or token. It prints, and marshals to JSON and YAML, as "<redacted>";
// only Reveal gives the value.
type Secret string

const redacted = "<redacted>"

// Reveal returns the secret's value, for the one call that sends it to the BMC.
func (s Secret) Reveal() string { return string(s) }

// String redacts the value (also for %v and %s).
func (s Secret) String() string { return redacted }

// GoString redacts the value for %#v.
func (s Secret) GoString() string { return redacted }

// MarshalJSON redacts the value.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(redacted) }

// MarshalYAML redacts the value.
func (s Secret) MarshalYAML() (any, error) { return redacted, nil }

// MarshalText redacts the value (encoders that use encoding.TextMarshaler, logfmt).
func (s Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }
