package console

import (
	"encoding/base64"
	"encoding/json"
	"html/template"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
)

// medium is an image or a sound of an MCP server's result, shown in place.
type medium struct {
	Kind string // "image" or "audio"
	MIME string
	URL  template.URL // a data: URL of the bytes, built here
}

// Only raster images and common audio are shown: their bytes cannot run
// script, so a data: URL of them is safe to put in the page (the policy
// allows data: for img and media only).
var (
	shownImages = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}
	shownAudio  = []string{"audio/wav", "audio/x-wav", "audio/mpeg", "audio/ogg", "audio/webm", "audio/flac"}
)

// mediaOf lists the images and audio of the MCP result a capture carries
// (none when it carries none, or one that does not decode).
func mediaOf(c *mailboxv1.Capture) []medium {
	if c.McpResult == nil {
		return nil
	}
	var res mcp.CallToolResult
	if json.Unmarshal([]byte(c.GetMcpResult()), &res) != nil {
		return nil
	}
	var out []medium
	add := func(kind, mime string, data []byte, allowed []string) {
		if slices.Contains(allowed, mime) {
			out = append(out, medium{kind, mime, template.URL("data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data))})
		}
	}
	for _, b := range res.Content {
		switch b := b.(type) {
		case *mcp.ImageContent:
			add("image", b.MIMEType, b.Data, shownImages)
		case *mcp.AudioContent:
			add("audio", b.MIMEType, b.Data, shownAudio)
		}
	}
	return out
}
