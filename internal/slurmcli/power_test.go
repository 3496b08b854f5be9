package slurmcli

import (
	"errors"
	"strings"
	"testing"

	"github.com/rotahq/rota/internal/slurmcli/slurmclitest"
)

func TestParsePowerSave(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		enabled   bool
		err       bool
	}{
		{"on", slurmclitest.PowerSaveOn, true, false},
		{"off", slurmclitest.PowerSaveOff, false, false},
		{"infinite", strings.Replace(slurmclitest.PowerSaveOn, "3600 sec", "INFINITE", 1), false, false},
		{"no programs", strings.Replace(slurmclitest.PowerSaveOn, "/usr/bin/rota-resume", "(null)", 1), false, false},
		{"missing keys", "Configuration data as of now\nClusterName = lab\n", false, true},
		{"bad excluded nodes", strings.Replace(slurmclitest.PowerSaveOn, "SuspendTime ", "SuspendExcNodes = n[1-\nSuspendTime ", 1), false, true},
		// Each hostlist of SuspendExcNodes is bounded by MaxHosts; so must their sum be, or a
		// short line expands to millions of names.
		{"excluded nodes past MaxHosts", strings.Replace(slurmclitest.PowerSaveOn, "SuspendTime ", "SuspendExcNodes = "+strings.Repeat("n[1-65536]:1,", 200)+"m1\nSuspendTime ", 1), false, true},
		{"recorded from the lab", string(slurmclitest.ReadRecorded(t, "show-config.txt")), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParsePowerSave([]byte(tc.out))
			if (err != nil) != tc.err {
				t.Fatalf("error %v", err)
			}
			if p.Enabled() != tc.enabled {
				t.Fatalf("%+v enabled %v, want %v", p, p.Enabled(), tc.enabled)
			}
		})
	}
}

func FuzzParsePowerSave(f *testing.F) {
	f.Add([]byte(slurmclitest.PowerSaveOn))
	f.Add([]byte(slurmclitest.PowerSaveOff))
	f.Add(slurmclitest.ReadRecorded(f, "show-config.txt"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePowerSave(b)
		if err != nil && !errors.Is(err, ErrUnexpected) {
			t.Fatalf("error %v is not ErrUnexpected", err)
		}
		if err == nil && p.Enabled() && (p.SuspendProgram == "" || p.ResumeProgram == "") {
			t.Fatalf("enabled without programs: %+v", p)
		}
	})
}
