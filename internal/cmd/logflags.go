package cmd

import (
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"
)

type logFlags struct {
	format string
	level  string
}

func (l *logFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&l.format, "log-format", "text", "log format: text or json")
	fs.StringVar(&l.level, "log-level", "info", "log level: debug, info, warn or error")
}

func (l *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(strings.ToLower(l.level))); err != nil {
		return nil, usagef("--log-level must be debug, info, warn or error, not %q", l.level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(l.format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usagef("--log-format must be text or json, not %q", l.format)
}
