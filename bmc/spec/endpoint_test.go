package spec

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestEndpointValidate(t *testing.T) {
	ok := Endpoint{Protocol: ProtocolRedfish, Host: "10.0.0.5", Username: "admin", PasswordFile: "/etc/rota/pw"}
	tests := []struct {
		name string
		edit func(*Endpoint)
		want []string
	}{
		{"valid redfish", func(*Endpoint) {}, nil},
		{"valid ipmi", func(e *Endpoint) { e.Protocol, e.CipherSuite, e.Port = ProtocolIPMI, 17, 623 }, nil},
		{"everything missing", func(e *Endpoint) { *e = Endpoint{} }, []string{"protocol: required (ipmi or redfish)", "host: required", "username: required", "password_file: required, or password_env"}},
		{"unknown protocol", func(e *Endpoint) { e.Protocol = "snmp" }, []string{`protocol: unknown protocol "snmp" (want ipmi or redfish)`}},
		{"host with scheme", func(e *Endpoint) { e.Host = "https://bmc" }, []string{`host: want a host name (letters, digits, '-', '.') or IP address, without scheme, user, port or path, got "https://bmc"`}},
		{"host with a port", func(e *Endpoint) { e.Host = "bmc:99999" }, []string{`host: "bmc:99999" has a port: give the host alone, and the port in port`}},
		{"host with a user", func(e *Endpoint) { e.Host = "admin@bmc" }, []string{`host: want a host name (letters, digits, '-', '.') or IP address, without scheme, user, port or path, got "admin@bmc"`}},
		{"host as an option", func(e *Endpoint) { e.Host = "-oProxyCommand=x" }, []string{`host: want a host name (letters, digits, '-', '.') or IP address, without scheme, user, port or path, got "-oProxyCommand=x"`}},
		{"host not ASCII", func(e *Endpoint) { e.Host = "bmç.example" }, []string{`host: want a host name (letters, digits, '-', '.') or IP address, without scheme, user, port or path, got "bmç.example"`}},
		{"host with empty label", func(e *Endpoint) { e.Host = "bmc..example" }, []string{`host: want a host name (letters, digits, '-', '.') or IP address, without scheme, user, port or path, got "bmc..example"`}},
		{"host a name", func(e *Endpoint) { e.Host = "gpu01-bmc.example.internal" }, nil},
		{"host a rooted name", func(e *Endpoint) { e.Host = "gpu01-bmc.example.internal." }, nil},
		{"host a name of digits and letters", func(e *Endpoint) { e.Host = "10.0.0.5x" }, nil},
		{"host an IPv4 address cut short", func(e *Endpoint) { e.Host = "10.1.5" }, []string{`host: "10.1.5" is no IP address, and a host name does not end in a number`}},
		{"host an IPv4 address with a zero-padded octet", func(e *Endpoint) { e.Host = "010.0.0.1" }, []string{`host: "010.0.0.1" is no IP address, and a host name does not end in a number`}},
		{"host an IPv4 address out of range", func(e *Endpoint) { e.Host = "10.0.0.256" }, []string{`host: "10.0.0.256" is no IP address, and a host name does not end in a number`}},
		{"host a number", func(e *Endpoint) { e.Host = "167772165" }, []string{`host: "167772165" is no IP address, and a host name does not end in a number`}},
		{"host an IPv6 address", func(e *Endpoint) { e.Host = "fd00::5" }, nil},
		{"host an IPv6 address with a zone", func(e *Endpoint) { e.Protocol, e.Host = ProtocolRedfish, "fe80::1%eth0" }, []string{`host: "fe80::1%eth0" has an IPv6 zone (%eth0), which a Redfish URL cannot carry: give a routable address of the BMC`}},
		{"host an IPv6 address with a zone, over IPMI", func(e *Endpoint) { e.Protocol, e.Host = ProtocolIPMI, "fe80::1%eth0" }, nil},
		{"port out of range", func(e *Endpoint) { e.Port = 70000 }, []string{"port: out of range 1-65535: 70000"}},
		{"two password sources", func(e *Endpoint) { e.PasswordEnv = "PW" }, []string{"password_env: set only one of password_file and password_env"}},
		{"tls options on ipmi", func(e *Endpoint) { e.Protocol, e.CAFile, e.SystemName = ProtocolIPMI, "ca.pem", "s" }, []string{"ca_file: only for protocol redfish", "system_name: only for protocol redfish"}},
		{"ca and skip verify", func(e *Endpoint) { e.CAFile, e.InsecureSkipVerify = "ca.pem", true }, []string{"insecure_skip_verify: set only one of ca_file and insecure_skip_verify"}},
		{"cipher suite on redfish", func(e *Endpoint) { e.CipherSuite = 3 }, []string{"cipher_suite: only for protocol ipmi"}},
		{"cipher suite out of range", func(e *Endpoint) { e.Protocol, e.CipherSuite = ProtocolIPMI, 18 }, []string{"cipher_suite: out of range 0-17: 18"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := ok
			tt.edit(&e)
			var got []string
			for _, err := range e.Validate() {
				got = append(got, err.Error())
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("Validate() = %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestEndpointYAML(t *testing.T) {
	in := `
protocol: ipmi
host: 10.1.2.3
port: 9623
username: admin
password_env: BMC_PW
cipher_suite: 3
`
	var e Endpoint
	dec := yaml.NewDecoder(strings.NewReader(in))
	dec.KnownFields(true)
	if err := dec.Decode(&e); err != nil {
		t.Fatal(err)
	}
	want := Endpoint{Protocol: ProtocolIPMI, Host: "10.1.2.3", Port: 9623, Username: "admin", PasswordEnv: "BMC_PW", CipherSuite: 3}
	if e != want {
		t.Fatalf("decoded %+v, want %+v", e, want)
	}
	if errs := e.Validate(); errs != nil {
		t.Fatal(errs)
	}
	if e.Address() != "10.1.2.3:9623" {
		t.Errorf("Address() = %s", e.Address())
	}
	if e.Host = "fd00::5"; e.Address() != "[fd00::5]:9623" {
		t.Errorf("Address() of an IPv6 host = %s, want [fd00::5]:9623", e.Address())
	}
}

func TestEndpointPassword(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pw")
	if err := os.WriteFile(file, []byte("  hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// A password every user may read (or replace) is refused, as the API's token files are:
	// it was used.
	open := filepath.Join(dir, "open")
	if err := os.WriteFile(open, []byte("hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	writable := filepath.Join(dir, "writable")
	if err := os.WriteFile(writable, []byte("hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(writable, 0o602); err != nil {
		t.Fatal(err)
	}
	env := func(k string) (string, bool) { v, ok := map[string]string{"PW": "hunter2"}[k]; return v, ok }
	tests := []struct {
		name    string
		ep      Endpoint
		want    string
		wantErr string
	}{
		{"file, trimmed", Endpoint{PasswordFile: file}, "hunter2", ""},
		{"env", Endpoint{PasswordEnv: "PW"}, "hunter2", ""},
		{"env unset", Endpoint{PasswordEnv: "NOPE"}, "", "password_env: environment variable NOPE is not set"},
		{"empty file", Endpoint{PasswordFile: empty}, "", "is empty"},
		{"missing file", Endpoint{PasswordFile: filepath.Join(dir, "missing")}, "", "reading password_file"},
		{"file every user reads", Endpoint{PasswordFile: open}, "", "password_file " + open + " is open to every user (mode 0644): chmod o-rw " + open},
		{"file every user writes", Endpoint{PasswordFile: writable}, "", "is open to every user (mode 0602)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.ep.Password(env)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got.Reveal() != tt.want {
				t.Fatalf("Password() = %q, %v", got.Reveal(), err)
			}
		})
	}
}

func TestSecretRedacted(t *testing.T) {
	s := Secret("hunter2")
	holder := struct {
		Password Secret `json:"password" yaml:"password"`
	}{s}
	j, _ := json.Marshal(holder)
	y, _ := yaml.Marshal(holder)
	for name, out := range map[string]string{
		"%v": fmt.Sprintf("%v", s), "%s": fmt.Sprintf("password=%s", s), "%+v": fmt.Sprintf("%+v", holder),
		"%#v": fmt.Sprintf("%#v", s), "json": string(j), "yaml": string(y), "String": s.String(),
	} {
		if strings.Contains(out, "hunter2") || !strings.Contains(out, "redacted") {
			t.Errorf("%s: %q", name, out)
		}
	}
}
