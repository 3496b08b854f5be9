// Package flagname makes a refused flag value name its flag, for every kingpin command line of
// rota's binaries: kingpin's own values say only what was wrong with the value
// (`strconv.ParseFloat: parsing "x": invalid syntax` for --web.max-connections=x, `enum value must
// be one of table,json, got 'yaml'` for --output=yaml, `time: invalid duration "x"`), so a user
// who gave several flags could not tell which one was refused.
package flagname

import (
	"fmt"
	"strconv"

	"github.com/alecthomas/kingpin/v2"

	"github.com/rotahq/rota/internal/errtext"
)

// Wrap makes every flag of app and of its commands, at any depth, prefix a refusal of its value
// with `--<name>: `, whether the value came from the command line, an environment variable or a
// default. Call it once every flag is declared, before Parse. Boolean and repeatable flags stay as
// they are: kingpin treats them by their type, and their values refuse nothing.
func Wrap(app *kingpin.Application) {
	wrapFlags(app.Model().Flags, app.GetFlag)
	for _, c := range app.Model().Commands {
		wrapCommand(app.GetCommand(c.Name), c)
	}
}

func wrapCommand(cmd *kingpin.CmdClause, m *kingpin.CmdModel) {
	wrapFlags(m.Flags, cmd.GetFlag)
	for _, sub := range m.Commands {
		wrapCommand(cmd.GetCommand(sub.Name), sub)
	}
}

// cumulative is kingpin's test of a repeatable flag.
type cumulative interface{ IsCumulative() bool }

func wrapFlags(flags []*kingpin.FlagModel, get func(string) *kingpin.FlagClause) {
	for _, f := range flags {
		if _, done := f.Value.(*named); done || f.IsBoolFlag() {
			continue
		}
		if c, ok := f.Value.(cumulative); ok && c.IsCumulative() {
			continue
		}
		// The help shows a flag's default by its value's type (a string's quoted): kept as it was.
		get(f.Name).PlaceHolder(f.FormatPlaceHolder()).SetValue(&named{name: f.Name, Value: f.Value})
	}
}

// named is a flag's value whose refusals name the flag.
type named struct {
	name string
	kingpin.Value
}

func (n *named) Set(s string) error {
	err := wholeNumber(n.Value, s)
	if err == nil {
		err = n.Value.Set(s)
	}
	if err != nil {
		return fmt.Errorf("--%s: %w", n.name, err)
	}
	return nil
}

// wholeNumber refuses, for a flag of an integer type, a value that is no whole number: kingpin
// reads integers with strconv.ParseFloat and truncates, so --web.max-connections=1.5 was 1 and
// --gpus-per-node=2.9 was 2, silently.
func wholeNumber(v kingpin.Value, s string) error {
	g, ok := v.(kingpin.Getter)
	if !ok {
		return nil
	}
	switch g.Get().(type) {
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		_, ierr := strconv.ParseInt(s, 10, 64)
		_, uerr := strconv.ParseUint(s, 10, 64) // above int64's range
		if ierr != nil && uerr != nil {
			return fmt.Errorf("%s is not a whole number", errtext.Quote(s))
		}
	}
	return nil
}

// Unwrap is the flag's own value, for code that tells flags apart by their value's type.
func (n *named) Unwrap() kingpin.Value { return n.Value }
