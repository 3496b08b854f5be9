package doccmd

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"

	"github.com/rotahq/rota/internal/testutil"
)

// Check holds every command line of program that README.md and docs/ show to the binary: a
// mention to its flags and subcommands (Known, when model is not nil), a command line, each of
// its Variants, to parse, which must parse it as the binary does (ParseArgs on a fresh app, or
// the binary's own parse). It fails t with every command that does not, and when the docs show
// program nowhere (the check would hold nothing).
func Check(t testing.TB, program string, model *kingpin.ApplicationModel, parse func(args []string) error) {
	t.Helper()
	cmds, err := Read(testutil.RepoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	mine := Of(cmds, program)
	if len(mine) == 0 {
		t.Fatalf("the docs show no %s command", program)
	}
	for _, c := range mine {
		for _, args := range Variants(c.Args()) {
			if c.Mention && model != nil {
				err = Known(model, args)
			} else {
				err = parse(args)
			}
			if err != nil {
				t.Errorf("%s\n\t%s %s: %v", c, program, strings.Join(args, " "), err)
			}
		}
	}
}

// ParseArgs parses args as the binary would, values, enums and required flags and arguments
// included, and runs none of its commands: app's commands are looked up, not called (only
// kingpin actions run, which set flags). It prints nothing and never exits.
func ParseArgs(app *kingpin.Application, args []string) error {
	app.Terminate(func(int) {})
	app.UsageWriter(io.Discard)
	app.ErrorWriter(io.Discard)
	_, err := app.Parse(args)
	return err
}

// Known checks a mention of a command: its subcommands exist and every flag it names belongs
// to the command chosen or one above it. Arguments and values are not checked (a mention may
// leave them out).
func Known(app *kingpin.ApplicationModel, args []string) error {
	flags := slices.Clone(app.Flags)
	commands := app.Commands
	where := app.Name
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return nil
		case strings.HasPrefix(a, "--"):
			name, _, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			f := flagNamed(flags, name)
			if f == nil {
				return fmt.Errorf("%s has no flag --%s", where, name)
			}
			if !f.IsBoolFlag() && !hasValue {
				i++ // the value is the next word
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			f := flagShort(flags, rune(a[1]))
			if f == nil {
				return fmt.Errorf("%s has no flag -%c", where, a[1])
			}
			if !f.IsBoolFlag() && len(a) == 2 {
				i++
			}
		case len(commands) > 0:
			c := commandNamed(commands, a)
			if c == nil {
				return fmt.Errorf("%s has no command %s", where, a)
			}
			flags = append(flags, c.Flags...)
			commands, where = c.Commands, app.Name+" "+c.FullCommand
		}
	}
	return nil
}

func flagNamed(flags []*kingpin.FlagModel, name string) *kingpin.FlagModel {
	for _, f := range flags {
		if f.Name == name {
			return f
		}
		if n, ok := strings.CutPrefix(name, "no-"); ok && f.Name == n && f.IsBoolFlag() {
			return f
		}
	}
	return nil
}

func flagShort(flags []*kingpin.FlagModel, short rune) *kingpin.FlagModel {
	for _, f := range flags {
		if f.Short == short {
			return f
		}
	}
	return nil
}

func commandNamed(commands []*kingpin.CmdModel, name string) *kingpin.CmdModel {
	for _, c := range commands {
		if c.Name == name || slices.Contains(c.Aliases, name) {
			return c
		}
	}
	return nil
}
