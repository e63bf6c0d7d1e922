package mcpserve

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
	"github.com/switchboard-run/switchboard/services/mailbox/mailboxtest"
)

var (
	self = identity.Self{Dev: true, Identity: identity.Identity{Name: "gateway", Grade: identity.Service}}
	ops  = testkit.As("ops", identity.Admin)
)

// realRegistry serves the real registry (and mailbox, which these tests
// never call) on a loopback listener in dev mode and returns options for
// mirrors of it.
func realRegistry(t *testing.T) (Options, registryv1.RegistryServiceClient) {
	t.Helper()
	core := mailboxtest.New(t, mailboxtest.Options{})
	return Options{Registry: core.Registry, Mailbox: core.Conn, Self: self.AsSelf,
		As: func(ctx context.Context, _ mcp.Request) (context.Context, error) { return ctx, nil }, Log: logging.Discard()}, core.Registry
}

func advertise(t *testing.T, reg registryv1.RegistryServiceClient, client string, tools ...*registryv1.Tool) {
	t.Helper()
	ctx := testkit.As(client, identity.Host)
	if _, err := reg.Advertise(ctx, &registryv1.AdvertiseRequest{Tools: tools}); err != nil {
		t.Fatal(err)
	}
}

// session connects an MCP client to the mirror's server in memory.
func session(t *testing.T, m *Mirror) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	if _, err := m.Server().Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// Pages are cut from the registry's order, so paging through the tools
// gives each once, in order, however small the pages are.
func TestToolsListPagesThroughTheRegistrysOrder(t *testing.T) {
	t.Parallel()
	opts, reg := realRegistry(t)
	names := []string{"zeta", "alpha", "mid", "beta", "omega", "gamma", "delta"}
	var tools []*registryv1.Tool
	for _, n := range names {
		tools = append(tools, &registryv1.Tool{Name: n, InputSchema: `{}`})
	}
	advertise(t, reg, "box", tools...)
	opts.PageSize = 3
	m, err := NewMirror("default", opts) // dev mode puts every advertiser in default
	if err != nil {
		t.Fatal(err)
	}
	m.Start(context.Background())
	t.Cleanup(m.Close)
	if err := m.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	cs := session(t, m)
	var got []string
	pages := 0
	for cursor := ""; ; pages++ {
		res, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tools) > 3 {
			t.Fatalf("a page of %d tools, the page size is 3", len(res.Tools))
		}
		for _, tool := range res.Tools {
			got = append(got, tool.Name)
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	want, err := reg.ListTools(ops, &registryv1.ListToolsRequest{Workspace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, p := range want.GetTools() {
		order = append(order, p.GetPresentedName())
	}
	if !slices.Equal(got, order) || pages != 2 {
		t.Fatalf("paged %v over %d pages, the registry lists %v", got, pages+1, order)
	}
}

// A tool MCP cannot carry is left out of the listing, and a call of it
// says why, while its client's other tools are served.
func TestAToolMCPCannotCarryIsLeftOutAndSaysWhy(t *testing.T) {
	t.Parallel()
	opts, reg := realRegistry(t)
	advertise(t, reg, "box",
		&registryv1.Tool{Name: "good", InputSchema: `{"type":"object"}`},
		&registryv1.Tool{Name: "list", InputSchema: `{"type":"array"}`})
	m, err := NewMirror("default", opts)
	if err != nil {
		t.Fatal(err)
	}
	m.Start(context.Background())
	t.Cleanup(m.Close)
	if err := m.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	cs := session(t, m)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(res.Tools) != 1 || res.Tools[0].Name != "box_good" {
		t.Fatalf("tools/list = %v, %v", res, err)
	}
	got, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "box_list"})
	want := `tool "list" of client "box" is not offered over MCP: its input_schema has "type": "array", and MCP passes a tool's arguments as an object`
	if err != nil || !got.IsError || got.Content[0].(*mcp.TextContent).Text != want {
		t.Fatalf("calling it: %v, %v\nwant %q", got, err, want)
	}
}

// At the bound, a new workspace takes the place of one nobody uses; when
// every mirror has a session, it is refused with 429.
func TestAtTheBoundIdleMirrorsMakeRoom(t *testing.T) {
	t.Parallel()
	opts, _ := realRegistry(t)
	w, err := NewWorkspaces(opts, HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	w.max, w.idle = 2, 0
	ctx := context.Background()
	get := func(name string) (*workspace, error) {
		t.Helper()
		return w.get(ctx, name)
	}
	a, err := get("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := get("b"); err != nil {
		t.Fatal(err)
	}
	session(t, a.mirror)
	c, err := get("c") // b has no session: it makes room
	if err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	_, hasB := w.byName["b"]
	w.mu.Unlock()
	if hasB {
		t.Fatal("the idle mirror of b was kept at the bound")
	}
	session(t, c.mirror)
	_, err = get("d")
	var refused *httperr.Error
	if !errors.As(err, &refused) || refused.Status != http.StatusTooManyRequests ||
		refused.Sentence != "this gateway mirrors 2 workspaces already, all in use; close some MCP sessions or try again later" {
		t.Fatalf("a third workspace in use: %v", err)
	}
	w.Close()
	if _, err := get("a"); err == nil || !strings.Contains(err.Error(), "shutting down") {
		t.Fatalf("after Close: %v", err)
	}
}
