// Package logging builds the suite's log/slog loggers.
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// New returns a logger writing to w at the named level ("debug", "info",
// "warn", "error") in the named format ("text" or "json"). A record logged
// with a context that carries a span names its trace_id and span_id.
func New(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		return nil, fmt.Errorf("log level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text", "":
		return slog.New(traced{slog.NewTextHandler(w, opts)}), nil
	case "json":
		return slog.New(traced{slog.NewJSONHandler(w, opts)}), nil
	}
	return nil, fmt.Errorf("log format %q: want text or json", format)
}

// Discard is a logger that writes nothing, for tests and benchmarks.
func Discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
