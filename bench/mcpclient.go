package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

// endpointSession opens an MCP session on the endpoint as the bench's
// driver, with the dev suite's secret, in the revision rev names (empty:
// the client's newest). Each session has connections of its own, as a
// client in a process of its own has: sixteen sharing Go's default
// transport, which keeps two idle, would open and close one per call.
func endpointSession(ctx context.Context, base, rev, secret string) (*mcp.ClientSession, error) {
	h := http.Header{"Switchboard-Identity": {driver.Name}, "Switchboard-Dev-Secret": {secret}}
	return mcpSession(ctx, base+"/mcp", rev, testkit.WithHeaders(h, &http.Transport{MaxIdleConnsPerHost: 4}))
}

// mcpSession opens an MCP session at endpoint over transport, in rev.
func mcpSession(ctx context.Context, endpoint, rev string, transport http.RoundTripper) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "switchboard-bench", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: transport}}, &mcp.ClientSessionOptions{ProtocolVersion: rev})
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", endpoint, err)
	}
	return cs, nil
}

// simpleText calls the conformance server's test_simple_text under name.
func simpleText(ctx context.Context, cs *mcp.ClientSession, name string) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
	if err == nil && res.IsError {
		b, _ := json.Marshal(res.Content) // the content says why
		err = fmt.Errorf("%s answered isError: %s", name, b)
	}
	return err
}
