package host_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/grpcclient"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/host"
)

// A host started as root with --run-as, its TLS material named in its
// environment beside a secret of its own, runs a tool that tries to read
// the host's key and prints its environment: the key stays shut, and
// neither the secret nor a TLS path reaches the tool. The suite around it
// is the split deployment over mutual TLS, each a real process.
func TestAToolCannotReadTheHostsKeyNorInheritItsEnvironment(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("starting the host as root needs root; the suite's tests run as root")
	}
	bin := testkit.Build(t, module+"cli/cmd/switchboard")
	dir := testkit.SharedDir(t)
	pki := testkit.NewPKIIn(t, dir)
	reg, mb, box, driver := pki.Leaf(t, "registry", "service"), pki.Leaf(t, "mailbox", "service"), pki.Leaf(t, "box", "host"), pki.Leaf(t, "driver", "admin")
	asDriver := testkit.Client(t, driver)
	nats := testkit.NATS(t).ClientURL()
	regAddr, mbAddr := testkit.FreeAddr(t), testkit.FreeAddr(t)
	testkit.Start(t, bin, append([]string{"registry", "--listen", regAddr, "--nats", nats}, testkit.TLSFlags(reg)...)...)
	testkit.WaitHealthyTLS(t, regAddr, registryv1.RegistryService_ServiceDesc.ServiceName, asDriver, 20*time.Second)
	testkit.Start(t, bin, append([]string{"mailbox", "--listen", mbAddr, "--registry", regAddr, "--nats", nats}, testkit.TLSFlags(mb)...)...)
	testkit.WaitHealthyTLS(t, mbAddr, mailboxv1.MailboxService_ServiceDesc.ServiceName, asDriver, 20*time.Second)

	tools := filepath.Join(dir, "tools.json")
	spy := `[{"name":"spy","description":"","input_schema":{"type":"object"},"cwd":` + strconv.Quote(dir) +
		`,"command":["sh","-c","cat ` + box.Key + `; env"]}]`
	if err := os.WriteFile(tools, []byte(spy), 0o644); err != nil {
		t.Fatal(err)
	}
	const secret = "sbt_not-for-tools"
	testkit.StartEnv(t, testkit.ParentEnv(box, secret), bin, "host", "--tools", tools, "--registry", regAddr, "--mailbox", mbAddr, "--run-as", "nobody")

	cc, err := grpcclient.Dial(mbAddr, asDriver)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	var got *mailboxv1.Capture
	testkit.Eventually(t, "the spy tool to be advertised and answer", 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := mailboxv1.NewMailboxServiceClient(cc).Call(ctx, &mailboxv1.CallRequest{Client: "box", Tool: "spy", Input: "{}"})
		if status.Code(err) == codes.NotFound || status.Code(err) == codes.FailedPrecondition {
			return false // not advertised yet
		}
		if err != nil {
			t.Fatalf("call spy: %v", err)
		}
		got = res.GetCapture()
		return true
	})
	if !strings.Contains(got.GetStderr(), box.Key+": Permission denied") || strings.Contains(got.GetStdout(), "PRIVATE KEY") {
		t.Errorf("the tool read the host's key, or failed for another reason:\nstdout %s\nstderr %s", got.GetStdout(), got.GetStderr())
	}
	env := testkit.EnvMap(got.GetStdout())
	if env["SWITCHBOARD_TOOL"] != "spy" || env["USER"] != "nobody" {
		t.Errorf("the tool's environment lacks what the host gives it (SWITCHBOARD_TOOL=spy, USER=nobody): %v", env)
	}
	testkit.CheckChildEnv(t, env, secret, dir, "SWITCHBOARD_INVOCATION", "SWITCHBOARD_TOOL", "SWITCHBOARD_DELIVERY", "SWITCHBOARD_ANSWERS_FD")
}

// Without --run-as, a host whose tools could read its key refuses to
// start, saying how to go on.
func TestTheHostRefusesAKeyItsToolsCouldRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := testkit.NewPKIIn(t, dir).Leaf(t, "box", "host")
	tools := filepath.Join(dir, "tools.json")
	if err := os.WriteFile(tools, []byte(`[{"name":"t","description":"","input_schema":{},"command":["true"]}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	err := host.Main(t.Context(), append([]string{"--tools", tools}, testkit.TLSFlags(files)...), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "the programs the host runs") || !strings.Contains(err.Error(), "could read its private key "+files.Key) {
		t.Fatalf("Main = %v; want a refusal saying the tools could read the key", err)
	}
}
