package flagname

import (
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
)

// TestRefusalsNameTheFlag: each kind of value kingpin refuses, on the application and on a
// command's command, from the command line or the environment, says which flag it was; values
// it takes, booleans and repeatable flags work as before.
func TestRefusalsNameTheFlag(t *testing.T) {
	newApp := func() *kingpin.Application {
		app := kingpin.New("t", "")
		app.Flag("count", "").Default("1").Int()
		app.Flag("level", "").Default("info").Enum("info", "debug")
		app.Flag("wait", "").Default("1s").Envar("FLAGNAME_TEST_WAIT").Duration()
		app.Flag("on", "").Bool()
		app.Flag("name", "").Strings()
		sub := app.Command("store", "").Command("migrate", "")
		sub.Flag("to", "").Enum("etcd", "bbolt")
		Wrap(app)
		return app
	}
	cases := []struct {
		name string
		env  string
		args []string
		says string // "" when it parses
	}{
		{name: "int", args: []string{"--count=x"}, says: `--count: "x" is not a whole number`},
		// kingpin reads an int as a float and truncates: 1.5 was 1, silently.
		{name: "int with a fraction", args: []string{"--count=1.5", "store", "migrate"}, says: `--count: "1.5" is not a whole number`},
		{name: "int in float notation", args: []string{"--count=1e3", "store", "migrate"}, says: `--count: "1e3" is not a whole number`},
		{name: "negative int", args: []string{"--count=-2", "store", "migrate"}},
		{name: "enum", args: []string{"--level=trace"}, says: "--level: enum value must be one of info,debug, got 'trace'"},
		{name: "duration", args: []string{"--wait=3"}, says: "--wait: time: missing unit"},
		{name: "duration from the environment", env: "soon", says: "--wait: "},
		{name: "subcommand's enum", args: []string{"store", "migrate", "--to=mysql"}, says: "--to: "},
		{name: "good values", args: []string{"--count=3", "--level=debug", "--wait=2s", "--on", "--name=a", "--name=b", "store", "migrate"}},
		{name: "subcommand's good value", args: []string{"store", "migrate", "--to=etcd"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("FLAGNAME_TEST_WAIT", tc.env)
			_, err := newApp().Parse(tc.args)
			switch {
			case tc.says == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.says != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.says)):
				t.Fatalf("error %v, want one starting %q", err, tc.says)
			}
		})
	}
}

// TestValuesStillLand: the wrapped flags fill the same variables.
func TestValuesStillLand(t *testing.T) {
	app := kingpin.New("t", "")
	n := app.Flag("count", "").Int()
	d := app.Flag("wait", "").Duration()
	names := app.Flag("name", "").Strings()
	Wrap(app)
	if _, err := app.Parse([]string{"--count=3", "--wait=2s", "--name=a", "--name=b"}); err != nil {
		t.Fatal(err)
	}
	if *n != 3 || *d != 2*time.Second || strings.Join(*names, ",") != "a,b" {
		t.Errorf("got %d, %s, %v", *n, *d, *names)
	}
}

// TestHelpUnchanged: the help reads as without Wrap (kingpin quotes a string flag's default by
// its value's type; the wrapped value kept the quotes off).
func TestHelpUnchanged(t *testing.T) {
	help := func(wrap bool) string {
		var b strings.Builder
		app := kingpin.New("t", "")
		app.UsageWriter(&b)
		app.Flag("config.file", "").Default("/etc/rota/rota.yml").String()
		app.Flag("empty", "").Default("").String()
		app.Flag("count", "").Default("1").Int()
		app.Flag("level", "").Default("info").Enum("info", "debug")
		app.Flag("wait", "").Duration()
		app.Command("store", "").Flag("to", "").Default("etcd").String()
		if wrap {
			Wrap(app)
		}
		app.UsageTemplate(kingpin.LongHelpTemplate)
		app.Usage(nil)
		return b.String()
	}
	if got, want := help(true), help(false); got != want {
		t.Errorf("help with Wrap:\n%s\nwithout:\n%s", got, want)
	}
}
