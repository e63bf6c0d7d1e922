// Package badinput sends every kind of bad input of docs/bad-input.md to
// the embedded suite (real gRPC and HTTP listeners, a real tool host) and
// checks the answer and that the suite stays healthy.
package badinput

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/switchboard-run/switchboard/cli/dev"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

// suite is `switchboard dev` in process, with a tool host serving
// badTools as the client "box".
type suite struct {
	grpcAddr, httpBase string
	conn               *grpc.ClientConn // carries the run's secret
	secret             string
	reg                registryv1.RegistryServiceClient
	mb                 mailboxv1.MailboxServiceClient
}

const badTools = `[
 {"name":"echo","description":"","input_schema":{"type":"object"},"command":["cat"]},
 {"name":"flood","description":"","input_schema":{"type":"object"},"command":["head","-c","209715200","/dev/zero"]},
 {"name":"binary","description":"","input_schema":{"type":"object"},"command":["printf","ok\\377\\376!"]}
]`

func newSuite(t *testing.T) *suite {
	t.Helper()
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools.json")
	if err := os.WriteFile(tools, []byte(badTools), 0o644); err != nil {
		t.Fatal(err)
	}
	grpcAddr, httpAddr := procs.RunDev(t, dev.Options{DataDir: filepath.Join(dir, "data"), ToolsFile: tools, ToolsClient: "box", Log: logging.Discard(),
		Mailbox: mailbox.Bounds{TTL: time.Hour, MaxQueued: 1000, MaxSlots: 10_000, MaxCaptureBytes: 4 << 20}})
	secret := testkit.DevSecret(t, filepath.Join(dir, "data"))
	conn := testkit.DialDev(t, grpcAddr, secret)
	s := &suite{grpcAddr: grpcAddr, httpBase: "http://" + httpAddr, conn: conn, secret: secret,
		reg: registryv1.NewRegistryServiceClient(conn), mb: mailboxv1.NewMailboxServiceClient(conn)}
	testkit.Await(t, "the tool host to connect", 20*time.Second, func() error {
		res, err := s.reg.GetClient(testkit.As("op", identity.Admin), &registryv1.GetClientRequest{Client: "box"})
		if err == nil && !res.GetRow().GetPresent() {
			err = errors.New("box is not present")
		}
		return err
	})
	return s
}

// act posts body to /v1/act as who ("" for no identity header).
func (s *suite) act(t *testing.T, who, body string) (int, string) {
	t.Helper()
	h := http.Header{}
	if who != "" {
		h.Set("Switchboard-Identity", who)
	}
	return s.send(t, http.MethodPost, "/v1/act", h, body)
}

// send makes one request of the gateway with the headers h and the run's
// secret.
func (s *suite) send(t *testing.T, method, path string, h http.Header, body string) (int, string) {
	t.Helper()
	h = h.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Switchboard-Dev-Secret", s.secret)
	return testkit.Request(t, method, s.httpBase+path, h, body)
}

// healthy checks that the suite still answers: health, and a real call.
func (s *suite) healthy(t *testing.T) {
	t.Helper()
	res, err := testkit.HTTP.Get(s.httpBase + "/healthz")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("/healthz after the bad input: %v %v", res, err)
	}
	res.Body.Close()
	ctx, cancel := context.WithTimeout(testkit.As("driver", identity.Driver), 10*time.Second)
	defer cancel()
	c, err := s.mb.Call(ctx, &mailboxv1.CallRequest{Client: "box", Tool: "echo", Input: `{"still":"here"}`})
	if err != nil || c.GetCapture().GetStdout() != `{"still":"here"}` {
		t.Fatalf("a normal call after the bad input: %v %v", c, err)
	}
}
