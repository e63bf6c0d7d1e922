package procs

import (
	"context"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// MCPDriver opens an MCP session of protocol revision rev ("" for the
// client's newest) on the endpoint at url (a gateway's /mcp), as the
// operator "driver".
func MCPDriver(ctx context.Context, url, rev string) (*mcp.ClientSession, error) {
	return mcp.NewClient(&mcp.Implementation{Name: "switchboard-tests", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url,
			HTTPClient: testkit.HeaderClient(http.Header{"Switchboard-Identity": {"driver"}, "Switchboard-Grade": {string(identity.Driver)}})},
		&mcp.ClientSessionOptions{ProtocolVersion: rev})
}

// Texts joins the text contents of a tool result.
func Texts(res *mcp.CallToolResult) string {
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return strings.Join(out, "")
}
