package testutil

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// These tests keep a clone standing alone: every program a test runs is installed by
// scripts/tools.sh (or built from cmd/), and no file reads the folder beside the repository.

// toolsScript is what scripts/tools.sh declares: its Debian packages and the binaries of its Go
// builds.
type toolsScript struct {
	apt      []string
	goBuilt  []string
	goBuilds []string // one line per go install
	// k8sBuilt are the control plane's programs, built in k8s.io/kubernetes's module folder.
	k8sBuilt []string
}

var (
	aptLine     = regexp.MustCompile(`(?m)^apt_pkgs=\(([^)]*)\)`)
	goBuildLine = regexp.MustCompile(`(?m)^  "([a-z,-]+) (v\S+) (\S+) ([^"]+)"$`)
	// modBuildLine is a tool built from the module's own go.mod: the binary and the package.
	modBuildLine = regexp.MustCompile(`(?m)^  "([a-z-]+) ([a-z0-9./-]+)"$`)
	// k8sLine lists the control plane's programs, built from k8s.io/kubernetes.
	k8sLine = regexp.MustCompile(`(?m)^k8s_tools=\(([^)]*)\)`)
)

func readToolsScript(t *testing.T) toolsScript {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(RepoRoot(t), "scripts", "tools.sh"))
	if err != nil {
		t.Fatal(err)
	}
	var ts toolsScript
	m := aptLine.FindSubmatch(b)
	if m == nil {
		t.Fatal("scripts/tools.sh: no apt_pkgs=(...) line")
	}
	ts.apt = strings.Fields(string(m[1]))
	for _, m := range goBuildLine.FindAllSubmatch(b, -1) {
		ts.goBuilt = append(ts.goBuilt, strings.Split(string(m[1]), ",")...)
		ts.goBuilds = append(ts.goBuilds, string(m[0]))
	}
	for _, m := range modBuildLine.FindAllSubmatch(b, -1) {
		ts.goBuilt = append(ts.goBuilt, string(m[1]))
		ts.goBuilds = append(ts.goBuilds, string(m[0]))
	}
	if m := k8sLine.FindSubmatch(b); m != nil {
		ts.k8sBuilt = strings.Fields(string(m[1]))
		ts.goBuilt = append(ts.goBuilt, ts.k8sBuilt...)
	}
	if len(ts.apt) == 0 || len(ts.goBuilt) == 0 || len(ts.k8sBuilt) == 0 {
		t.Fatalf("scripts/tools.sh: apt packages %v, Go tools %v", ts.apt, ts.goBuilt)
	}
	return ts
}

// programUse matches the ways rota's Go code names a program it runs: testutil.Tool, Start and
// StartEnv, exec.LookPath, exec.Command(Context) with a literal, and the lab's look.
var programUse = regexp.MustCompile(`(?:\bTool\(\w+, |\bStart\(\w+, |\bStartEnv\(\w+, \w+, |exec\.LookPath\(|exec\.Command\(|exec\.CommandContext\(\w+, |\blook\()"([^"/ ]+)"`)

// programsNamed returns each program the repository's Go files run, with a file that names it.
func programsNamed(t *testing.T, root string) map[string]string {
	t.Helper()
	found := map[string]string{}
	err := walkRepo(root, func(rel string, b []byte) {
		if !strings.HasSuffix(rel, ".go") {
			return
		}
		for _, m := range programUse.FindAllSubmatch(b, -1) {
			if _, ok := found[string(m[1])]; !ok {
				found[string(m[1])] = rel
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// walkRepo calls fn with every regular file of the repository, skipping VCS, tools and build
// output folders (the ones .gitignore names) and binary files.
func walkRepo(root string, fn func(rel string, b []byte)) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || slices.Contains([]string{"bin", "dist"}, rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.Contains(b, []byte{0}) {
			fn(rel, b)
		}
		return nil
	})
}

// TestToolsInstallsWhatTestsNeed: every program the Go code runs is built from cmd/, built by
// tools.sh, comes with Go, or belongs to a Debian package tools.sh installs (or one of theirs
// depends on, or an essential one). A program installed by hand on the developer's machine, or
// from a package tools.sh does not name, fails here before it fails a fresh clone.
func TestToolsInstallsWhatTestsNeed(t *testing.T) {
	root := RepoRoot(t)
	ts := readToolsScript(t)
	ours, err := os.ReadDir(filepath.Join(root, "cmd"))
	if err != nil {
		t.Fatal(err)
	}
	known := append(slices.Clone(ts.goBuilt), "go", "gofmt")
	for _, e := range ours {
		known = append(known, e.Name())
	}
	dpkgQuery, err := exec.LookPath("dpkg-query")
	if err != nil {
		Missing(t, "dpkg-query", "a Debian machine")
	}
	provided := debianClosure(t, dpkgQuery, ts.apt)

	named := programsNamed(t, root)
	if len(named) < 5 {
		t.Fatalf("found only %v: the pattern no longer matches how programs are named", named)
	}
	// cgo (go-nvml) needs Go's C compiler on every build.
	cc, err := exec.Command("go", "env", "CC").Output()
	if err != nil {
		t.Fatal(err)
	}
	named[strings.Fields(string(cc))[0]] = "cgo (go env CC)"
	t.Logf("programs run: %v", slices.Sorted(maps.Keys(named)))
	for _, prog := range slices.Sorted(maps.Keys(named)) {
		if slices.Contains(known, prog) {
			continue
		}
		path := lookProgram(prog)
		if path == "" {
			Missing(t, prog+" (run by "+named[prog]+")", "make tools")
			continue
		}
		pkg := owningPackage(path)
		switch {
		case pkg == "":
			t.Errorf("%s (run by %s) is %s, which no Debian package owns and tools.sh does not build: installed by hand?", prog, named[prog], path)
		case !provided[pkg] && !essential(dpkgQuery, pkg):
			t.Errorf("%s (run by %s) comes from the Debian package %s, which scripts/tools.sh does not install (add it to apt_pkgs)", prog, named[prog], pkg)
		}
	}
}

// lookProgram finds a program in PATH, then in the sbin folders a non-root PATH may lack.
func lookProgram(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range []string{"/usr/sbin", "/sbin"} {
		if fi, err := os.Stat(filepath.Join(d, name)); err == nil && fi.Mode()&0o111 != 0 {
			return filepath.Join(d, name)
		}
	}
	return ""
}

// owningPackage is the Debian package that installed a file (following links, and the /bin ->
// /usr/bin merge), or "" for none.
func owningPackage(path string) string {
	candidates := []string{path}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		candidates = append(candidates, real)
	}
	for _, p := range slices.Clone(candidates) {
		if rest, ok := strings.CutPrefix(p, "/usr"); ok {
			candidates = append(candidates, rest)
		} else {
			candidates = append(candidates, "/usr"+p)
		}
	}
	for _, p := range candidates {
		out, err := exec.Command("dpkg-query", "-S", p).Output()
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(out), "\n") {
			if pkg, _, ok := strings.Cut(line, ": "); ok && !strings.HasPrefix(line, "diversion by ") {
				return strings.TrimSpace(strings.Split(pkg, ",")[0])
			}
		}
	}
	return ""
}

// debianClosure is the set of the packages named and everything they depend on, as installed.
func debianClosure(t *testing.T, dpkgQuery string, pkgs []string) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	queue := slices.Clone(pkgs)
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		out, err := exec.Command(dpkgQuery, "-W", "-f", "${Pre-Depends}, ${Depends}", p).Output()
		if err != nil {
			continue // not installed here: its programs are not found either
		}
		for _, dep := range strings.Split(string(out), ",") {
			for _, alt := range strings.Split(dep, "|") {
				name, _, _ := strings.Cut(strings.TrimSpace(alt), " ")
				name, _, _ = strings.Cut(name, ":")
				if name != "" && !seen[name] {
					queue = append(queue, name)
				}
			}
		}
	}
	return seen
}

// essential reports whether every Debian system has the package (Essential, or priority
// required).
func essential(dpkgQuery, pkg string) bool {
	out, err := exec.Command(dpkgQuery, "-W", "-f", "${Essential} ${Priority}", pkg).Output()
	return err == nil && (strings.HasPrefix(string(out), "yes") || strings.HasSuffix(string(out), "required"))
}

// TestNothingReadsBesideTheRepository: no file of the repository (code, scripts, configs, docs)
// names the shared folder the project was developed beside; what tests and commands need is in
// the repository (testdata/traces, bmc/redfishemu/mockup).
func TestNothingReadsBesideTheRepository(t *testing.T) {
	root := RepoRoot(t)
	// Built from parts, so this file does not match itself.
	forbidden := []string{".." + "/shared", `"..", "` + `shared"`, "/work" + "/shared"}
	var found []string
	err := walkRepo(root, func(rel string, b []byte) {
		for i, line := range strings.Split(string(b), "\n") {
			for _, f := range forbidden {
				if strings.Contains(line, f) {
					found = append(found, fmt.Sprintf("%s:%d: %s", rel, i+1, strings.TrimSpace(line)))
				}
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Errorf("these read outside the repository, which a clone does not have; bring the data in:\n%s", strings.Join(found, "\n"))
	}
}

// TestToolsScriptBuildsOncePerModule runs scripts/tools.sh (a copy, in a scratch tree) with a
// go that only records what it is asked and dpkg-query reporting every package installed: one
// go install per module, with its tags and flags, and the Kubernetes control plane in one go
// build from k8s.io/kubernetes's module folder (its staging replaces turned into requires);
// a second run builds nothing; a stamp written with other build flags rebuilds that module's
// tools, and only those.
func TestToolsScriptBuildsOncePerModule(t *testing.T) {
	ts := readToolsScript(t)
	tree := t.TempDir()
	if err := os.MkdirAll(filepath.Join(tree, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(RepoRoot(t), "scripts", "tools.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "scripts", "tools.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	fakes := t.TempDir()
	log := filepath.Join(fakes, "go.log")
	writeScript(t, filepath.Join(fakes, "dpkg-query"), "echo 'install ok installed'\n")
	// The fake go answers list with a version; it logs the arguments of each other call, one
	// per line, then a blank line, and makes each package's binary in GOBIN (go install), at
	// build's -o, or in the -o folder (a -o ending in /). go mod download answers a module
	// folder whose go.mod replaces two modules with staging folders; go mod edit records the
	// edits in the go.mod it is given.
	mod := filepath.Join(fakes, "module")
	writeScript(t, filepath.Join(fakes, "go"), `[ "$1" = list ] && { echo v0.0.0-test; exit 0; }
printf '%s\n' "$@" >>`+log+`; echo >>`+log+`
case "$1 $2" in
"mod download")
  mkdir -p `+mod+`
  printf 'module k8s.io/kubernetes\nreplace (\n\tk8s.io/api => ./staging/src/k8s.io/api\n\tk8s.io/client-go => ./staging/src/k8s.io/client-go\n)\n' >`+mod+`/go.mod
  : >`+mod+`/go.sum
  printf '{\n\t"Path": "k8s.io/kubernetes",\n\t"Dir": "%s",\n\t"GoMod": "x"\n}\n' `+mod+`
  exit 0;;
"mod edit") for a in "$@"; do last=$a; done; printf '%s\n' "$@" >>"$last"; exit 0;;
esac
out=
prev=
for a in "$@"; do
  case "$a" in *@*) p=${a%@*}; : >"$GOBIN/${p##*/}"; chmod +x "$GOBIN/${p##*/}";; esac
  [ "$prev" = -o ] && out=$a
  case "$out" in
  */) case "$a" in ./*) n=${a##*/}; : >"$out$n"; chmod +x "$out$n";; esac;;
  ?*) [ "$prev" = -o ] && { : >"$out"; chmod +x "$out"; };;
  esac
  prev=$a
done
`)
	// run returns the go invocations, each its arguments joined by newlines.
	run := func() []string {
		t.Helper()
		os.Remove(log)
		cmd := exec.Command("bash", filepath.Join(tree, "scripts", "tools.sh"))
		cmd.Env = append(os.Environ(), "PATH="+fakes+":"+os.Getenv("PATH"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("tools.sh: %v\n%s", err, out)
		}
		b, err := os.ReadFile(log)
		if os.IsNotExist(err) {
			return nil
		}
		return strings.Split(strings.TrimSuffix(string(b), "\n\n"), "\n\n")
	}

	// The control plane takes three: mod download, mod edit, build.
	first := run()
	if len(first) != len(ts.goBuilds)+3 {
		t.Fatalf("%d go invocations for %d builds and the control plane:\n%s", len(first), len(ts.goBuilds), strings.Join(first, "\n--\n"))
	}
	k8sBuild := first[len(first)-1]
	for _, want := range []string{"build", "-trimpath", "-tags=providerless", "./cmd/kube-apiserver", "./cmd/kube-scheduler", "./cmd/kube-controller-manager"} {
		if !slices.Contains(strings.Split(k8sBuild, "\n"), want) {
			t.Errorf("the control plane's go build lacks %s:\n%s", want, k8sBuild)
		}
	}
	if edit := first[len(first)-2]; !strings.Contains(edit, "-dropreplace=k8s.io/client-go\n-require=k8s.io/client-go@v0.") {
		t.Errorf("the staging replaces are not turned into requires:\n%s", edit)
	}
	wantProm := []string{"install", "-tags=remove_all_sd", "-ldflags=-s -w",
		"github.com/prometheus/prometheus/cmd/prometheus@v0.316.0", "github.com/prometheus/prometheus/cmd/promtool@v0.316.0"}
	if !slices.Contains(first, strings.Join(wantProm, "\n")) {
		t.Errorf("no single go install of prometheus and promtool with %v:\n%s", wantProm, strings.Join(first, "\n--\n"))
	}
	bin := filepath.Join(tree, ".tools", "bin")
	for _, name := range ts.goBuilt {
		if fi, err := os.Stat(filepath.Join(bin, name)); err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("%s not built (%v)", name, err)
		}
		stamp, _ := os.ReadFile(filepath.Join(bin, "."+name+".version"))
		if !strings.Contains(string(stamp), "ldflags=-s -w") {
			t.Errorf("%s: stamp %q does not hold the build flags", name, stamp)
		}
	}

	if again := run(); len(again) != 0 {
		t.Errorf("second run built again:\n%s", strings.Join(again, "\n--\n"))
	}

	// A stamp from before the flags were part of it: that module alone is built again.
	if err := os.WriteFile(filepath.Join(bin, ".promtool.version"), []byte("v0.316.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if rebuilt := run(); len(rebuilt) != 1 || rebuilt[0] != strings.Join(wantProm, "\n") {
		t.Errorf("after a stale promtool stamp, rebuilt:\n%s", strings.Join(rebuilt, "\n--\n"))
	}
	// A stale stamp on one program of the control plane: that build alone, again.
	if err := os.WriteFile(filepath.Join(bin, ".kube-scheduler.version"), []byte("v1.36.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if rebuilt := run(); len(rebuilt) != 3 || !strings.HasPrefix(rebuilt[2], "build\n") || !strings.Contains(rebuilt[2], "./cmd/kube-scheduler") {
		t.Errorf("after a stale kube-scheduler stamp, rebuilt:\n%s", strings.Join(rebuilt, "\n--\n"))
	}
}

func writeScript(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
}
