package registry_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/registryview"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/registry"
)

// TestAdvertiseAndReadRules covers the rules of advertising and reading,
// each against a fresh registry in dev mode.
func TestAdvertiseAndReadRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		tune func(*registry.Config)
		run  func(t *testing.T, e *env)
	}{
		{name: "an advertised set is stored under the caller and re-advertising it writes nothing", run: func(t *testing.T, e *env) {
			if !e.advertise("box", tool("grep"), tool("ls")) {
				t.Fatal("the first advertisement did not write")
			}
			if e.advertise("box", tool("grep"), tool("ls")) {
				t.Fatal("re-advertising the set in force wrote")
			}
			row := getClient(t, e, "box").Row
			if len(row.Tools) != 2 || !proto.Equal(row.Tools[0], tool("grep")) {
				t.Fatalf("row tools = %v, want the set as advertised", row.Tools)
			}
		}},
		{name: "a new set replaces the whole set", run: func(t *testing.T, e *env) {
			e.advertise("box", tool("grep"), tool("ls"))
			if !e.advertise("box", tool("cat")) {
				t.Fatal("a different set did not write")
			}
			if got := toolNames(getClient(t, e, "box").Row.Tools); got != "cat" {
				t.Fatalf("tools = %s, want only cat", got)
			}
			_, err := e.reg.ResolveTool(admin, &registryv1.ResolveToolRequest{PresentedName: "box_grep"})
			testkit.Refused(t, err, codes.NotFound, `no tool is presented as "box_grep" right now; list the workspace's tools for the names in force`)
		}},
		{name: "an empty set withdraws the advertisement and keeps the membership", run: func(t *testing.T, e *env) {
			e.advertise("box", tool("grep"))
			if !e.advertise("box") {
				t.Fatal("withdrawing did not write")
			}
			if e.advertise("box") {
				t.Fatal("withdrawing twice wrote")
			}
			rows := listClients(t, e, "default")
			if len(rows) != 1 || rows[0].Client != "box" || len(rows[0].Tools) != 0 {
				t.Fatalf("rows = %v, want box with no tools", rows)
			}
			if res, _ := e.reg.ListTools(admin, &registryv1.ListToolsRequest{Workspace: "default"}); len(res.GetTools()) != 0 {
				t.Fatalf("ListTools = %v, want nothing", res.GetTools())
			}
		}},
		{name: "absent and false subject_cwd are different sets", run: func(t *testing.T, e *env) {
			e.advertise("box", tool("grep"))
			withFalse := tool("grep")
			withFalse.SubjectCwd = proto.Bool(false)
			if !e.advertise("box", withFalse) {
				t.Fatal("setting subject_cwd false did not write")
			}
			if got := getClient(t, e, "box").Row.Tools[0]; got.SubjectCwd == nil {
				t.Fatal("subject_cwd false came back absent")
			}
		}},
		{name: "only hosts advertise: admins, drivers and services are refused", run: func(t *testing.T, e *env) {
			for _, id := range []identity.Identity{{Name: "ops", Grade: identity.Admin}, {Name: "alice", Grade: identity.Driver}, {Name: "mailbox", Grade: identity.Service}} {
				_, err := e.reg.Advertise(testkit.As(id.Name, id.Grade), &registryv1.AdvertiseRequest{Tools: tools("t")})
				testkit.Refused(t, err, codes.PermissionDenied, `"`+id.Name+`" is `+id.Grade.Article()+` and may not call RegistryService.Advertise`)
			}
		}},
		{name: "advertising updates last_seen even when nothing is written", run: func(t *testing.T, e *env) {
			e.advertise("box", tool("grep"))
			first := getClient(t, e, "box").Row.LastSeen.AsTime()
			time.Sleep(2 * time.Millisecond) // let the clock move
			e.advertise("box", tool("grep"))
			if second := getClient(t, e, "box").Row.LastSeen.AsTime(); !second.After(first) {
				t.Fatalf("last_seen %v did not move past %v", second, first)
			}
		}},
		{name: "dev mode registers an advertising client into default", run: func(t *testing.T, e *env) {
			e.advertise("box", tool("grep"))
			if ws := getClient(t, e, "box").Workspaces; len(ws) != 1 || ws[0] != "default" {
				t.Fatalf("workspaces = %v, want [default]", ws)
			}
		}},
		{name: "outside dev mode advertising registers nothing", tune: func(c *registry.Config) { c.Security.Dev = false }, run: func(t *testing.T, e *env) {
			e.advertise("box", tool("grep"))
			if ws := getClient(t, e, "box").Workspaces; len(ws) != 0 {
				t.Fatalf("workspaces = %v, want none", ws)
			}
			_, err := e.reg.ListClients(admin, &registryv1.ListClientsRequest{Workspace: "default"})
			testkit.Refused(t, err, codes.NotFound, `unknown workspace "default"`)
		}},
		{name: "clients are listed sorted, registered ones only, with tools, presence and last_seen", tune: noDev, run: func(t *testing.T, e *env) {
			e.advertise("zed", tool("z"))
			e.advertise("alpha", tool("a"))
			e.advertise("stranger", tool("s"))
			e.register("team", "zed")
			e.register("team", "alpha")
			e.register("team", "never-seen")
			p := e.presence()
			p.send("zed", true, "")
			waitPresent(e, "zed", true)
			rows := listClients(t, e, "team")
			var got []string
			for _, r := range rows {
				got = append(got, r.Client)
			}
			if strings.Join(got, ",") != "alpha,never-seen,zed" {
				t.Fatalf("rows = %v, want alpha,never-seen,zed", got)
			}
			if rows[0].Present || !rows[2].Present {
				t.Fatalf("presence: alpha %v zed %v, want false true", rows[0].Present, rows[2].Present)
			}
			if rows[1].LastSeen != nil || rows[0].LastSeen == nil || len(rows[1].Tools) != 0 || toolNames(rows[0].Tools) != "a" {
				t.Fatalf("rows = %v", rows)
			}
		}},
		{name: "tools are listed by presented name with the full definition and presence", tune: noDev, run: func(t *testing.T, e *env) {
			full := &registryv1.Tool{Name: "run tests", Description: "d", InputSchema: `{"type":"object"}`, SubjectCwd: proto.Bool(true),
				Title: proto.String("Run"), OutputSchema: proto.String(`{"type":"object"}`), Annotations: proto.String(`{"readOnlyHint":true}`)}
			e.advertise("box", tool("zip"), full)
			e.advertise("alpha", tool("grep"))
			e.register("team", "box")
			e.register("team", "alpha")
			p := e.presence()
			p.send("alpha", true, "")
			waitPresent(e, "alpha", true)
			res, err := e.reg.ListTools(admin, &registryv1.ListToolsRequest{Workspace: "team"})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, pt := range res.Tools {
				got = append(got, pt.PresentedName)
			}
			if len(got) != 3 || got[0] != "alpha_grep" || !strings.HasPrefix(got[1], "box_run_tests_") || got[2] != "box_zip" {
				t.Fatalf("presented = %v, want alpha_grep, box_run_tests_<hash>, box_zip", got)
			}
			if !res.Tools[0].Present || res.Tools[1].Present || res.Tools[1].Client != "box" || !proto.Equal(res.Tools[1].Tool, full) {
				t.Fatalf("tools = %v", res.Tools)
			}
		}},
		{name: "hostile tool names present validly and resolve back, also after a restart", run: func(t *testing.T, e *env) {
			hostile := []string{"read file", "list(files)", "ünïcödé", "日本語", strings.Repeat("x", 200), strings.Repeat("(", 200), "a b", "a(b", "dots.and/slashes", "-"}
			e.advertise("box", tools(hostile...)...)
			names := presentedNames(t, e, "default")
			shape := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
			for i, n := range names {
				if !shape.MatchString(n) {
					t.Errorf("presented name %q is not 1–64 chars of [A-Za-z0-9_-]", n)
				}
				res, err := e.reg.ResolveTool(admin, &registryv1.ResolveToolRequest{PresentedName: n})
				if err != nil || res.Client != "box" {
					t.Fatalf("resolve %q: %v, %v", n, res, err)
				}
				names[i] = n + "=" + res.Tool.Name
			}
			if len(names) != len(hostile) {
				t.Fatalf("%d presented names for %d tools", len(names), len(hostile))
			}
			e.advertise("other", tool("x")) // another client joining changes nothing
			e.stop()
			e = serve(t, e.nats)
			for i, n := range presentedNames(t, e, "default") {
				if n == "other_x" {
					continue
				}
				res, err := e.reg.ResolveTool(admin, &registryv1.ResolveToolRequest{PresentedName: n})
				if err != nil || n+"="+res.Tool.Name != names[i] {
					t.Fatalf("after restart %q resolves to %v, %v; want %s", n, res, err, names[i])
				}
			}
		}},
		{name: "a client known only by membership is found with its workspaces sorted", tune: noDev, run: func(t *testing.T, e *env) {
			e.register("zeta", "box")
			e.register("alpha", "box")
			res := getClient(t, e, "box")
			if strings.Join(res.Workspaces, ",") != "alpha,zeta" || res.Row.Client != "box" || len(res.Row.Tools) != 0 || res.Row.LastSeen != nil {
				t.Fatalf("GetClient = %v", res)
			}
		}},
		{name: "membership changes say whether they wrote and unregistering keeps the set", tune: noDev, run: func(t *testing.T, e *env) {
			e.advertise("box", tool("grep"))
			if !e.register("team", "box") || e.register("team", "box") {
				t.Fatal("register wrote false, or twice true")
			}
			un := func() bool {
				res, err := e.reg.UnregisterClient(admin, &registryv1.UnregisterClientRequest{Workspace: "team", Client: "box"})
				if err != nil {
					t.Fatal(err)
				}
				return res.Wrote
			}
			if !un() || un() {
				t.Fatal("unregister wrote false, or twice true")
			}
			if got := toolNames(getClient(t, e, "box").Row.Tools); got != "grep" {
				t.Fatalf("after unregistering the set is %q, want grep", got)
			}
			_, err := e.reg.ListTools(admin, &registryv1.ListToolsRequest{Workspace: "team"})
			testkit.Refused(t, err, codes.NotFound, `unknown workspace "team"`)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var tune []func(*registry.Config)
			if tt.tune != nil {
				tune = append(tune, tt.tune)
			}
			tt.run(t, serve(t, nil, tune...))
		})
	}
}

func noDev(c *registry.Config) { c.Security.Dev = false }

func getClient(t *testing.T, e *env, client string) *registryv1.GetClientResponse {
	t.Helper()
	res, err := e.reg.GetClient(admin, &registryv1.GetClientRequest{Client: client})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// listClients reads every page of ws's clients.
func listClients(t *testing.T, e *env, ws string) []*registryv1.ClientRow {
	t.Helper()
	rows, err := registryview.Clients(admin, e.reg, ws)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// presentedNames reads every page of ws's tools.
func presentedNames(t *testing.T, e *env, ws string) []string {
	t.Helper()
	tools, err := registryview.Tools(admin, e.reg, ws)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, pt := range tools {
		out = append(out, pt.PresentedName)
	}
	return out
}

func toolNames(ts []*registryv1.Tool) string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return strings.Join(out, ",")
}
