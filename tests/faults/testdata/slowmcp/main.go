// Command slowmcp is an MCP server on stdio with one tool, "slow", for the
// fault tests of mounted servers: each run appends a line to DIR/runs
// (DIR is its one argument), then finishes — a text block and an image —
// once DIR/go exists.
package main

import (
	"context"
	"errors"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: slowmcp DIR")
	}
	dir := os.Args[1]
	s := mcp.NewServer(&mcp.Implementation{Name: "slowmcp", Version: "v1"}, nil)
	s.AddTool(&mcp.Tool{Name: "slow", Description: "Runs until told to finish.", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			f, err := os.OpenFile(filepath.Join(dir, "runs"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err != nil {
				return nil, err
			}
			_, err = f.WriteString("run\n")
			if err = errors.Join(err, f.Close()); err != nil {
				return nil, err
			}
			for {
				if _, err := os.Stat(filepath.Join(dir, "go")); err == nil {
					break
				}
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(50 * time.Millisecond):
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"},
				&mcp.ImageContent{Data: []byte("\x89PNG\r\n\x1a\n"), MIMEType: "image/png"}}}, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
