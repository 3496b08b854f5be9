package ipmisim

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// User is one IPMI user of the BMC.
type User struct {
	// ID is the user's slot (1 is the anonymous user when Name is "").
	ID             int
	Name, Password string
	// Privilege is the most the user may do: "user", "operator" or "admin".
	Privilege string
}

// BMC is one ipmi_sim's files, all in Dir.
type BMC struct {
	Dir string
	// Name is the BMC's name in lan.conf.
	Name string
	// Port is the UDP port ipmi_sim listens on, on Addr.
	Port int
	// Addr is the address it listens on (default 127.0.0.1; ::1 for IPv6).
	Addr  string
	Users []User
	// Chassis is the chassis_control program, a shell script: ipmi_sim runs it as
	// `SCRIPT 0x20 get power` (it answers power:0 or power:1) and `SCRIPT 0x20 set power 0|1`
	// (and `set shutdown 1` for a soft off).
	Chassis string
}

// Write creates Dir and its state folder and writes the chassis script, lan.conf and the
// emulator's command file. It overwrites what an earlier Write left.
func (b BMC) Write() error {
	if err := os.MkdirAll(filepath.Join(b.Dir, "state"), 0o755); err != nil {
		return err
	}
	files := []struct {
		path    string
		mode    os.FileMode
		content string
	}{
		{b.script(), 0o700, b.Chassis},
		// lan.conf holds the users' passwords.
		{b.lanConf(), 0o600, b.lan()},
		{b.emu(), 0o600, emu},
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, []byte(f.content), f.mode); err != nil {
			return fmt.Errorf("writing ipmi_sim's %s: %w", filepath.Base(f.path), err)
		}
	}
	return nil
}

// Args are ipmi_sim's arguments for this BMC: its lan.conf, command file and state folder,
// with no console on standard input.
func (b BMC) Args() []string {
	return []string{"-c", b.lanConf(), "-f", b.emu(), "-s", filepath.Join(b.Dir, "state"), "-n"}
}

func (b BMC) script() string  { return filepath.Join(b.Dir, "chassis") }
func (b BMC) lanConf() string { return filepath.Join(b.Dir, "lan.conf") }
func (b BMC) emu() string     { return filepath.Join(b.Dir, "bmc.emu") }

// lan is lan.conf: one LAN channel on Addr accepting every authentication type, the chassis
// script, and the users.
func (b BMC) lan() string {
	addr := b.Addr
	if addr == "" {
		addr = "127.0.0.1"
	}
	var s strings.Builder
	fmt.Fprintf(&s, `name "%s"
set_working_mc 0x20
  startlan 1
    addr %s %d
    priv_limit admin
    allowed_auths_admin none md2 md5 straight
    allowed_auths_operator none md2 md5 straight
    allowed_auths_user none md2 md5 straight
    allowed_auths_callback none md2 md5 straight
    guid a123456789abcdefa123456789abcdef
  endlan
  chassis_control "%s 0x20"
`, b.Name, addr, b.Port, b.script())
	for _, u := range b.Users {
		fmt.Fprintf(&s, "  user %d true \"%s\" \"%s\" %s 10 none md2 md5 straight\n", u.ID, u.Name, u.Password, u.Privilege)
	}
	return s.String()
}

// emu is the emulator's command file: one BMC at address 0x20 with no sensors.
const emu = "mc_setbmc 0x20\nmc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr\nmc_enable 0x20\n"
