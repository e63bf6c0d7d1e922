package app_test

import (
	"bytes"
	"errors"
	"google.golang.org/grpc"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/process"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

const module = "github.com/switchboard-run/switchboard/"

const tools = `[
 {"name":"echo","description":"","input_schema":{"type":"object"},"command":["cat"]},
 {"name":"three","description":"","input_schema":{"type":"object"},"command":["sh","-c","echo out; echo err >&2; exit 3"]},
 {"name":"sleepy","description":"","input_schema":{"type":"object"},"command":["sleep","30"]},
 {"name":"here","description":"","input_schema":{"type":"object"},"command":["pwd"],"subject_cwd":true}
]`

// run runs the switchboard binary and returns stdout, stderr and the exit
// code.
func run(t *testing.T, bin string, args ...string) (string, string, int) {
	t.Helper()
	return runEnv(t, nil, bin, args...)
}

// runEnv is run with env added to the command's environment.
func runEnv(t *testing.T, env []string, bin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errb.String(), 0
	case errors.As(err, &exit):
		return out.String(), errb.String(), exit.ExitCode()
	}
	t.Fatalf("%v: %v", args, err)
	return "", "", 0
}

// devSuite is `switchboard dev` run as a process, with its state in a
// directory of the test's: run runs a command of the CLI against it with
// the run's secret (SWITCHBOARD_DEV_SECRET_FILE), as a person's CLI finds
// it in ./.data.
type devSuite struct {
	t                                         *testing.T
	bin, grpcAddr, httpAddr, data, secretFile string
}

func startDev(t *testing.T, bin string, args ...string) *devSuite {
	t.Helper()
	d := &devSuite{t: t, bin: bin, grpcAddr: testkit.FreeAddr(t), httpAddr: testkit.FreeAddr(t), data: filepath.Join(t.TempDir(), "data")}
	d.secretFile = filepath.Join(d.data, process.DevSecretFile)
	testkit.Start(t, bin, append([]string{"dev", "--grpc", d.grpcAddr, "--http", d.httpAddr, "--data", d.data}, args...)...)
	testkit.WaitHealthy(t, d.grpcAddr, mailboxv1.MailboxService_ServiceDesc.ServiceName, 20*time.Second)
	return d
}

func (d *devSuite) run(args ...string) (string, string, int) {
	d.t.Helper()
	return runEnv(d.t, []string{"SWITCHBOARD_DEV_SECRET_FILE=" + d.secretFile}, d.bin, args...)
}

// conn dials the suite with the run's secret.
func (d *devSuite) conn() *grpc.ClientConn {
	d.t.Helper()
	return testkit.DialDev(d.t, d.grpcAddr, testkit.DevSecret(d.t, d.data))
}

// TestCallPassesTheCaptureThrough runs `switchboard dev` and a real tool
// host (`switchboard host` with a deadline of 5s: a shell on a loaded
// machine needs more than 1s) as processes, and checks what `switchboard
// call` prints and exits with.
func TestCallPassesTheCaptureThrough(t *testing.T) {
	t.Parallel()
	bin := testkit.Build(t, module+"cli/cmd/switchboard")
	dir := t.TempDir()
	toolsFile := filepath.Join(dir, "tools.json")
	if err := os.WriteFile(toolsFile, []byte(tools), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDev(t, bin)
	grpcAddr := d.grpcAddr
	addr := "--addr=" + grpcAddr

	if _, stderr, code := d.run("call", addr, "--timeout", "1s", "nohost_echo", "{}"); code != 1 || !strings.Contains(stderr, `no tool is presented as "nohost_echo"`) {
		t.Fatalf("an unknown presented name: exit %d, %q", code, stderr)
	}
	// A tool the host does not have: advertised as box by hand and invoked
	// while no host reads; then the host starts with a file lacking it, and
	// is handed the queued invocation.
	gone := queueForAGoneTool(t, d.conn())
	// Queued, with a note from its addressee: status reads both, taking
	// nothing (the capture below still collects it).
	reportOn(t, d.conn(), gone)
	out, stderr, code := d.run("status", addr, gone)
	// The time left is the slot's hour less the moments since the report.
	want := regexp.MustCompile(`^` + gone + `: queued, handed out 0 times, expires in (1h0m0s|59m\d+s)\n  #1 1 of 2: warming up\n$`)
	if code != 0 || !want.MatchString(out) {
		t.Fatalf("status: exit %d stdout %q stderr %q\nwant stdout matching %s", code, out, stderr, want)
	}
	if out, _, code := d.run("status", addr, gone, "--after", "1"); code != 0 || strings.Contains(out, "#1") {
		t.Fatalf("status --after 1: exit %d stdout %q; want no note", code, out)
	}
	testkit.Start(t, bin, "host", "--dev", "--dev-secret-file", d.secretFile, "--cwd-roots", dir, "--client", "box", "--tools", toolsFile, "--deadline", "5s", "--registry", grpcAddr, "--mailbox", grpcAddr)
	testkit.Eventually(t, "box to be present", 20*time.Second, func() bool {
		out, _, _ := d.run("clients", addr)
		return strings.Contains(out, "box") && strings.Contains(out, "true")
	})
	if _, stderr, code := d.run("capture", addr, gone, "--wait", "20s"); code != 127 || !strings.Contains(stderr, `tool "gone" is not in this host's tools file`) {
		t.Fatalf("an unknown tool at the host: exit %d, %q; want 127", code, stderr)
	}

	tests := []struct {
		name           string
		args           []string
		stdout, stderr string
		code           int
	}{
		{"stdout and the exit code pass through", []string{"box_echo", `{"a":[1,null]}`}, `{"a":[1,null]}`, "", 0},
		{"a non-zero exit code passes through with stdout and stderr", []string{"box_three"}, "out\n", "err\n", 3},
		{"a tool past the host's deadline is 124", []string{"box_sleepy"}, "", "ran past the per-call deadline of 5s", 124},
		{"a cwd for a tool without subject_cwd is refused", []string{"box_echo", "{}", "--cwd", "/"}, "", "does not take a cwd", 1},
		{"a subject_cwd tool runs in the cwd", []string{"box_here", "{}", "--cwd", dir}, dir + "\n", "", 0},
		{"a cwd outside the host's roots is refused", []string{"box_here", "{}", "--cwd", "/"}, "", `cwd "/" is /, outside the directories this host runs tools in`, 1},
		{"input that is not JSON is refused before it is sent", []string{"box_echo", "{nope"}, "", "the input is not valid JSON", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			out, errOut, code := d.run(append([]string{"call", addr}, tt.args...)...)
			if code != tt.code || out != tt.stdout || !strings.Contains(errOut, tt.stderr) {
				t.Fatalf("exit %d stdout %q stderr %q\nwant exit %d stdout %q stderr containing %q", code, out, errOut, tt.code, tt.stdout, tt.stderr)
			}
			if tt.code == 124 && time.Since(start) > 20*time.Second {
				t.Fatalf("the deadline of 5s took %v to answer", time.Since(start))
			}
		})
	}
}

// queueForAGoneTool advertises box_gone and invokes it with no host
// reading, returning the handle.
func queueForAGoneTool(t *testing.T, cc *grpc.ClientConn) string {
	t.Helper()
	box := testkit.As("box", identity.Host)
	_, err := registryv1.NewRegistryServiceClient(cc).Advertise(box, &registryv1.AdvertiseRequest{
		Tools: []*registryv1.Tool{{Name: "gone", Description: "", InputSchema: `{"type":"object"}`}}})
	if err != nil {
		t.Fatal(err)
	}
	me := testkit.As(defaultAs(), identity.Admin)
	res, err := mailboxv1.NewMailboxServiceClient(cc).Invoke(me, &mailboxv1.InvokeRequest{Client: "box", Tool: "gone", Input: "{}"})
	if err != nil {
		t.Fatal(err)
	}
	return res.GetInvocation()
}

// reportOn reports a progress note on id as its addressee, box.
func reportOn(t *testing.T, cc *grpc.ClientConn, id string) {
	t.Helper()
	total := 2.0
	_, err := mailboxv1.NewMailboxServiceClient(cc).Report(testkit.As("box", identity.Host),
		&mailboxv1.ReportRequest{Invocation: id, Progress: 1, Total: &total, Message: "warming up"})
	if err != nil {
		t.Fatal(err)
	}
}

// defaultAs is the identity the CLI calls as when --as is not given.
func defaultAs() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "me"
}

// TestCallAgainstASplitDeployment points the CLI at a registry and a
// mailbox that listen apart, as in the compose deployment.
func TestCallAgainstASplitDeployment(t *testing.T) {
	t.Parallel()
	bin := testkit.Build(t, module+"cli/cmd/switchboard")
	dir := t.TempDir()
	toolsFile := filepath.Join(dir, "tools.json")
	if err := os.WriteFile(toolsFile, []byte(tools), 0o644); err != nil {
		t.Fatal(err)
	}
	reg, mb := testkit.FreeAddr(t), testkit.FreeAddr(t)
	ns := testkit.NATS(t)
	testkit.Start(t, bin, "registry", "--dev", "--listen", reg, "--nats", ns.ClientURL())
	testkit.WaitHealthy(t, reg, "", 20*time.Second)
	testkit.Start(t, bin, "mailbox", "--dev", "--listen", mb, "--registry", reg, "--nats", ns.ClientURL())
	testkit.WaitHealthy(t, mb, "", 20*time.Second)
	testkit.Start(t, bin, "host", "--dev", "--client", "box", "--tools", toolsFile, "--registry", reg, "--mailbox", mb)
	split := []string{"--registry", reg, "--mailbox", mb}
	testkit.Eventually(t, "box_echo to be listed", 20*time.Second, func() bool {
		out, _, _ := run(t, bin, append([]string{"tools"}, split...)...)
		return strings.Contains(out, "box_echo")
	})
	out, errOut, code := run(t, bin, append([]string{"call", "box_echo", `{"split":true}`}, split...)...)
	if code != 0 || out != `{"split":true}` {
		t.Fatalf("exit %d stdout %q stderr %q", code, out, errOut)
	}
}

// TestCallCollectsItsCaptureWhenItsMailboxReplicaDies kills (-9) the
// mailbox replica a `switchboard call` waits on while the tool runs. When
// the host reads through another replica, the call is held there: the
// call prints the tool's output and exits 0, having collected the capture
// by its handle. When the killed replica held the call itself (its host
// read there), the call is lost with it: the call says so, naming the
// handle and that the tool may have run, and exits non-zero. The tool runs
// once either way.
func TestCallCollectsItsCaptureWhenItsMailboxReplicaDies(t *testing.T) {
	t.Parallel()
	bin := testkit.Build(t, module+"cli/cmd/switchboard")
	for _, c := range []struct {
		name      string
		hostOnB   bool
		wantOut   string
		wantError string
	}{
		{"the host reads through another replica", true, "done\n", ""},
		{"the killed replica held the call", false, "", "may have run it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			toolsFile := filepath.Join(dir, "tools.json")
			slow := `[{"name":"slow","description":"","input_schema":{"type":"object"},
			  "command":["sh","-c","echo run >> DIR/runs; touch DIR/started; while [ ! -f DIR/go ]; do sleep 0.05; done; echo done"]}]`
			if err := os.WriteFile(toolsFile, []byte(strings.ReplaceAll(slow, "DIR", dir)), 0o644); err != nil {
				t.Fatal(err)
			}
			reg, a, b := testkit.FreeAddr(t), testkit.FreeAddr(t), testkit.FreeAddr(t)
			ns := testkit.NATS(t)
			testkit.Start(t, bin, "registry", "--dev", "--listen", reg, "--nats", ns.ClientURL())
			testkit.WaitHealthy(t, reg, "", 20*time.Second)
			mailbox := func(addr string) *testkit.Proc {
				p := testkit.Start(t, bin, "mailbox", "--dev", "--listen", addr, "--registry", reg, "--nats", ns.ClientURL())
				testkit.WaitHealthy(t, addr, "", 20*time.Second)
				return p
			}
			// The call goes through A alone; the host reads through B, or A.
			first := mailbox(a)
			hostAt := a
			if c.hostOnB {
				mailbox(b)
				hostAt = b
			}
			testkit.Start(t, bin, "host", "--dev", "--client", "box", "--tools", toolsFile, "--registry", reg, "--mailbox", hostAt)
			viaA := []string{"--registry", reg, "--mailbox", a}
			testkit.Eventually(t, "box_slow to be listed", 20*time.Second, func() bool {
				out, _, _ := run(t, bin, append([]string{"tools"}, viaA...)...)
				return strings.Contains(out, "box_slow")
			})
			var out, errOut bytes.Buffer
			call := exec.Command(bin, append([]string{"call", "box_slow", "--timeout", "60s"}, viaA...)...)
			call.Stdout, call.Stderr = &out, &errOut
			if err := call.Start(); err != nil {
				t.Fatal(err)
			}
			testkit.Eventually(t, "the tool to start", 20*time.Second, func() bool {
				_, err := os.Stat(filepath.Join(dir, "started"))
				return err == nil
			})
			first.Kill()
			mailbox(a) // a new replica where the call's driver can find it
			if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			err := call.Wait()
			if out.String() != c.wantOut || (err == nil) != (c.wantError == "") || !strings.Contains(errOut.String(), c.wantError) {
				t.Fatalf("switchboard call: %v, stdout %q, stderr %q; want stdout %q and an error saying %q", err, out.String(), errOut.String(), c.wantOut, c.wantError)
			}
			if !strings.Contains(errOut.String(), "the connection to the mailbox broke while inv-") {
				t.Errorf("stderr %q does not say the connection broke", errOut.String())
			}
			runs, err := os.ReadFile(filepath.Join(dir, "runs"))
			if err != nil || strings.Count(string(runs), "run") != 1 {
				t.Errorf("the tool's runs: %q, %v; want one", runs, err)
			}
		})
	}
}
