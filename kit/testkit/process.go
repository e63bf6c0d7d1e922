package testkit

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/switchboard-run/switchboard/kit/suite/grpcclient"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/process"
)

var builds sync.Map // import path → *build

type build struct {
	once sync.Once
	path string
	err  error
}

// Build compiles a main package of the workspace (e.g.
// "github.com/switchboard-run/switchboard/cli/cmd/switchboard") once per
// process and returns the executable's path.
func Build(t TB, pkg string) string {
	t.Helper()
	root := RepoRoot(t)
	v, _ := builds.LoadOrStore(pkg, &build{})
	b := v.(*build)
	b.once.Do(func() {
		sweepBuilds.Do(sweepDeadBuilds)
		dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", buildDirPrefix, os.Getpid()))
		if err != nil {
			b.err = err
			return
		}
		var paths map[string]string
		paths, b.err = buildInto(root, dir, pkg)
		b.path = paths[filepath.Base(pkg)]
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// buildDirPrefix names the directories Build compiles into, one per test
// process and package, followed by the process's pid: a process cannot
// remove its own at exit (Go has no exit hook), so the next one removes
// those of processes that have ended.
const buildDirPrefix = "switchboard-build-"

var sweepBuilds sync.Once

// sweepDeadBuilds removes the build directories of test processes that
// have ended; one whose name carries no pid is removed after an hour.
func sweepDeadBuilds() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), buildDirPrefix+"*"))
	for _, dir := range dirs {
		pidText, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(dir), buildDirPrefix), "-")
		if pid, err := strconv.Atoi(pidText); err == nil && pid > 0 {
			if alive(pid) {
				continue
			}
		} else if fi, err := os.Stat(dir); err != nil || time.Since(fi.ModTime()) < time.Hour {
			continue
		}
		_ = os.RemoveAll(dir)
	}
}

// alive reports whether process pid runs (signal 0 checks, sends nothing).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// BuildInto compiles main packages of the workspace into dir with one go
// build, and returns each executable's path by its name (the package
// path's last element).
func BuildInto(t TB, dir string, pkgs ...string) map[string]string {
	t.Helper()
	paths, err := buildInto(RepoRoot(t), dir, pkgs...)
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

func buildInto(root, dir string, pkgs ...string) (map[string]string, error) {
	cmd := exec.Command("go", append([]string{"build", "-o", dir + string(filepath.Separator)}, pkgs...)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build %s: %v\n%s", strings.Join(pkgs, " "), err, out)
	}
	paths := make(map[string]string, len(pkgs))
	for _, p := range pkgs {
		paths[filepath.Base(p)] = filepath.Join(dir, filepath.Base(p))
	}
	return paths, nil
}

// FreeAddr returns a loopback address with a port nobody listens on now,
// for a process to listen on later. The port is drawn below the kernel's
// ephemeral range (Linux's is 32768–60999), where no listener on port 0
// (an in-process NATS, an httptest server) nor an outgoing connection is
// given one, and never twice in one test binary: a port handed out and not
// yet bound cannot be taken by the next listener the test starts.
func FreeAddr(t TB) string {
	t.Helper()
	freePorts.Lock()
	defer freePorts.Unlock()
	for range 1000 {
		port := freePortLow + rand.IntN(freePortHigh-freePortLow)
		if freePorts.given[port] {
			continue
		}
		lis, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // someone listens there
		}
		lis.Close()
		freePorts.given[port] = true
		return lis.Addr().String()
	}
	t.Fatal("no free port found between 20000 and 32767 in 1000 tries")
	return ""
}

// The range FreeAddr draws from, below the ephemeral range.
const freePortLow, freePortHigh = 20000, 32768

var freePorts = struct {
	sync.Mutex
	given map[int]bool
}{given: map[int]bool{}}

// Proc is a process a test started. Its output is kept and shown when the
// test fails.
type Proc struct {
	Cmd *exec.Cmd
	out *SyncBuffer
}

// SyncBuffer is a buffer one goroutine may write (a process's output, a
// server's log) while another reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Start runs bin with args in its own process group, and kills the group
// when the test ends; a failed test shows what the process wrote.
func Start(t TB, bin string, args ...string) *Proc {
	t.Helper()
	return StartEnv(t, nil, bin, args...)
}

// StartEnv is Start with env (NAME=value) added to the test's environment.
func StartEnv(t TB, env []string, bin string, args ...string) *Proc {
	t.Helper()
	p := &Proc{Cmd: exec.Command(bin, args...), out: &SyncBuffer{}}
	if len(env) > 0 {
		p.Cmd.Env = append(os.Environ(), env...)
	}
	p.Cmd.Stdout, p.Cmd.Stderr = p.out, p.out
	p.Cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.Cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("output of %s %s:\n%s", filepath.Base(bin), strings.Join(args, " "), p.Output())
		}
	})
	return p
}

// Output is what the process wrote so far, stdout and stderr interleaved.
func (p *Proc) Output() string { return p.out.String() }

// Kill sends SIGKILL to the process group and reaps the process.
func (p *Proc) Kill() {
	if p.Cmd.Process == nil || p.Cmd.ProcessState != nil {
		return
	}
	_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
	_ = p.Cmd.Wait()
}

// Stop sends SIGTERM and waits up to timeout for a clean exit, then kills.
// It returns the process's exit error (nil for a clean exit).
func (p *Proc) Stop(timeout time.Duration) error {
	if p.Cmd.ProcessState != nil {
		return nil
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	_, err := p.wait(timeout)
	return err
}

// Exit waits up to timeout for the process to end by itself, and returns
// its exit error (nil for a clean exit). A process still running then is
// killed and the test fails.
func (p *Proc) Exit(t TB, timeout time.Duration) error {
	t.Helper()
	exited, err := p.wait(timeout)
	if !exited {
		t.Fatalf("%s did not exit within %v:\n%s", filepath.Base(p.Cmd.Path), timeout, p.Output())
	}
	return err
}

// wait reaps the process, killing its group when it has not exited after
// timeout; exited says whether it ended by itself.
func (p *Proc) wait(timeout time.Duration) (exited bool, err error) {
	done := make(chan error, 1)
	go func() { done <- p.Cmd.Wait() }()
	select {
	case err := <-done:
		return true, err
	case <-time.After(timeout):
		_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
		return false, <-done
	}
}

// Dial connects to the suite's gRPC server at addr (plaintext, dev mode)
// for the rest of the test.
func Dial(t TB, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	cc, err := grpcclient.Dial(addr, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// AwaitReady waits until cc is connected: a connection whose peer was
// restarted may still wait out its reconnect backoff, and fails a call
// made meanwhile at once.
func AwaitReady(t TB, cc *grpc.ClientConn, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	cc.Connect()
	for st := cc.GetState(); st != connectivity.Ready; st = cc.GetState() {
		if !cc.WaitForStateChange(ctx, st) {
			t.Fatalf("the connection to %s is %v after %v; want it ready", cc.Target(), st, within)
		}
		if st == connectivity.TransientFailure || st == connectivity.Idle {
			cc.Connect()
		}
	}
}

// DevSecret is the per-run secret `switchboard dev` wrote into its --data
// dir: what a test's calls to it carry (DialDev, the Switchboard-Dev-Secret
// header, a process's --dev-secret-file).
func DevSecret(t TB, dataDir string) string {
	t.Helper()
	s, err := process.ReadDevSecret(filepath.Join(dataDir, process.DevSecretFile))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// DialDev is Dial to a dev suite whose calls must carry secret.
func DialDev(t TB, addr, secret string) *grpc.ClientConn {
	t.Helper()
	return Dial(t, addr, grpc.WithPerRPCCredentials(identity.DevSecret(secret)))
}

// DevSecretFollowed carries the secret in file on each call, read again
// when the suite, started again, draws another: for a test's client that
// outlives a restart.
func DevSecretFollowed(t TB, file string) grpc.DialOption {
	t.Helper()
	c, err := process.DevCredentials(file)
	if err != nil {
		t.Fatal(err)
	}
	return grpc.WithPerRPCCredentials(c)
}

// WaitHealthy waits until the gRPC server at addr (plaintext, dev mode)
// reports SERVING for service ("" for the whole server), failing the test
// after timeout. Polling is fine here: it is a test waiting for a process
// to start, not a product path.
func WaitHealthy(t TB, addr, service string, timeout time.Duration) {
	t.Helper()
	WaitHealthyTLS(t, addr, service, nil, timeout)
}

// WaitHealthyTLS is WaitHealthy over TLS with tlsCfg (nil: plaintext).
func WaitHealthyTLS(t TB, addr, service string, tlsCfg *tls.Config, timeout time.Duration) {
	t.Helper()
	creds := insecure.NewCredentials()
	if tlsCfg != nil {
		creds = credentials.NewTLS(tlsCfg)
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	Await(t, addr+" healthy", timeout, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		res, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		if err == nil && res.Status != healthpb.HealthCheckResponse_SERVING {
			err = fmt.Errorf("serving status %v", res.Status)
		}
		return err
	})
}
