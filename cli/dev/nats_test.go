package dev

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/suite/certs"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/natsconn"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// With --nats naming the suite's own NATS (mutual TLS, a user per service)
// and --nats-certs the directory `switchboard certs suite` writes, the
// registry, the mailbox and the bridge each connect as themselves, under
// their own subjects: a mounted server is advertised, routed and answers a
// call, and an invocation kept in the mailbox's store.
func TestDevOnTheSuitesNATSConnectsEachServiceAsItself(t *testing.T) {
	t.Parallel()
	pki := testkit.NewPKI(t)
	ns := testkit.NATSTLS(t, pki)
	dir := t.TempDir()
	for _, name := range []string{"registry", "mailbox", "bridge"} {
		leaf, err := pki.CA.Mint(certs.LeafSpec{Name: name, Grade: "service", Hosts: []string{name}, Validity: time.Hour})
		if err == nil {
			err = leaf.WriteDir(filepath.Join(dir, name), pki.CA, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	o := Options{DataDir: t.TempDir(), NATS: natsconn.Config{URLs: ns.ClientURL(), Replicas: 1}, NATSCerts: dir}
	serveWith(t, o, func(cc *grpc.ClientConn) {
		cfg := &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{Command: testkit.Tool(t, "everything-server")}}}
		if _, err := bridgev1.NewBridgeServiceClient(cc).Mount(testkit.As("ops", identity.Admin), &bridgev1.MountRequest{Client: "everything", Config: cfg}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(testkit.As("agent", identity.Driver), 30*time.Second)
		defer cancel()
		mb := mailboxv1.NewMailboxServiceClient(cc)
		res, err := mb.Call(ctx, &mailboxv1.CallRequest{Client: "everything", Tool: "test_simple_text", Input: `{}`})
		if err != nil || res.GetCapture().GetStdout() != simpleText {
			t.Fatalf("Call = %v, %v", res, err)
		}
		// Invoke keeps a durable record in the mailbox's streams (sb.rec.*).
		inv, err := mb.Invoke(ctx, &mailboxv1.InvokeRequest{Client: "everything", Tool: "test_simple_text", Input: `{}`})
		if err != nil {
			t.Fatal(err)
		}
		c, err := mb.Capture(ctx, &mailboxv1.CaptureRequest{Invocation: inv.GetInvocation(), Wait: durationpb.New(20 * time.Second)})
		if err != nil || c.GetCapture().GetStdout() != simpleText {
			t.Fatalf("Capture = %v, %v", c, err)
		}
	})
}

const simpleText = "This is a simple text response for testing."

// One certificate for the three services is refused with a sentence
// naming the flag to use instead, and so is --nats-certs without --nats.
func TestDevRefusesOneNATSCertificateForEveryService(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{NATS: natsconn.Config{URLs: "nats://127.0.0.1:1", Cert: "c.pem", Key: "k.pem"}}, "--nats-certs, not one certificate with --nats-tls-cert"},
		{Options{NATSCerts: "certs"}, "--nats-certs names the certificates to present to --nats, which names no servers"},
	} {
		tc.o.GRPC, tc.o.HTTP, tc.o.DataDir = "127.0.0.1:0", "127.0.0.1:0", t.TempDir()
		tc.o.Log = logging.Discard()
		if err := Run(context.Background(), tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Run = %v; want an error saying %s", err, tc.want)
		}
	}
}
