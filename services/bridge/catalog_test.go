package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/bridge/internal/catalog"
)

const bigPkg = "github.com/switchboard-run/switchboard/services/bridge/internal/catalog/testdata/bigresource"

func TestTheConformanceServersCatalogThroughTheBridge(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	s.mount(t, "conf", stdioServer(testkit.Tool(t, "everything-server")))
	s.awaitState(t, "conf", bridgev1.State_STATE_RUNNING)

	res, err := s.bridge.ListResources(driver, &bridgev1.ListResourcesRequest{Client: "conf"})
	if err != nil {
		t.Fatal(err)
	}
	uris := map[string]*bridgev1.Resource{}
	for _, r := range res.GetResources() {
		uris[r.GetUri()] = r
	}
	for _, u := range []string{"test://static-text", "test://static-binary", "test://watched-resource"} {
		if uris[u] == nil {
			t.Fatalf("ListResources lacks %s: %v", u, res.GetResources())
		}
	}
	var def mcp.Resource
	if err := json.Unmarshal([]byte(uris["test://static-text"].GetDefinition()), &def); err != nil || def.MIMEType != "text/plain" || def.Description == "" {
		t.Fatalf("static-text's definition = %s (%v)", uris["test://static-text"].GetDefinition(), err)
	}
	tpl, err := s.bridge.ListResourceTemplates(driver, &bridgev1.ListResourceTemplatesRequest{Client: "conf"})
	if err != nil || len(tpl.GetTemplates()) != 1 || tpl.GetTemplates()[0].GetUriTemplate() != "test://template/{id}/data" {
		t.Fatalf("ListResourceTemplates = %v, %v", tpl, err)
	}

	read, err := s.bridge.ReadResource(driver, &bridgev1.ReadResourceRequest{Client: "conf", Uri: "test://static-text"})
	if err != nil || len(read.GetContents()) != 1 || read.GetContents()[0].GetText() != "This is the content of the static text resource." {
		t.Fatalf("ReadResource(static-text) = %v, %v", read, err)
	}
	read, err = s.bridge.ReadResource(driver, &bridgev1.ReadResourceRequest{Client: "conf", Uri: "test://template/42/data"})
	if err != nil || !strings.Contains(read.GetContents()[0].GetText(), `"id": "42"`) {
		t.Fatalf("ReadResource(template 42) = %v, %v", read, err)
	}
	read, err = s.bridge.ReadResource(driver, &bridgev1.ReadResourceRequest{Client: "conf", Uri: "test://static-binary"})
	if err != nil || len(read.GetContents()[0].GetBlob()) == 0 || read.GetContents()[0].GetMimeType() != "image/png" || read.GetContents()[0].GetTruncated() {
		t.Fatalf("ReadResource(static-binary) = %v, %v", read, err)
	}

	prompts, err := s.bridge.ListPrompts(driver, &bridgev1.ListPromptsRequest{Client: "conf"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range prompts.GetPrompts() {
		names = append(names, p.GetName())
	}
	if !strings.Contains(strings.Join(names, " "), "test_prompt_with_arguments") {
		t.Fatalf("ListPrompts = %v", names)
	}
	got, err := s.bridge.GetPrompt(driver, &bridgev1.GetPromptRequest{Client: "conf", Name: "test_prompt_with_arguments",
		Arguments: map[string]string{"arg1": "red", "arg2": "blue"}})
	if err != nil || len(got.GetMessages()) != 1 || !strings.Contains(got.GetMessages()[0], `Prompt with arguments: arg1='red', arg2='blue'`) {
		t.Fatalf("GetPrompt = %v, %v", got, err)
	}

	// A prompt that asks for input first answers input_required whole; the
	// answer comes with the next GetPrompt.
	ask, err := s.bridge.GetPrompt(driver, &bridgev1.GetPromptRequest{Client: "conf", Name: "test_input_required_result_prompt",
		McpParams: proto.String(`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}`)})
	if err != nil || ask.InputRequired == nil || len(ask.GetMessages()) != 0 || !strings.Contains(ask.GetInputRequired(), `"user_context":{"method":"elicitation/create"`) {
		t.Fatalf("GetPrompt of a prompt that asks = %v, %v", ask, err)
	}
	answered, err := s.bridge.GetPrompt(driver, &bridgev1.GetPromptRequest{Client: "conf", Name: "test_input_required_result_prompt",
		McpParams: proto.String(`{"inputResponses":{"user_context":{"action":"accept","content":{"context":"tea"}}}}`)})
	if err != nil || answered.InputRequired != nil || len(answered.GetMessages()) != 1 || !strings.Contains(answered.GetMessages()[0], "Context: tea") {
		t.Fatalf("GetPrompt with the answer = %v, %v", answered, err)
	}

	refusals := []struct {
		name string
		err  func() error
		code codes.Code
		msg  string
	}{
		{"an unknown client", func() error {
			_, err := s.bridge.ListResources(driver, &bridgev1.ListResourcesRequest{Client: "ghost"})
			return err
		}, codes.NotFound, `no MCP server is mounted as "ghost"`},
		{"an unknown URI", func() error {
			_, err := s.bridge.ReadResource(driver, &bridgev1.ReadResourceRequest{Client: "conf", Uri: "test://nope"})
			return err
		}, codes.NotFound, `MCP server "conf" lists no resource "test://nope", and none of its resource templates matches it: only what a server lists is read`},
		{"a file the server does not list is never asked of it", func() error {
			_, err := s.bridge.ReadResource(driver, &bridgev1.ReadResourceRequest{Client: "conf", Uri: "file:///etc/passwd"})
			return err
		}, codes.NotFound, `MCP server "conf" lists no resource "file:///etc/passwd", and none of its resource templates matches it: only what a server lists is read`},
		{"an unknown prompt", func() error {
			_, err := s.bridge.GetPrompt(driver, &bridgev1.GetPromptRequest{Client: "conf", Name: "nope"})
			return err
		}, codes.NotFound, `MCP server "conf" lists no prompt "nope"`},
		{"a prompt's mcp_params that are no object", func() error {
			_, err := s.bridge.GetPrompt(driver, &bridgev1.GetPromptRequest{Client: "conf", Name: "test_simple_prompt", McpParams: proto.String(`[1]`)})
			return err
		}, codes.InvalidArgument, `prompt "test_simple_prompt": mcp_params: json: cannot unmarshal array into Go value of type upstream.ClientParams`},
		{"a prompt's mcp_params too large", func() error {
			big := `{"requestState":"` + strings.Repeat("x", MaxMCPParams) + `"}`
			_, err := s.bridge.GetPrompt(driver, &bridgev1.GetPromptRequest{Client: "conf", Name: "test_simple_prompt", McpParams: &big})
			return err
		}, codes.InvalidArgument, fmt.Sprintf(`mcp_params of prompt "test_simple_prompt" is %d bytes; at most %d are passed`, MaxMCPParams+19, MaxMCPParams)},
		{"a host may not read", func() error {
			_, err := s.bridge.ReadResource(testkit.As("laptop", identity.Host), &bridgev1.ReadResourceRequest{Client: "conf", Uri: "test://static-text"})
			return err
		}, codes.PermissionDenied, `"laptop" is a host and may not call BridgeService.ReadResource`},
		{"a service lists but may not read", func() error {
			_, err := s.bridge.GetPrompt(testkit.As("gateway", identity.Service), &bridgev1.GetPromptRequest{Client: "conf", Name: "test_simple_prompt"})
			return err
		}, codes.PermissionDenied, `"gateway" is a service and may not call BridgeService.GetPrompt`},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) { testkit.Refused(t, tt.err(), tt.code, tt.msg) })
	}
	if _, err := s.bridge.ListPrompts(testkit.As("gateway", identity.Service), &bridgev1.ListPromptsRequest{Client: "conf"}); err != nil {
		t.Fatalf("the gateway lists prompts: %v", err)
	}
}

// watchCatalog opens a catalog watch as a driver, for a minute at most.
func (s *suite) watchCatalog(t *testing.T) bridgev1.BridgeService_WatchCatalogClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(driver, 60*time.Second)
	t.Cleanup(cancel)
	stream, err := s.bridge.WatchCatalog(ctx, &bridgev1.WatchCatalogRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return stream
}

func TestWatchCatalogTellsOfMountsAndTheirCatalogs(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	stream := s.watchCatalog(t)
	next := func() *bridgev1.WatchCatalogResponse {
		t.Helper()
		ev, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	if ev := next(); ev.GetChange() != bridgev1.CatalogChange_CATALOG_CHANGE_SYNCED {
		t.Fatalf("first event = %v, want SYNCED", ev)
	}
	// await reads events until one of change for client comes.
	await := func(change bridgev1.CatalogChange, client string) {
		t.Helper()
		for {
			if ev := next(); ev.GetChange() == change && ev.GetClient() == client {
				return
			}
		}
	}
	s.mount(t, "conf", stdioServer(testkit.Tool(t, "everything-server")))
	await(bridgev1.CatalogChange_CATALOG_CHANGE_MOUNTS, "conf")
	await(bridgev1.CatalogChange_CATALOG_CHANGE_RESOURCES, "conf")
	// The server adds a prompt and says so: its watchers hear it, and the
	// listing has it.
	if c := s.call(t, "conf", "test_trigger_prompt_change", "{}"); c.GetExitCode() != 0 {
		t.Fatalf("trigger: %v", c)
	}
	await(bridgev1.CatalogChange_CATALOG_CHANGE_PROMPTS, "conf")
	testkit.Eventually(t, "the new prompt listed", 10*time.Second, func() bool {
		res, err := s.bridge.ListPrompts(driver, &bridgev1.ListPromptsRequest{Client: "conf"})
		return err == nil && strings.Contains(protoNames(res.GetPrompts()), "__transient_prompt_for_list_changed")
	})
	if _, err := s.bridge.Unmount(admin, &bridgev1.UnmountRequest{Client: "conf"}); err != nil {
		t.Fatal(err)
	}
	await(bridgev1.CatalogChange_CATALOG_CHANGE_MOUNTS, "conf")
}

func protoNames(ps []*bridgev1.Prompt) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.GetName())
	}
	return strings.Join(out, " ")
}

func TestALargeResourceIsCutWithAMarker(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	s.mount(t, "big", stdioServer(testkit.Build(t, bigPkg)))
	s.awaitState(t, "big", bridgev1.State_STATE_RUNNING)

	read, err := s.bridge.ReadResource(driver, &bridgev1.ReadResourceRequest{Client: "big", Uri: "big://text"})
	if err != nil {
		t.Fatal(err)
	}
	c := read.GetContents()[0]
	text := c.GetText()
	marker := "\n[truncated by Switchboard: 524288 more bytes not shown; the bridge passes at most 1048576 bytes of text per answer]"
	if !c.GetTruncated() || !strings.HasSuffix(text, marker) || len(text)-len(marker) != catalog.MaxText {
		t.Fatalf("the big text: truncated %v, %d bytes, ends %q", c.GetTruncated(), len(text), text[max(0, len(text)-200):])
	}
	if kept := strings.TrimSuffix(text, marker); strings.Trim(kept, "é") != "" {
		t.Fatal("the kept text is not whole characters of the resource")
	}

	read, err = s.bridge.ReadResource(driver, &bridgev1.ReadResourceRequest{Client: "big", Uri: "big://blob"})
	if err != nil {
		t.Fatal(err)
	}
	c = read.GetContents()[0]
	want := "[truncated by Switchboard: a blob of 1572864 bytes (application/octet-stream) not shown; the bridge passes at most 1048576 bytes of data per answer]"
	if !c.GetTruncated() || c.GetBlob() != nil || c.GetText() != want {
		t.Fatalf("the big blob: truncated %v, blob %d bytes, text %q", c.GetTruncated(), len(c.GetBlob()), c.GetText())
	}

	got, err := s.bridge.GetPrompt(driver, &bridgev1.GetPromptRequest{Client: "big", Name: "big"})
	if err != nil {
		t.Fatal(err)
	}
	if !got.GetTruncated() || !strings.Contains(got.GetMessages()[0], `524288 more bytes not shown`) {
		t.Fatalf("the big prompt: truncated %v, %d bytes", got.GetTruncated(), len(got.GetMessages()[0]))
	}
}
