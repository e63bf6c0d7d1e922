package process

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
)

// service is the shape every service's Config takes.
type service struct {
	Listen string
	Flags
}

func (c *service) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:1", "")
	c.Flags.Register(fs)
}

func TestStartParsesEveryFlagOfTheConfig(t *testing.T) {
	t.Parallel()
	var cfg service
	p, err := Start("x", &cfg, []string{"--dev", "--listen", "127.0.0.1:2", "--log-format", "json"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if p.Log == nil || cfg.Listen != "127.0.0.1:2" || !cfg.Security.Dev || cfg.LogFormat != "json" || cfg.LogLevel != "info" {
		t.Fatalf("cfg = %+v", cfg)
	}
}

func TestStartRefusesWhatCannotRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"neither dev mode nor TLS", nil, "--dev"},
		{"an unknown log level", []string{"--dev", "--log-level", "loud"}, `log level "loud"`},
		{"a positional argument", []string{"--dev", "stray"}, `unexpected argument "stray"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var cfg service
			if _, err := Start("x", &cfg, tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to name %s", err, tc.want)
			}
		})
	}
	var cfg service
	if _, err := Start("x", &cfg, []string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v, want flag.ErrHelp", err)
	}
}

func TestSecurityNeedsAChoice(t *testing.T) {
	t.Parallel()
	var none Security
	if err := none.Check(); err == nil || !strings.Contains(err.Error(), "--dev") {
		t.Fatalf("neither dev nor TLS: %v", err)
	}
	both := Security{Dev: true}
	both.Files.CA = "ca.pem"
	if err := both.Check(); err == nil {
		t.Fatal("dev and TLS together were accepted")
	}
}

func TestDevModeLoadsNoTLS(t *testing.T) {
	t.Parallel()
	dev := Security{Dev: true}
	srv, err := dev.ServerTLS()
	if srv != nil || err != nil {
		t.Fatalf("ServerTLS in dev mode = %v, %v", srv, err)
	}
	cli, err := dev.ClientTLS()
	if cli != nil || err != nil {
		t.Fatalf("ClientTLS in dev mode = %v, %v", cli, err)
	}
}
