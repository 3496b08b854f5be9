package deploy

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rotahq/rota/internal/testutil"
)

var lintianTag = regexp.MustCompile(`(?m)^([EWIPXO]): ([a-z0-9.+-]+)(?: [a-z]+)?: ([a-z0-9-]+)(.*)$`)

// TestPackagesLintian: lintian finds no error in either .deb, and every warning it gives is
// named, with why it stays, in docs/install.md.
func TestPackagesLintian(t *testing.T) {
	t.Parallel()
	lintian := testutil.Tool(t, "lintian")
	exporter, rota := debs(t)
	// lintian exits 0 without errors (warnings allowed), 1 with errors (--fail-on error), and
	// otherwise when it could not check.
	out, err := exec.Command(lintian, "--fail-on", "error", "--tag-display-limit", "0", exporter, rota).CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		t.Fatalf("lintian: %v\n%s", err, out)
	}
	tags := lintianTag.FindAllStringSubmatch(string(out), -1)
	doc, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	var warnings []string
	for _, m := range tags {
		switch m[1] {
		case "E":
			t.Errorf("lintian error: %s: %s%s", m[2], m[3], m[4])
		case "W":
			warnings = append(warnings, m[2]+": "+m[3]+m[4])
			if !strings.Contains(string(doc), "`"+m[3]+"`") {
				t.Errorf("lintian warning %s (%s) is not explained in docs/install.md", m[3], m[2])
			}
		}
	}
	if err != nil && !slices.ContainsFunc(tags, func(m []string) bool { return m[1] == "E" }) {
		t.Errorf("lintian failed on errors this test could not read:\n%s", out)
	}
	t.Logf("lintian warnings (explained in docs/install.md):\n%s", strings.Join(warnings, "\n"))
}

// TestMaintainerScripts runs the exporter package's postinst, prerm and postrm as dpkg would, in
// a private mount namespace whose /run shows systemd running (or not), with systemctl,
// deb-systemd-invoke and deb-systemd-helper replaced by programs that record their arguments.
// A fresh install starts nothing; an upgrade restarts a running service (try-restart, as
// Debian's prometheus-node-exporter does); removal stops it; nothing is asked of systemd where it
// does not run. The exporter's copy has no trace of rota's user handling, rota's has it.
func TestMaintainerScripts(t *testing.T) {
	t.Parallel()
	requireRoot(t)
	unshare := testutil.Tool(t, "unshare")
	dpkgDeb := testutil.Tool(t, "dpkg-deb")
	exporter, rota := debs(t)
	ctl, rotaCtl := t.TempDir(), t.TempDir()
	mustRun(t, nil, dpkgDeb, "-e", exporter, ctl)
	mustRun(t, nil, dpkgDeb, "-e", rota, rotaCtl)
	for dir, want := range map[string]bool{ctl: false, rotaCtl: true} {
		b, err := os.ReadFile(filepath.Join(dir, "postinst"))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(b), "adduser"); got != want {
			t.Errorf("%s postinst creates the user: %v, want %v", filepath.Base(dir), got, want)
		}
	}

	fakes := t.TempDir()
	calls := filepath.Join(fakes, "calls")
	for _, name := range []string{"systemctl", "deb-systemd-invoke", "deb-systemd-helper"} {
		if err := os.WriteFile(filepath.Join(fakes, name), []byte("#!/bin/sh\necho \""+name+" $*\" >>"+calls+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const unit = "rota-exporter.service"
	for _, tt := range []struct {
		name    string
		systemd bool
		args    []string
		want    []string
	}{
		{"fresh install", true, []string{"postinst", "configure"},
			[]string{"deb-systemd-helper update-state " + unit, "systemctl --system daemon-reload"}},
		{"upgrade", true, []string{"postinst", "configure", "0.9.0-1"},
			[]string{"deb-systemd-helper update-state " + unit, "systemctl --system daemon-reload", "deb-systemd-invoke try-restart " + unit}},
		{"upgrade without systemd", false, []string{"postinst", "configure", "0.9.0-1"},
			[]string{"deb-systemd-helper update-state " + unit}},
		{"failed upgrade rolled back", true, []string{"postinst", "abort-upgrade", "1.0.0-1"},
			[]string{"systemctl --system daemon-reload", "deb-systemd-invoke try-restart " + unit}},
		{"old prerm on upgrade", true, []string{"prerm", "upgrade", "1.0.0-1"}, nil},
		{"remove", true, []string{"prerm", "remove"}, []string{"deb-systemd-invoke stop " + unit}},
		{"remove without systemd", false, []string{"prerm", "remove"}, nil},
		{"postrm remove", true, []string{"postrm", "remove"}, []string{"systemctl --system daemon-reload"}},
		{"purge", true, []string{"postrm", "purge"},
			[]string{"deb-systemd-helper purge " + unit, "systemctl --system daemon-reload"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(calls)
			// Only the namespace's /run changes: an empty tmpfs, with /run/systemd/system when
			// systemd is to look as if it runs.
			systemd := ""
			if tt.systemd {
				systemd = " && mkdir -p /run/systemd/system"
			}
			script := filepath.Join(ctl, tt.args[0])
			cmd := exec.Command(unshare, append([]string{"--mount", "--propagation", "private", "sh", "-c",
				`mount -t tmpfs tmpfs /run` + systemd + ` && exec "$@"`, "sh", script}, tt.args[1:]...)...)
			cmd.Env = append(os.Environ(), "PATH="+fakes+":"+os.Getenv("PATH"), "DPKG_MAINTSCRIPT_PACKAGE=rota-exporter")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s %v: %v\n%s", tt.args[0], tt.args[1:], err, out)
			}
			b, err := os.ReadFile(calls)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			var got []string
			if len(b) > 0 {
				got = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("%s %v asked systemd:\n  %q\nwant\n  %q", tt.args[0], tt.args[1:], got, tt.want)
			}
		})
	}
}
