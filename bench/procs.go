package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/switchboard-run/switchboard/kit/suite/grpcclient"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

const module = "github.com/switchboard-run/switchboard/"

// startupTimeout bounds how long a process of the suite may take to serve.
const startupTimeout = 30 * time.Second

// healthy waits until the gRPC server at addr serves service, and returns a
// connection to it that lasts the session.
func healthy(t testkit.TB, addr, service string) *grpc.ClientConn {
	t.Helper()
	testkit.WaitHealthy(t, addr, service, startupTimeout)
	cc, err := grpcclient.Dial(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// healthyDev is healthy for `switchboard dev` with its state in data: the
// connection carries the run's secret, which it returns for HTTP calls.
func healthyDev(t testkit.TB, addr, service, data string) (*grpc.ClientConn, string) {
	t.Helper()
	testkit.WaitHealthy(t, addr, service, startupTimeout)
	secret := testkit.DevSecret(t, data)
	return testkit.DialDev(t, addr, secret), secret
}

// httpHealthy waits until the gateway at base answers /healthz with 200.
func httpHealthy(t testkit.TB, base string) {
	t.Helper()
	testkit.Eventually(t, base+"/healthz to answer 200", startupTimeout, func() bool {
		res, err := http.Get(base + "/healthz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
}

// rss is the resident set size in bytes of the process that runs name.
func rss(name string, p *testkit.Proc) (int64, error) { return procStatus(name, p, "VmRSS:") }

// procStatus reads one of the sizes /proc/<pid>/status gives in kB (VmRSS:,
// VmHWM: the peak RSS) in bytes.
func procStatus(name string, p *testkit.Proc, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.Cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s for the %s process", field, name)
}
