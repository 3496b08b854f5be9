package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/rotahq/rota/internal/errtext"
	"github.com/rotahq/rota/scaler/config"
)

// durationFlag is a duration flag that refuses values that mean nothing for it: a negative one
// always, zero unless allowed. A refused value is a usage error (exit 2) naming the flag
// (flagname.Wrap), as kingpin reports any bad flag; it used to run (rotactl power --timeout=-5s
// sent commands with an already expired deadline).
type durationFlag struct {
	d             *time.Duration
	allowZero     bool
	allowNegative bool
}

// positiveDuration makes fc a duration flag stored in d that must be above zero.
func positiveDuration(fc *kingpin.FlagClause, d *time.Duration) {
	fc.SetValue(&durationFlag{d: d})
}

// nonNegativeDuration is positiveDuration for a flag where zero means something (its help says
// what).
func nonNegativeDuration(fc *kingpin.FlagClause, d *time.Duration) {
	fc.SetValue(&durationFlag{d: d, allowZero: true})
}

// signedDuration is a duration flag where any sign means something (its help says what): it
// only refuses a value that is no duration.
func signedDuration(fc *kingpin.FlagClause, d *time.Duration) {
	fc.SetValue(&durationFlag{d: d, allowZero: true, allowNegative: true})
}

func (f *durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return fmt.Errorf("%s is not a duration (e.g. 30s, 5m, 1h30m)", errtext.Quote(s))
	case d < 0 && !f.allowNegative:
		return fmt.Errorf("%s is negative: give %s", s, f.wanted())
	case d == 0 && !f.allowZero:
		return fmt.Errorf("%s means nothing here: give %s", s, f.wanted())
	}
	*f.d = d
	return nil
}

// wanted says what values the flag takes, for a refusal.
func (f *durationFlag) wanted() string {
	if f.allowZero {
		return "zero or a duration above it"
	}
	return "a duration above zero"
}

func (f *durationFlag) String() string { return f.d.String() }

// countFlag is an integer flag that must be above zero, left at 0 when not given (the
// default its help names): a refused value is a usage error naming the flag, as a
// durationFlag's. `simulate --gpus-per-node=0` was taken for the config's size, unsaid, and a
// negative count failed only after the config was read, exit 1.
type countFlag struct{ n *int }

// positiveCount makes fc a count flag stored in n.
func positiveCount(fc *kingpin.FlagClause, n *int) {
	fc.SetValue(&countFlag{n: n})
}

func (f *countFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return fmt.Errorf("%s is out of range", errtext.Quote(s))
	case err != nil:
		return fmt.Errorf("%s is not a whole number", errtext.Quote(s))
	case n < 0:
		return fmt.Errorf("%d is negative: give a count above zero", n)
	case n == 0:
		return errors.New("0 means nothing here: give a count above zero")
	}
	*f.n = n
	return nil
}

func (f *countFlag) String() string { return strconv.Itoa(*f.n) }

// checkedFlag is a string flag checked as it is parsed (a URL, a fleet spec): a value check
// refuses is a usage error (exit 2) naming the flag (flagname.Wrap), as kingpin reports any bad
// flag; a URL used to fail only when the call was made (exit 1, `"127.0.0.1:10091" is not an
// http(s) URL`, no flag named), and `simulate --fleet=x` after reading the whole trace.
type checkedFlag struct {
	s     *string
	check func(string) error
}

// checkedValue makes fc a string flag stored in s, refused when check says why.
func checkedValue(fc *kingpin.FlagClause, s *string, check func(string) error) {
	fc.SetValue(&checkedFlag{s: s, check: check})
}

func (f *checkedFlag) Set(v string) error {
	if err := f.check(v); err != nil {
		return err
	}
	*f.s = v
	return nil
}

func (f *checkedFlag) String() string { return *f.s }

// httpURL refuses a value that is no http(s) URL with a host, as the config's prometheus.url.
func httpURL(v string) error {
	_, err := config.HTTPURL(v)
	return err
}

// joinNegativeValues writes "--watch-delay -1s" as "--watch-delay=-1s" for every flag where a
// negative duration means something (signedDuration): kingpin takes an argument that starts with
// "-" for a flag, so the value a flag's help offers failed with "expected argument for flag
// '--watch-delay'". A following argument that is no duration is left as it is, and so is
// everything after "--".
func joinNegativeValues(app *kingpin.Application, args []string) []string {
	signed := map[string]bool{}
	model := app.Model()
	flags := model.Flags
	for _, c := range model.FlattenedCommands() {
		flags = append(flags, c.Flags...)
	}
	for _, f := range flags {
		v := f.Value
		if w, ok := v.(interface{ Unwrap() kingpin.Value }); ok {
			v = w.Unwrap() // flagname.Wrap's
		}
		if d, ok := v.(*durationFlag); ok && d.allowNegative {
			signed["--"+f.Name] = true
		}
	}
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		if args[i] == "--" {
			return append(out, args[i:]...)
		}
		if signed[args[i]] && i+1 < len(args) && strings.HasPrefix(args[i+1], "-") {
			if _, err := time.ParseDuration(args[i+1]); err == nil {
				out = append(out, args[i]+"="+args[i+1])
				i++
				continue
			}
		}
		out = append(out, args[i])
	}
	return out
}
