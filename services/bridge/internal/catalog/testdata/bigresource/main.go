// Command bigresource is an MCP server on stdio with resources larger than
// the bridge passes, for the tests of its bounds: "big://text" is 1.5 MiB
// of text, "big://blob" a 1.5 MiB blob, and the prompt "big" 1.5 MiB of
// text.
package main

import (
	"context"
	"log"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Size of the big text, in bytes; the tests read it from the marker.
const textSize = 3 << 19

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "bigresource", Version: "v1"}, nil)
	text := strings.Repeat("é", textSize/2) // two bytes a character: a cut must not split one
	s.AddResource(&mcp.Resource{URI: "big://text", Name: "text", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: text}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "big://blob", Name: "blob", MIMEType: "application/octet-stream"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
				{URI: req.Params.URI, MIMEType: "application/octet-stream", Blob: make([]byte, 3<<19)},
			}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "big"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}}}, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
