// Command screenshot is an MCP server on stdio with one tool, "screenshot",
// that answers as a browser-automation server does: a text line, a PNG of
// 800×600 noise (about 1.4 MB, which compresses poorly, as photographs do),
// structured content and _meta. The tests of result fidelity compare what
// reaches an MCP client through Switchboard with what it answers directly.
package main

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"log"
	"math/rand/v2"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	shot := noise(800, 600)
	s := mcp.NewServer(&mcp.Implementation{Name: "screenshot", Version: "v1"}, nil)
	s.AddTool(&mcp.Tool{Name: "screenshot", Description: "Captures the page as a PNG.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{
				Meta: mcp.Meta{"example.com/page": "about:blank"},
				Content: []mcp.Content{
					&mcp.TextContent{Text: "captured 800×600"},
					&mcp.ImageContent{Data: shot, MIMEType: "image/png", Annotations: &mcp.Annotations{Audience: []mcp.Role{"user"}}},
				},
				StructuredContent: map[string]any{"width": 800, "height": 600},
			}, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}

// noise is a w×h PNG of seeded random pixels: the same bytes every run.
func noise(w, h int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetNRGBA(x, y, color.NRGBA{uint8(r.Uint32()), uint8(r.Uint32()), uint8(r.Uint32()), 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		log.Fatal(err)
	}
	return b.Bytes()
}
