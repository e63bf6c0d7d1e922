package catalog

import (
	"fmt"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds on one answer (a read resource or a got prompt), all its parts
// together: a resource is read for a model's context, where more than this
// is rarely useful, and the answer has to fit the suite's gRPC messages.
const (
	// MaxText is the text passed per answer, in bytes of UTF-8.
	MaxText = 1 << 20
	// MaxData is the binary data (blobs, images, audio) passed per answer,
	// in bytes before base64.
	MaxData = 1 << 20
	// MaxParts is the contents or messages passed per answer.
	MaxParts = 100
)

// budget is what is left of an answer's bounds.
type budget struct{ text, data int }

func newBudget() *budget { return &budget{text: MaxText, data: MaxData} }

// cut returns s within the text left, with a marker saying how much was
// cut, and whether it cut.
func (b *budget) cut(s string) (string, bool) {
	if len(s) <= b.text {
		b.text -= len(s)
		return s, false
	}
	keep := b.text
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep-- // never split a character
	}
	b.text = 0
	return s[:keep] + fmt.Sprintf("\n[truncated by Switchboard: %d more bytes not shown; the bridge passes at most %d bytes of text per answer]",
		len(s)-keep, MaxText), true
}

// takeData reports whether n bytes of data still fit, and takes them.
func (b *budget) takeData(n int) bool {
	if n > b.data {
		b.data = 0 // later, smaller parts would be out of order
		return false
	}
	b.data -= n
	return true
}

// omitted is the text that stands for data over the bounds.
func omitted(what string, n int, mime string) string {
	return fmt.Sprintf("[truncated by Switchboard: %s of %d bytes (%s) not shown; the bridge passes at most %d bytes of data per answer]",
		what, n, mime, MaxData)
}

// contents bounds one resource's contents; the same pointer when nothing
// was cut.
func (b *budget) contents(c *mcp.ResourceContents) *mcp.ResourceContents {
	if c.Blob != nil {
		if b.takeData(len(c.Blob)) {
			return c
		}
		text, _ := b.cut(omitted("a blob", len(c.Blob), c.MIMEType))
		return &mcp.ResourceContents{URI: c.URI, MIMEType: c.MIMEType, Text: text, Meta: c.Meta}
	}
	text, cut := b.cut(c.Text)
	if !cut {
		return c
	}
	return &mcp.ResourceContents{URI: c.URI, MIMEType: c.MIMEType, Text: text, Meta: c.Meta}
}

// content bounds one block of a prompt message; the same value when
// nothing was cut.
func (b *budget) content(c mcp.Content) mcp.Content {
	switch v := c.(type) {
	case *mcp.TextContent:
		if text, cut := b.cut(v.Text); cut {
			return &mcp.TextContent{Text: text, Meta: v.Meta, Annotations: v.Annotations}
		}
	case *mcp.ImageContent:
		if !b.takeData(len(v.Data)) {
			text, _ := b.cut(omitted("an image", len(v.Data), v.MIMEType))
			return &mcp.TextContent{Text: text}
		}
	case *mcp.AudioContent:
		if !b.takeData(len(v.Data)) {
			text, _ := b.cut(omitted("audio", len(v.Data), v.MIMEType))
			return &mcp.TextContent{Text: text}
		}
	case *mcp.EmbeddedResource:
		if v.Resource != nil {
			if rc := b.contents(v.Resource); rc != v.Resource {
				return &mcp.EmbeddedResource{Resource: rc, Meta: v.Meta, Annotations: v.Annotations}
			}
		}
	}
	return c
}
