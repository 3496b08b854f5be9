package spec

import "strings"

// State is a server's power state as rota understands it.
type State string

// The normalised power states. Unknown means rota could not tell (unreachable BMC, an answer
// it cannot parse): no power command is ever sent in that state.
const (
	StateUnknown       State = "unknown"
	StateOn            State = "on"
	StateOff           State = "off"
	StateTransitioning State = "transitioning"
)

// ParseState normalises what a BMC answered to a State. It accepts ipmitool's
// "Chassis Power is on\n" and Redfish's PowerState values (On, Off, PoweringOn, PoweringOff),
// in any case and with surrounding whitespace. Anything else, Redfish's Paused included, is
// Unknown: rota acts only on a state it is sure of.
func ParseState(raw string) State {
	s := strings.ToLower(strings.TrimSpace(raw))
	s = strings.TrimPrefix(s, "chassis power is ")
	switch s {
	case "on":
		return StateOn
	case "off":
		return StateOff
	case "poweringon", "poweringoff":
		return StateTransitioning
	}
	return StateUnknown
}
