package bmc

import "github.com/rotahq/rota/bmc/spec"

// The endpoint and state types live in bmc/spec, which links no BMC library; they are
// re-exported here so callers of bmc need only one import.
type (
	// Endpoint is how to reach one server's BMC (see spec.Endpoint).
	Endpoint = spec.Endpoint
	// Protocol is ipmi or redfish.
	Protocol = spec.Protocol
	// FieldError is a problem with one field of an Endpoint.
	FieldError = spec.FieldError
	// Secret is a password that prints as "<redacted>".
	Secret = spec.Secret
	// State is a server's normalised power state.
	State = spec.State
)

// The protocols, the default IPMI cipher suite and the power states (see package spec).
const (
	ProtocolIPMI        = spec.ProtocolIPMI
	ProtocolRedfish     = spec.ProtocolRedfish
	DefaultCipherSuite  = spec.DefaultCipherSuite
	FallbackCipherSuite = spec.FallbackCipherSuite

	StateUnknown       = spec.StateUnknown
	StateOn            = spec.StateOn
	StateOff           = spec.StateOff
	StateTransitioning = spec.StateTransitioning
)

// ParseState normalises what a BMC answered (see spec.ParseState).
func ParseState(raw string) State { return spec.ParseState(raw) }
