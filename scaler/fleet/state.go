package fleet

// State is where a server is in rota's lifecycle:
//
//	On --drain--> Draining --empty--> PoweringOff --BMC confirms off--> Off
//	Off --power on--> PoweringOn --BMC confirms on--> Booting --ready--> On
//	any step past its timeout --> Failed (power left as is, alert raised, retried after backoff)
//
// Unknown is a server whose power state could not be read; rota never powers it on or off.
// Pinned and maintenance servers are never touched, whatever their state (see Node).
type State string

// The lifecycle states.
const (
	StateOn          State = "on"
	StateDraining    State = "draining"
	StatePoweringOff State = "powering_off"
	StateOff         State = "off"
	StatePoweringOn  State = "powering_on"
	StateBooting     State = "booting"
	StateFailed      State = "failed"
	StateUnknown     State = "unknown"
)

// States lists every state, for metrics that export one series per state.
var States = []State{StateOn, StateDraining, StatePoweringOff, StateOff, StatePoweringOn, StateBooting, StateFailed, StateUnknown}

// Powered reports whether a server in this state draws power and costs money (for accounting,
// a server in transition counts as on).
func (s State) Powered() bool {
	switch s {
	case StateOff, StateUnknown:
		return false
	}
	return true
}

// InFlight reports whether an action is under way for a server in this state.
func (s State) InFlight() bool {
	switch s {
	case StateDraining, StatePoweringOff, StatePoweringOn, StateBooting:
		return true
	}
	return false
}
