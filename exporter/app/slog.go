package app

import (
	"context"
	"log/slog"

	"github.com/sirupsen/logrus"
)

// slogFor gives exporter-toolkit, which logs through log/slog, the command's logrus logger, so
// every line has one format and one level setting.
func slogFor(log *logrus.Entry) *slog.Logger {
	return slog.New(&slogHandler{log: log})
}

type slogHandler struct {
	log *logrus.Entry
}

func (h *slogHandler) Enabled(_ context.Context, l slog.Level) bool {
	return h.log.Logger.IsLevelEnabled(logrusLevel(l))
}

func (h *slogHandler) Handle(_ context.Context, r slog.Record) error {
	fields := logrus.Fields{}
	r.Attrs(func(a slog.Attr) bool {
		fields[a.Key] = a.Value.Any()
		return true
	})
	h.log.WithFields(fields).Log(logrusLevel(r.Level), r.Message)
	return nil
}

func (h *slogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	fields := logrus.Fields{}
	for _, a := range attrs {
		fields[a.Key] = a.Value.Any()
	}
	return &slogHandler{log: h.log.WithFields(fields)}
}

// WithGroup is flattened: exporter-toolkit does not use groups.
func (h *slogHandler) WithGroup(string) slog.Handler { return h }

func logrusLevel(l slog.Level) logrus.Level {
	switch {
	case l >= slog.LevelError:
		return logrus.ErrorLevel
	case l >= slog.LevelWarn:
		return logrus.WarnLevel
	case l >= slog.LevelInfo:
		return logrus.InfoLevel
	default:
		return logrus.DebugLevel
	}
}
