package doccmd

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"

	"github.com/rotahq/rota/internal/testutil"
)

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		vars       map[string]string
		want       string
	}{
		{"pipe and comment", `curl -s localhost:10090/metrics | grep '^rota_'   # the series`, nil, `[curl -s localhost:10090/metrics] [grep ^rota_]`},
		{"and, or, semicolon", `mkdir -p /tmp/x && cd /tmp/x || true; ls`, nil, `[mkdir -p /tmp/x] [cd /tmp/x] [true] [ls]`},
		{"a synopsis keeps its bars", `rotactl slurm resume|suspend [--log.format=logfmt|json]`, nil, `[rotactl slurm resume|suspend [--log.format=logfmt|json]]`},
		{"redirections", `exec rotactl x "$@" 2>>/var/log/r.log >out < in`, nil, `[exec rotactl x ARG]`},
		{"here-string with a substitution", `install /dev/stdin /etc/rota/$t.token <<<"$(openssl rand -hex 32)"`, map[string]string{"t": "api"}, `[install /dev/stdin /etc/rota/api.token]`},
		{"a regular expression's $", `go test -run '^$' -bench Plan ./scaler/plan/`, nil, `[go test -run ^$ -bench Plan ./scaler/plan/]`},
		{"unknown variable", `$EDITOR /etc/rota/rota.yml`, nil, `[ARG /etc/rota/rota.yml]`},
		{"braces and double quotes", `x "${c}-a" "b c"`, map[string]string{"c": "01"}, `[x 01-a b c]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vars := tc.vars
			if vars == nil {
				vars = map[string]string{}
			}
			got, err := split(tc.line, vars)
			if err != nil {
				t.Fatal(err)
			}
			var parts []string
			for _, c := range got {
				parts = append(parts, fmt.Sprint(c))
			}
			if s := strings.Join(parts, " "); s != tc.want {
				t.Errorf("split = %s, want %s", s, tc.want)
			}
		})
	}
	if _, err := split(`echo "unclosed`, map[string]string{}); err == nil {
		t.Error("an unclosed quote split without an error")
	}
}

func TestParsePage(t *testing.T) {
	page := "# x\n\nRun `rotactl status --watch`, or `rota-lab` (`/usr/bin/rota` is a path).\n" +
		"| `rotactl maintenance NODE on\\|off` | x |\n\n```sh\nfor c in 01 02; do\n  bin/rotactl simulate \\\n    --trace t$c.csv\ndone\nmake build   # first\n```\n\n```yaml\nrota: no\n```\n"
	got, err := Parse("p.md", page)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, c := range got {
		lines = append(lines, fmt.Sprintf("%d %v %q", c.Line, c.Mention, c.Words))
	}
	want := []string{
		`3 true ["rotactl" "status" "--watch"]`,
		`3 true ["rota-lab"]`,
		`4 true ["rotactl" "maintenance" "NODE" "on|off"]`,
		`8 false ["bin/rotactl" "simulate" "--trace" "t01.csv"]`,
		`11 false ["make" "build"]`,
	}
	if !slices.Equal(lines, want) {
		t.Errorf("commands:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if _, err := Parse("p.md", "```sh\nmake\n"); err == nil {
		t.Error("an unclosed block read without an error")
	}
}

func TestVariants(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"power off [--hard] NODE...", "[power off --hard NODE] [power off NODE]"},
		{"status [-o table|json]", "[status -o table] [status -o json] [status]"},
		{"slurm resume|suspend HOSTLIST", "[slurm resume HOSTLIST] [slurm suspend HOSTLIST]"},
		{"--log.format=logfmt|json", "[--log.format=logfmt] [--log.format=json]"},
		{"validate --config.file=rota.yml", "[validate --config.file=rota.yml]"},
	} {
		if got := fmt.Sprint(Variants(strings.Fields(tc.in))); got != "["+tc.want+"]" {
			t.Errorf("Variants(%s) = %s, want [%s]", tc.in, got, tc.want)
		}
	}
}

func TestKnown(t *testing.T) {
	app := kingpin.New("x", "")
	app.Flag("log.level", "").String()
	power := app.Command("power", "")
	power.Flag("output", "").Short('o').String()
	off := power.Command("off", "")
	off.Flag("hard", "").Bool()
	off.Arg("node", "").Required().String()
	for _, tc := range []struct {
		args string
		ok   bool
	}{
		{"power off --hard", true},
		{"power off --no-hard n1 --log.level=debug", true},
		{"power -o json off", true},
		{"power", true},
		{"power of", false},
		{"power off --soft", false},
		{"power -x", false},
		{"off", false},
	} {
		err := Known(app.Model(), strings.Fields(tc.args))
		if (err == nil) != tc.ok {
			t.Errorf("Known(%s) = %v, want ok %v", tc.args, err, tc.ok)
		}
	}
	if err := ParseArgs(app, []string{"power", "off"}); err == nil {
		t.Error("a command without its required argument parsed")
	}
	if err := ParseArgs(app, []string{"power", "off", "--hard", "n1"}); err != nil {
		t.Errorf("power off --hard n1: %v", err)
	}
}

// docs reads every command of the repository's pages.
func docs(t *testing.T) (string, []Command) {
	t.Helper()
	root := testutil.RepoRoot(t)
	cmds, err := Read(root)
	if err != nil {
		t.Fatal(err)
	}
	return root, cmds
}

// TestMakeTargetsExist: every make target the docs name is in the Makefile.
func TestMakeTargetsExist(t *testing.T) {
	root, cmds := docs(t)
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-z][a-z0-9_-]*):`).FindAllStringSubmatch(string(b), -1) {
		targets[m[1]] = true
	}
	seen := 0
	for _, c := range Of(cmds, "make") {
		for _, target := range c.Args() {
			if strings.HasPrefix(target, "-") || strings.Contains(target, "=") {
				continue
			}
			seen++
			if !targets[target] {
				t.Errorf("%s: make has no target %s", c, target)
			}
		}
	}
	if seen == 0 {
		t.Fatal("the docs name no make target")
	}
}

// TestRepositoryPathsExist: every file or folder of the repository a command names is there
// (a glob must match something); bin/X is built from cmd/X.
func TestRepositoryPathsExist(t *testing.T) {
	root, cmds := docs(t)
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	tracked := map[string]bool{}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") && e.Name() != "bin" && e.Name() != "dist" {
			tracked[e.Name()] = true
		}
	}
	checked := 0
	for _, c := range cmds {
		for _, w := range c.Words {
			if _, v, ok := strings.Cut(w, "="); ok && strings.HasPrefix(w, "-") {
				w = v // --trace=testdata/...
			}
			p := strings.TrimPrefix(w, "./")
			first, _, _ := strings.Cut(p, "/")
			switch {
			case w == Placeholder || !strings.Contains(p, "/") && !strings.HasSuffix(p, ".md"):
				continue
			case first == "bin":
				p = "cmd/" + strings.TrimPrefix(p, "bin/")
			case !tracked[first]:
				continue
			}
			checked++
			matches, err := filepath.Glob(filepath.Join(root, strings.TrimSuffix(p, "/...")))
			if err != nil || len(matches) == 0 {
				t.Errorf("%s: %s is not in the repository", c, w)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no command names a path of the repository")
	}
}

// TestGoTestsExist: every go test line names packages that exist, and its -run and -bench
// patterns match a test, benchmark or fuzz target there (an empty match, '^$' or XXX, is the
// docs' way to run none).
func TestGoTestsExist(t *testing.T) {
	root, cmds := docs(t)
	funcs := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)\w*)\(`)
	seen := 0
	for _, c := range Of(cmds, "go") {
		args := c.Args()
		if len(args) == 0 || args[0] != "test" {
			continue
		}
		seen++
		var pkgs, patterns []string
		for i := 1; i < len(args); i++ {
			a := args[i]
			switch {
			case a == "-args":
				i = len(args)
			case a == "-run" || a == "-bench":
				if i+1 < len(args) {
					patterns = append(patterns, args[i+1])
				}
				i++
			case strings.HasPrefix(a, "-run=") || strings.HasPrefix(a, "-bench="):
				patterns = append(patterns, a[strings.Index(a, "=")+1:])
			case strings.HasPrefix(a, "./"):
				pkgs = append(pkgs, a)
			case strings.HasPrefix(a, "-") && !strings.Contains(a, "=") && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") && !strings.HasPrefix(args[i+1], "./"):
				i++ // -count 3, -benchtime 5x, -o file
			}
		}
		var names []string
		for _, p := range pkgs {
			dir := filepath.Join(root, strings.TrimSuffix(strings.TrimPrefix(p, "./"), "/..."))
			files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
			if len(files) == 0 && !strings.HasSuffix(p, "/...") {
				t.Errorf("%s: %s has no tests", c, p)
			}
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range funcs.FindAllStringSubmatch(string(b), -1) {
					names = append(names, m[1])
				}
			}
		}
		for _, pat := range patterns {
			if pat == "^$" || pat == "XXX" || pat == "." || strings.HasSuffix(strings.Join(pkgs, ""), "/...") {
				continue
			}
			re, err := regexp.Compile(pat)
			if err != nil {
				t.Errorf("%s: %s is not a pattern: %v", c, pat, err)
				continue
			}
			if !slices.ContainsFunc(names, re.MatchString) {
				t.Errorf("%s: %s matches no test, benchmark or fuzz target of %s", c, pat, strings.Join(pkgs, " "))
			}
		}
	}
	if seen == 0 {
		t.Fatal("the docs show no go test line")
	}
}

// TestLinksResolve: every link from one page to another file of the repository, or to a
// heading, lands on something that is there.
func TestLinksResolve(t *testing.T) {
	root := testutil.RepoRoot(t)
	pages, err := Pages(root)
	if err != nil {
		t.Fatal(err)
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, page := range pages {
		b, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target, anchor, _ := strings.Cut(m[1], "#")
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file := page
			if target != "" {
				file = filepath.ToSlash(filepath.Join(filepath.Dir(page), target))
			}
			body, err := os.ReadFile(filepath.Join(root, file))
			if err != nil {
				t.Errorf("%s: link to %s: no such file", page, m[1])
				continue
			}
			if anchor != "" && strings.HasSuffix(file, ".md") && !slices.Contains(anchors(string(body)), anchor) {
				t.Errorf("%s: link to %s: %s has no heading #%s", page, m[1], file, anchor)
			}
		}
	}
}

// anchors are the ids GitHub gives a page's headings.
func anchors(page string) []string {
	var out []string
	fence := false
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
		}
		if fence || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		var b strings.Builder
		for _, r := range h {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || 'a' <= r && r <= 'z' || '0' <= r && r <= '9':
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}

// TestPagesReadInOneSitting: the README stays short and every docs page can be read in one
// sitting; docs/benchmarks.md, a dated record read by section, is the one page that grows.
func TestPagesReadInOneSitting(t *testing.T) {
	root := testutil.RepoRoot(t)
	pages, err := Pages(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range pages {
		limit := 20_000
		switch page {
		case "README.md":
			limit = 15_000
		case "docs/benchmarks.md":
			continue
		}
		fi, err := os.Stat(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > int64(limit) {
			t.Errorf("%s is %d bytes, over %d: split it by topic (see the README's table of pages)", page, fi.Size(), limit)
		}
	}
}
