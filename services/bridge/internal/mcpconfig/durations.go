package mcpconfig

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/suite/contract"
)

// Bounds of the per-server durations: a call may run up to a day; a ping
// goes at most every hour and waits at most a minute.
const (
	MaxCallTimeout  = 24 * time.Hour
	MaxPingInterval = time.Hour
	MaxPingTimeout  = time.Minute
)

// checkDurations refuses a per-call deadline or a ping setting that is not
// a valid duration, is negative, or is past its bound. Absent or zero means
// the default.
func checkDurations(cfg *bridgev1.ServerConfig) error {
	for _, d := range []struct {
		name string
		v    *durationpb.Duration
		most time.Duration
	}{
		{"call_timeout", cfg.GetCallTimeout(), MaxCallTimeout},
		{"ping_interval", cfg.GetPingInterval(), MaxPingInterval},
		{"ping_timeout", cfg.GetPingTimeout(), MaxPingTimeout},
	} {
		if err := checkDuration(d.name, d.v, d.most); err != nil {
			return err
		}
	}
	if cfg.GetPlugin() != nil && (cfg.GetPingInterval() != nil || cfg.GetPingTimeout() != nil) {
		return fmt.Errorf("ping_interval and ping_timeout are for MCP servers; a plugin backend is not pinged")
	}
	if cfg.GetOpenapi() != nil && (cfg.GetPingInterval() != nil || cfg.GetPingTimeout() != nil) {
		return fmt.Errorf("ping_interval and ping_timeout are for MCP servers; an HTTP API is not pinged")
	}
	return nil
}

// durationKind is what a duration field of a file must be.
const durationKind = `a duration string such as "90s" or "10m"`

// fileDuration reads a duration field of a file: a Go duration string,
// as the flags take.
func fileDuration(key, s string) (*durationpb.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return nil, fmt.Errorf("field %q is %q, not %s", key, s, durationKind)
	}
	return durationpb.New(d), nil
}

func checkDuration(name string, v *durationpb.Duration, most time.Duration) error {
	if v == nil {
		return nil
	}
	if err := contract.ValidDuration(name, v); err != nil {
		return err
	}
	switch d := v.AsDuration(); {
	case d < 0:
		return fmt.Errorf("%s is %v; want 0 (the default) or more", name, d)
	case d > most:
		return fmt.Errorf("%s is %v; want at most %v", name, d, most)
	}
	return nil
}
