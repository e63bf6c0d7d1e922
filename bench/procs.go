package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/switchboard-run/switchboard/kit/grpcclient"
)

const module = "github.com/switchboard-run/switchboard/"

// binaries builds the suite's commands into dir.
func binaries(dir string, cmds ...string) (map[string]string, error) {
	out := map[string]string{}
	args := []string{"build", "-o", dir + "/"}
	for _, c := range cmds {
		args = append(args, module+c)
		out[filepath.Base(c)] = filepath.Join(dir, filepath.Base(c))
	}
	cmd := exec.Command("go", args...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build: %v\n%s", err, b)
	}
	return out, nil
}

// proc is a process the bench started.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  bytes.Buffer
}

func start(name, bin string, args ...string) (*proc, error) {
	p := &proc{name: name, cmd: exec.Command(bin, args...)}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	return p, nil
}

func (p *proc) stop() {
	if p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		_ = p.cmd.Wait()
	}
}

// rss is the process's resident set size in bytes.
func (p *proc) rss() (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for %s", p.name)
}

// freeAddr is a loopback address nobody listens on now.
func freeAddr() (string, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer lis.Close()
	return lis.Addr().String(), nil
}

// healthy waits until the gRPC server at addr serves service.
func healthy(ctx context.Context, addr, service string) (*grpc.ClientConn, error) {
	cc, err := grpcclient.Dial(addr, nil)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		res, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		if err == nil && res.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return cc, nil
		}
		select {
		case <-ctx.Done():
			cc.Close()
			return nil, fmt.Errorf("%s never served %q: %v", addr, service, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// httpHealthy waits until the gateway at base answers /healthz with 200.
func httpHealthy(ctx context.Context, base string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s/healthz never answered 200: %v", base, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
