package ipmisim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWrite: the files land in Dir with the modes that keep the password private, lan.conf
// names the port, the chassis script and every user, and Args point ipmi_sim at them.
func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bmc")
	b := BMC{Dir: dir, Name: "gpu01", Port: 6230, Chassis: "#!/bin/sh\necho power:1\n", Users: []User{
		{ID: 1, Name: "", Password: "test", Privilege: "user"},
		{ID: 2, Name: "admin", Password: "secret", Privilege: "admin"},
	}}
	if err := b.Write(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name string
		mode os.FileMode
		want []string
	}{
		{"chassis", 0o700, []string{b.Chassis}},
		{"lan.conf", 0o600, []string{`name "gpu01"`, "addr 127.0.0.1 6230", `chassis_control "` + filepath.Join(dir, "chassis") + ` 0x20"`,
			`user 1 true "" "test" user 10`, `user 2 true "admin" "secret" admin 10`}},
		{"bmc.emu", 0o600, []string{"mc_setbmc 0x20", "mc_enable 0x20"}},
	} {
		t.Run(f.name, func(t *testing.T) {
			path := filepath.Join(dir, f.name)
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != f.mode {
				t.Errorf("mode %v, want %v", st.Mode().Perm(), f.mode)
			}
			got, _ := os.ReadFile(path)
			for _, w := range f.want {
				if !strings.Contains(string(got), w) {
					t.Errorf("no %q in:\n%s", w, got)
				}
			}
		})
	}
	if st, err := os.Stat(filepath.Join(dir, "state")); err != nil || !st.IsDir() {
		t.Errorf("state folder: %v", err)
	}
	want := "-c " + filepath.Join(dir, "lan.conf") + " -f " + filepath.Join(dir, "bmc.emu") + " -s " + filepath.Join(dir, "state") + " -n"
	if got := strings.Join(b.Args(), " "); got != want {
		t.Errorf("Args %q, want %q", got, want)
	}
}
