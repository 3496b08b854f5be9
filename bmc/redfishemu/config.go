package redfishemu

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is the emulator's YAML file.
type Config struct {
	// ControlListen is the address of the control endpoint (plain HTTP; keep it on loopback).
	// Empty: no control endpoint.
	ControlListen string `yaml:"control_listen" json:"control_listen,omitempty"`
	// Hosts are extra DNS names or IPs the generated certificate is valid for (127.0.0.1,
	// ::1 and localhost always are).
	Hosts   []string       `yaml:"hosts" json:"hosts,omitempty"`
	Servers []ServerConfig `yaml:"servers" json:"servers"`
}

// ServerConfig is one emulated BMC.
type ServerConfig struct {
	Name string `yaml:"name" json:"name"`
	// Listen is host:port for this BMC's HTTPS listener (port 0: any free port).
	Listen   string `yaml:"listen" json:"listen"`
	Username string `yaml:"username" json:"username"`
	// Password is the emulated BMC's own account password (this is the BMC side, a test
	// fixture; rota itself reads passwords from files or the environment).
	Password Secret `yaml:"password" json:"password"`
	// Power is the initial state, On or Off (default Off).
	Power string `yaml:"power" json:"power,omitempty"`
	// TransitionDelay is how long PoweringOn/PoweringOff last.
	TransitionDelay Duration `yaml:"transition_delay" json:"transition_delay,omitempty"`
	// Seed makes the error_rate fault deterministic.
	Seed   uint64 `yaml:"seed" json:"seed,omitempty"`
	Faults Faults `yaml:"faults" json:"faults"`
	Hook   Hook   `yaml:"hook" json:"hook"`
	// PowerWatts is what the server draws, served as its chassis' power readings.
	PowerWatts PowerWatts `yaml:"power_watts" json:"power_watts"`
	// OtherSystems are more ComputerSystems this BMC serves beside the server's own, as a
	// blade enclosure's or a multi-node chassis' manager does: a client that does not pick
	// its system reaches them too.
	OtherSystems []SystemConfig `yaml:"other_systems" json:"other_systems,omitempty"`
	// ResetTypes is the system's ResetType@Redfish.AllowableValues, a subset of the mockup's
	// (On, ForceOff, GracefulShutdown, GracefulRestart, ForceRestart, Nmi, ForceOn,
	// PushPowerButton); a Reset of another type is answered 400. Empty: the mockup's.
	ResetTypes []string `yaml:"reset_types" json:"reset_types,omitempty"`
	// NoSessions serves no session service, as BMCs that offer basic auth alone do: the
	// service root links no Sessions collection and a login posted anyway is answered 405.
	NoSessions bool `yaml:"no_sessions" json:"no_sessions,omitempty"`
}

// SystemConfig is one of a BMC's other ComputerSystems: a copy of the mockup's system under
// its own Id and Name, listed in the Systems collection after the server's own. A Reset
// posted to it changes its power at once (no delay, no faults, no hook) and is counted in
// Stats.OtherResets.
type SystemConfig struct {
	// ID is its Id and the last segment of its URI (letters, digits, '.', '_', '-').
	ID string `yaml:"id" json:"id"`
	// Name is its Name (default: the ID). It may repeat another system's Name, the server's
	// own WebFrontEnd483 included, as the blades of one enclosure often share one.
	Name string `yaml:"name" json:"name,omitempty"`
	// Power is its initial state, On or Off (default Off).
	Power string `yaml:"power" json:"power,omitempty"`
}

// PowerWatts is an emulated server's power draw, served in the shape of the DMTF mockup's
// Chassis Power resource (PowerControl[0].PowerConsumedWatts) and EnvironmentMetrics
// (PowerWatts.Reading).
type PowerWatts struct {
	// On is the draw while on or changing state (default 344 W, the mockup's reading).
	On float64 `yaml:"on" json:"on,omitempty"`
	// Off is the standby draw while off (default 0).
	Off float64 `yaml:"off" json:"off,omitempty"`
	// None serves no reading (both resources answer 404): a BMC that offers none.
	None bool `yaml:"none" json:"none,omitempty"`
	// PowerOnly serves the deprecated Power resource alone (EnvironmentMetrics answers 404),
	// as BMCs before Redfish 2020.4 do.
	PowerOnly bool `yaml:"power_only" json:"power_only,omitempty"`
}

// DefaultOnWatts is the mockup's PowerConsumedWatts, the draw of an emulated server that is on.
const DefaultOnWatts = 344

// Faults are injected per server; the control endpoint replaces them at run time.
type Faults struct {
	// Latency delays every Redfish answer.
	Latency Duration `yaml:"latency" json:"latency,omitempty"`
	// ErrorRate is the fraction (0-1) of Redfish requests answered 503.
	ErrorRate float64 `yaml:"error_rate" json:"error_rate,omitempty"`
	// ConflictOnSameState answers 409 to a Reset asking for the state the system is in or
	// moving to.
	ConflictOnSameState bool `yaml:"conflict_on_same_state" json:"conflict_on_same_state,omitempty"`
	// DropPowerOn is how many of the next power-on requests are accepted (204) and ignored;
	// -1 drops them all.
	DropPowerOn int `yaml:"drop_power_on" json:"drop_power_on,omitempty"`
	// StuckTransition leaves a started transition in PoweringOn/PoweringOff for ever.
	StuckTransition bool `yaml:"stuck_transition" json:"stuck_transition,omitempty"`
	// IgnoreGracefulShutdown accepts GracefulShutdown and does nothing (an OS that hangs).
	IgnoreGracefulShutdown bool `yaml:"ignore_graceful_shutdown" json:"ignore_graceful_shutdown,omitempty"`
	// RejectCredentials answers 401 to every login and authenticated request.
	RejectCredentials bool `yaml:"reject_credentials" json:"reject_credentials,omitempty"`
	// RejectIfMatch answers 412 to every Reset that carries If-Match, whatever its value, as
	// BMCs that give actions no ETag semantics do (Lenovo XCC, some iDRAC firmware; gofish
	// issue 277). Without it a stale If-Match is answered 412 and a current one accepted.
	RejectIfMatch bool `yaml:"reject_if_match" json:"reject_if_match,omitempty"`
	// HideTransitions reports the old PowerState (On or Off) until a transition is done,
	// never PoweringOn or PoweringOff, as iDRAC reports a server that is still coming up.
	HideTransitions bool `yaml:"hide_transitions" json:"hide_transitions,omitempty"`
	// LoginStatus, when set (400-599), answers every session login with that status, as a
	// BMC that links a Sessions collection but takes no login there (404, 405) does.
	LoginStatus int `yaml:"login_status" json:"login_status,omitempty"`
}

// Hook runs on each completed power transition, with the new state (On or Off).
type Hook struct {
	// Command is run with ROTA_EMU_SERVER and ROTA_EMU_POWER in its environment.
	Command []string `yaml:"command" json:"command,omitempty"`
	// URL receives a POST with {"server": NAME, "power": "On"|"Off"}.
	URL string `yaml:"url" json:"url,omitempty"`
}

// Duration is a time.Duration written as "1.5s" in YAML and JSON.
type Duration time.Duration

// UnmarshalText parses a Go duration ("250ms", "2s").
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("negative duration %s", v)
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes the duration as "1.5s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// Secret is a password that prints and marshals as "<redacted>".
type Secret string

func (s Secret) String() string { return "<redacted>" }

// MarshalText redacts the value.
func (s Secret) MarshalText() ([]byte, error) { return []byte("<redacted>"), nil }

// UnmarshalText keeps the value (MarshalText alone would make decoders expect redacted text).
func (s *Secret) UnmarshalText(b []byte) error { *s = Secret(b); return nil }

// ParseConfig reads the emulator's YAML config, rejecting unknown fields, and reports every
// problem at once.
func ParseConfig(b []byte) (Config, error) {
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("parsing emulator config: %w", err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate checks the config; the error lists every problem.
func (c Config) Validate() error {
	var errs []error
	names := map[string]bool{}
	if len(c.Servers) == 0 {
		errs = append(errs, errors.New("servers: at least one is required"))
	}
	for i, s := range c.Servers {
		p := fmt.Sprintf("servers[%d]", i)
		if s.Name == "" {
			errs = append(errs, fmt.Errorf("%s.name: required", p))
		} else if names[s.Name] {
			errs = append(errs, fmt.Errorf("%s.name: duplicate %q", p, s.Name))
		}
		names[s.Name] = true
		if s.Listen == "" {
			errs = append(errs, fmt.Errorf("%s.listen: required", p))
		}
		if s.Username == "" || s.Password == "" {
			errs = append(errs, fmt.Errorf("%s.username, password: required", p))
		}
		if _, err := initialPower(s.Power); err != nil {
			errs = append(errs, fmt.Errorf("%s.power: %w", p, err))
		}
		if !(s.PowerWatts.On >= 0) || !(s.PowerWatts.Off >= 0) {
			errs = append(errs, fmt.Errorf("%s.power_watts: must not be negative", p))
		}
		if err := s.Faults.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s.faults.%w", p, err))
		}
		if len(s.Hook.Command) > 0 && s.Hook.URL != "" {
			errs = append(errs, fmt.Errorf("%s.hook: set command or url, not both", p))
		}
		if s.Hook.URL != "" && !strings.HasPrefix(s.Hook.URL, "http://") && !strings.HasPrefix(s.Hook.URL, "https://") {
			errs = append(errs, fmt.Errorf("%s.hook.url: want http:// or https://", p))
		}
		errs = append(errs, validateSystems(p, s.OtherSystems)...)
		for j, rt := range s.ResetTypes {
			if !mockupResets[rt] {
				errs = append(errs, fmt.Errorf("%s.reset_types[%d]: %q is not one of the mockup's ResetTypes", p, j, rt))
			}
		}
	}
	return errors.Join(errs...)
}

func validateSystems(p string, systems []SystemConfig) []error {
	var errs []error
	ids := map[string]bool{systemID: true}
	for i, sys := range systems {
		q := fmt.Sprintf("%s.other_systems[%d]", p, i)
		switch {
		case sys.ID == "" || strings.Trim(sys.ID, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "":
			errs = append(errs, fmt.Errorf("%s.id: want letters, digits, '.', '_' or '-', got %q", q, sys.ID))
		case ids[sys.ID]:
			errs = append(errs, fmt.Errorf("%s.id: duplicate %q (the server's own system is %s)", q, sys.ID, systemID))
		}
		ids[sys.ID] = true
		if _, err := initialPower(sys.Power); err != nil {
			errs = append(errs, fmt.Errorf("%s.power: %w", q, err))
		}
	}
	return errs
}

// Validate checks the fault values.
func (f Faults) Validate() error {
	if f.ErrorRate < 0 || f.ErrorRate > 1 || f.ErrorRate != f.ErrorRate {
		return fmt.Errorf("error_rate: want 0-1, got %v", f.ErrorRate)
	}
	if f.DropPowerOn < -1 {
		return fmt.Errorf("drop_power_on: want -1 (all) or a count, got %d", f.DropPowerOn)
	}
	if f.LoginStatus != 0 && (f.LoginStatus < 400 || f.LoginStatus > 599) {
		return fmt.Errorf("login_status: want 400-599, got %d", f.LoginStatus)
	}
	return nil
}

// ParseFaults reads faults as the control endpoint receives them (JSON, unknown fields
// rejected).
func ParseFaults(b []byte) (Faults, error) {
	var f Faults
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return Faults{}, fmt.Errorf("parsing faults: %w", err)
	}
	return f, f.Validate()
}

func initialPower(s string) (string, error) {
	switch strings.ToLower(s) {
	case "", "off":
		return powerOff, nil
	case "on":
		return powerOn, nil
	}
	return "", fmt.Errorf("want On or Off, got %q", s)
}
