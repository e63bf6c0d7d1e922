package bridge

import (
	"context"
	"encoding/json"
	"slices"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox/mailboxtest"
)

// The replica tests run bridge processes, each named with --replica, in
// front of the real registry and mailbox and their NATS (in this process,
// on loopback): the mounts are in NATS, and the bridges share them.

// core is the registry, the mailbox and NATS, with no bridge of its own.
type core struct {
	addr, nats string
	reg        registryv1.RegistryServiceClient
	mb         mailboxv1.MailboxServiceClient
	bin        string
}

func newCore(t *testing.T) *core {
	t.Helper()
	s := mailboxtest.New(t, mailboxtest.Options{})
	return &core{addr: s.Addr, nats: s.NATS.ClientURL(), reg: s.Registry, mb: s.Mailbox,
		bin: testkit.Build(t, "github.com/switchboard-run/switchboard/services/bridge/cmd/bridge")}
}

// replica is one bridge process.
type replica struct {
	name string
	proc *testkit.Proc
	api  bridgev1.BridgeServiceClient
}

func (c *core) bridge(t *testing.T, name string) *replica {
	t.Helper()
	addr := testkit.FreeAddr(t)
	p := testkit.Start(t, c.bin, "--dev", "--listen", addr, "--registry", c.addr, "--mailbox", c.addr, "--nats", c.nats, "--replica", name)
	testkit.WaitHealthy(t, addr, bridgev1.BridgeService_ServiceDesc.ServiceName, 20*time.Second)
	return &replica{name: name, proc: p, api: bridgev1.NewBridgeServiceClient(testkit.Dial(t, addr))}
}

// kill ends the bridge with SIGKILL, as a machine lost would: nothing is
// given up, no lease released.
func (r *replica) kill(t *testing.T) time.Time {
	t.Helper()
	if err := r.proc.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	_ = r.proc.Cmd.Wait()
	return at
}

// row is client's ListServers row on r, or nil.
func (r *replica) row(t *testing.T, client string) *bridgev1.ServerStatus {
	t.Helper()
	res, err := r.api.ListServers(admin, &bridgev1.ListServersRequest{})
	if err != nil {
		t.Fatalf("ListServers on %s: %v", r.name, err)
	}
	for _, row := range res.GetServers() {
		if row.GetClient() == client {
			return row
		}
	}
	return nil
}

// parentTool is the fake backend with a tool saying which process runs it
// and which bridge (its parent) started it, started at mount.
func parentTool(t *testing.T, exclusive bool) *bridgev1.ServerConfig {
	t.Helper()
	m := fake(t)
	m.Tools = append(m.Tools, &registryv1.Tool{Name: "parent", Description: "says which bridge runs it", InputSchema: `{"type":"object"}`})
	m.StartAtMount = true
	cfg := pluginServer(m)
	cfg.Exclusive = exclusive
	return cfg
}

// runner calls client's "parent" tool and returns the pid of the bridge
// that answered.
func (c *core) runner(t *testing.T, client string) int {
	t.Helper()
	_, bridge := c.parent(t, client)
	return bridge
}

// parent calls client's "parent" tool: the backend's pid and its bridge's.
func (c *core) parent(t *testing.T, client string) (backend, bridge int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(driver, 20*time.Second)
	defer cancel()
	res, err := c.mb.Call(ctx, &mailboxv1.CallRequest{Client: client, Tool: "parent", Input: `{}`})
	if err != nil || res.GetCapture() == nil || res.GetCapture().GetExitCode() != 0 {
		t.Fatalf("Call(%s, parent) = %v, %v", client, res, err)
	}
	var ids struct{ PID, PPID int }
	if err := json.Unmarshal([]byte(res.GetCapture().GetStdout()), &ids); err != nil {
		t.Fatalf("parent's answer %q: %v", res.GetCapture().GetStdout(), err)
	}
	return ids.PID, ids.PPID
}

func (c *core) mount(t *testing.T, r *replica, client string, cfg *bridgev1.ServerConfig) *bridgev1.ServerStatus {
	t.Helper()
	res, err := r.api.Mount(admin, &bridgev1.MountRequest{Client: client, Config: cfg})
	if err != nil {
		t.Fatalf("Mount(%q) on %s: %v", client, r.name, err)
	}
	return res.GetServer()
}

func pidOf(r *replica) int { return r.proc.Cmd.Process.Pid }

// A mount made through one bridge is there when a bridge starts again on
// the same NATS: it runs and answers without being mounted again.
func TestMountsSurviveABridgeRestart(t *testing.T) {
	t.Parallel()
	c := newCore(t)
	a := c.bridge(t, "a")
	c.mount(t, a, "kept", parentTool(t, false))
	c.mount(t, a, "kept-one", parentTool(t, true))
	if got := c.runner(t, "kept"); got != pidOf(a) {
		t.Fatalf("kept answered from pid %d, want bridge a (%d)", got, pidOf(a))
	}
	a.kill(t)

	b := c.bridge(t, "b")
	for _, client := range []string{"kept", "kept-one"} {
		testkit.Eventually(t, client+" running on the restarted bridge", 20*time.Second, func() bool {
			row := b.row(t, client)
			return row != nil && row.GetState() == bridgev1.State_STATE_RUNNING
		})
		if got := c.runner(t, client); got != pidOf(b) {
			t.Errorf("%s answered from pid %d after the restart, want the new bridge (%d)", client, got, pidOf(b))
		}
	}
	if row := b.row(t, "kept-one"); !row.GetExclusive() || row.GetReplica() != "b" || !slices.Equal(row.GetRunningOn(), []string{"b"}) {
		t.Errorf("kept-one's row = %v; want exclusive, from b, running on [b]", row)
	}
}

// A default mount runs on every replica: both list it running on both;
// the mailbox hands its queue to one reader at a time, and when that
// bridge is killed the other answers its calls.
func TestTwoReplicasBothRunADefaultMount(t *testing.T) {
	t.Parallel()
	c := newCore(t)
	a, b := c.bridge(t, "a"), c.bridge(t, "b")
	c.mount(t, a, "shared", parentTool(t, false))
	for _, r := range []*replica{a, b} {
		testkit.Eventually(t, "shared running on "+r.name+" and listed on both", 20*time.Second, func() bool {
			row := r.row(t, "shared")
			return row != nil && row.GetState() == bridgev1.State_STATE_RUNNING && slices.Equal(row.GetRunningOn(), []string{"a", "b"})
		})
	}
	first := c.runner(t, "shared")
	reader, other := a, b
	if first == pidOf(b) {
		reader, other = b, a
	} else if first != pidOf(a) {
		t.Fatalf("shared answered from pid %d, neither bridge (%d, %d)", first, pidOf(a), pidOf(b))
	}
	killed := reader.kill(t)
	if got := c.runner(t, "shared"); got != pidOf(other) {
		t.Fatalf("after %s was killed, shared answered from pid %d, want %s (%d)", reader.name, got, other.name, pidOf(other))
	}
	t.Logf("default mount: %s killed; %s answered a call %v later", reader.name, other.name, time.Since(killed).Round(time.Millisecond))
}

// An exclusive mount runs on exactly one replica; when that bridge is
// killed (SIGKILL: its lease is never given up, it lapses) another runs it
// within 10 s, and answers its calls.
func TestAnExclusiveMountMovesWhenItsBridgeIsKilled(t *testing.T) {
	t.Parallel()
	c := newCore(t)
	a, b := c.bridge(t, "a"), c.bridge(t, "b")
	c.mount(t, b, "solo", parentTool(t, true))
	var holder, standby *replica
	testkit.Eventually(t, "solo running on one replica, standing by on the other", 20*time.Second, func() bool {
		ra, rb := a.row(t, "solo"), b.row(t, "solo")
		switch {
		case ra == nil || rb == nil:
			return false
		case ra.GetState() == bridgev1.State_STATE_RUNNING && rb.GetState() == bridgev1.State_STATE_STANDBY:
			holder, standby = a, b
		case rb.GetState() == bridgev1.State_STATE_RUNNING && ra.GetState() == bridgev1.State_STATE_STANDBY:
			holder, standby = b, a
		default:
			return false
		}
		return slices.Equal(ra.GetRunningOn(), []string{holder.name}) && slices.Equal(rb.GetRunningOn(), []string{holder.name})
	})
	if got := c.runner(t, "solo"); got != pidOf(holder) {
		t.Fatalf("solo answered from pid %d, want its holder %s (%d)", got, holder.name, pidOf(holder))
	}

	killed := holder.kill(t)
	testkit.Eventually(t, "solo running on "+standby.name, 20*time.Second, func() bool {
		row := standby.row(t, "solo")
		return row.GetState() == bridgev1.State_STATE_RUNNING && slices.Equal(row.GetRunningOn(), []string{standby.name})
	})
	took := time.Since(killed)
	if got := c.runner(t, "solo"); got != pidOf(standby) {
		t.Fatalf("after the take-over solo answered from pid %d, want %s (%d)", got, standby.name, pidOf(standby))
	}
	answered := time.Since(killed)
	t.Logf("exclusive mount: %s killed; %s ran it %v later and answered a call %v after the kill",
		holder.name, standby.name, took.Round(time.Millisecond), answered.Round(time.Millisecond))
	if took > 10*time.Second {
		t.Errorf("the take-over took %v; the bound is 10 s", took)
	}
}

// Unmounting through one replica stops the mount on every replica and
// withdraws its tools; mounting and unmounting are an admin's alone.
func TestUnmountStopsItEverywhereAndOnlyAdminsMount(t *testing.T) {
	t.Parallel()
	c := newCore(t)
	a, b := c.bridge(t, "a"), c.bridge(t, "b")
	for _, grade := range []identity.Grade{identity.Driver, identity.Host, identity.Service} {
		ctx := testkit.As("someone", grade)
		_, err := a.api.Mount(ctx, &bridgev1.MountRequest{Client: "nope", Config: parentTool(t, false)})
		if status.Code(err) != codes.PermissionDenied {
			t.Errorf("Mount as a %s = %v; want PERMISSION_DENIED", grade, err)
		}
		_, err = b.api.Unmount(ctx, &bridgev1.UnmountRequest{Client: "nope"})
		if status.Code(err) != codes.PermissionDenied {
			t.Errorf("Unmount as a %s = %v; want PERMISSION_DENIED", grade, err)
		}
	}
	if a.row(t, "nope") != nil || b.row(t, "nope") != nil {
		t.Fatal("a refused mount was stored")
	}

	c.mount(t, a, "many", parentTool(t, false))
	c.mount(t, a, "one", parentTool(t, true))
	for _, r := range []*replica{a, b} {
		testkit.Eventually(t, "both mounts on "+r.name, 20*time.Second, func() bool {
			return r.row(t, "many").GetState() == bridgev1.State_STATE_RUNNING && r.row(t, "one") != nil
		})
	}
	many, _ := c.parent(t, "many")
	one, _ := c.parent(t, "one")
	for _, client := range []string{"many", "one"} {
		if _, err := b.api.Unmount(admin, &bridgev1.UnmountRequest{Client: client}); err != nil {
			t.Fatalf("Unmount(%s) on b: %v", client, err)
		}
	}
	for _, r := range []*replica{a, b} {
		testkit.Eventually(t, "nothing mounted on "+r.name, 20*time.Second, func() bool {
			res, err := r.api.ListServers(admin, &bridgev1.ListServersRequest{})
			return err == nil && len(res.GetServers()) == 0
		})
	}
	for _, client := range []string{"many", "one"} {
		res, err := c.reg.GetClient(admin, &registryv1.GetClientRequest{Client: client})
		if err != nil || len(res.GetRow().GetTools()) != 0 {
			t.Errorf("%s still advertises %v (%v) after Unmount", client, res.GetRow().GetTools(), err)
		}
	}
	for _, pid := range []int{many, one} {
		testkit.Eventually(t, "the backends stopped", 10*time.Second, func() bool {
			return syscall.Kill(pid, 0) == syscall.ESRCH
		})
	}
	_, err := a.api.Unmount(admin, &bridgev1.UnmountRequest{Client: "many"})
	testkit.Refused(t, err, codes.NotFound, `no MCP server is mounted as "many"`)
}
