package gateway

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/kit/suite/certs"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

func TestMainRefusesAConfigurationItCannotServeSafely(t *testing.T) {
	t.Parallel()
	p := testkit.NewPKI(t)
	host := p.Leaf(t, "laptop", "host")
	mailbox := p.Leaf(t, "mailbox", "service")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"dev mode on a public address", []string{"--dev", "--listen", "0.0.0.0:0"}, `dev mode refuses to listen on "0.0.0.0:0"`},
		{"neither dev mode nor TLS", nil, certs.ErrNoTLS.Error()},
		{"dev mode with TLS files", []string{"--dev", "--tls-ca", host.CA}, "--dev and --tls-* are exclusive"},
		{"a certificate that is not a service's", []string{"--tls-ca", host.CA, "--tls-cert", host.Cert, "--tls-key", host.Key, "--listen", "127.0.0.1:0"},
			`names "laptop" with grade host: the gateway acts on behalf of others, which the suite admits only from a service certificate named "gateway" (CN=gateway, OU=service)`},
		{"a service certificate of another name", []string{"--tls-ca", mailbox.CA, "--tls-cert", mailbox.Cert, "--tls-key", mailbox.Key, "--listen", "127.0.0.1:0"},
			`names "mailbox" with grade service: the gateway acts on behalf of others, which the suite admits only from a service certificate named "gateway" (CN=gateway, OU=service)`},
		{"a bad log level", []string{"--dev", "--log-level", "loud"}, `log level "loud"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stderr bytes.Buffer
			err := Main(context.Background(), tc.args, &stderr)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Main(%q) = %v, want an error containing %q", tc.args, err, tc.want)
			}
		})
	}
}

func TestMainServesUntilItsContextEnds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &logWatch{want: "gateway listening", seen: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- Main(ctx, []string{"--dev", "--listen", "127.0.0.1:0"}, stderr) }()
	testkit.Receive(t, stderr.seen, 10*time.Second, "the gateway to log where it listens")
	cancel()
	if err := testkit.Receive(t, done, 10*time.Second, "Main to return"); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Main: %v", err)
	}
}

// logWatch keeps what is logged and closes seen once want appears.
type logWatch struct {
	mu   sync.Mutex
	b    bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.b.Write(p)
	if strings.Contains(w.b.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return n, err
}
