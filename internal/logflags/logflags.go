// Package logflags is the --log.level and --log.format flags every rota binary takes, in the
// Prometheus ecosystem's names, and the logrus logger they configure.
package logflags

import (
	"io"

	"github.com/alecthomas/kingpin/v2"
	"github.com/sirupsen/logrus"
)

// Config holds the parsed flags.
type Config struct {
	Level  string
	Format string
}

// flagger is a kingpin application or command: anything flags can be added to.
type flagger interface {
	Flag(name, help string) *kingpin.FlagClause
}

// Add registers --log.level (default defaultLevel) and --log.format on app or a command.
func Add(app flagger, c *Config, defaultLevel string) {
	app.Flag("log.level", "Only log messages with the given severity or above: debug, info, warn, error.").
		Default(defaultLevel).EnumVar(&c.Level, "debug", "info", "warn", "error")
	app.Flag("log.format", "Output format of log messages: logfmt or json.").
		Default("logfmt").EnumVar(&c.Format, "logfmt", "json")
}

// New returns a logger writing to w at the configured level and format. The enum flags let
// only valid names through; an unset Config logs at info in logfmt.
func (c Config) New(w io.Writer) *logrus.Logger {
	l := logrus.New()
	l.SetOutput(w)
	lvl, err := logrus.ParseLevel(c.Level)
	if err != nil {
		lvl = logrus.InfoLevel
	}
	l.SetLevel(lvl)
	if c.Format == "json" {
		l.SetFormatter(&logrus.JSONFormatter{})
	} else {
		l.SetFormatter(&logrus.TextFormatter{DisableColors: true, FullTimestamp: true})
	}
	return l
}
