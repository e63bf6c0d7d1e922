package catalog

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestAnAnswerIsBoundedAcrossItsParts(t *testing.T) {
	t.Parallel()
	half := strings.Repeat("a", MaxText/2)
	tests := []struct {
		name      string
		contents  []*mcp.ResourceContents
		texts     []string // each part's text, or its marker's start
		truncated []bool
	}{
		{"text within the bound passes whole",
			[]*mcp.ResourceContents{{URI: "x", Text: half}},
			[]string{half}, []bool{false}},
		{"two parts share the bound: the second is cut",
			[]*mcp.ResourceContents{{URI: "x", Text: half}, {URI: "y", Text: half + "bbbb"}},
			[]string{half, half + "\n[truncated by Switchboard: 4 more bytes not shown; the bridge passes at most 1048576 bytes of text per answer]"},
			[]bool{false, true}},
		{"a cut never splits a character",
			[]*mcp.ResourceContents{{URI: "x", Text: strings.Repeat("a", MaxText-1) + "éé"}},
			[]string{strings.Repeat("a", MaxText-1) + "\n[truncated by Switchboard: 4 more bytes not shown; the bridge passes at most 1048576 bytes of text per answer]"},
			[]bool{true}},
		{"a blob over the bound becomes a sentence",
			[]*mcp.ResourceContents{{URI: "x", MIMEType: "image/png", Blob: make([]byte, MaxData+1)}},
			[]string{"[truncated by Switchboard: a blob of 1048577 bytes (image/png) not shown; the bridge passes at most 1048576 bytes of data per answer]"},
			[]bool{true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Read(&mcp.ReadResourceResult{Contents: tt.contents})
			if len(got.GetContents()) != len(tt.texts) {
				t.Fatalf("%d parts, want %d", len(got.GetContents()), len(tt.texts))
			}
			for i, c := range got.GetContents() {
				if c.GetText() != tt.texts[i] || c.GetTruncated() != tt.truncated[i] || c.GetUri() != tt.contents[i].URI {
					t.Fatalf("part %d: uri %q, truncated %v, text ending %q", i, c.GetUri(), c.GetTruncated(), c.GetText()[max(0, len(c.GetText())-120):])
				}
			}
		})
	}
}

func TestAPromptsImageOverTheBoundBecomesASentence(t *testing.T) {
	t.Parallel()
	res := &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
		{Role: "user", Content: &mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, MaxData+1)}},
		{Role: "user", Content: &mcp.TextContent{Text: "look"}},
	}}
	got, err := Prompt(res)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"content":{"type":"text","text":"[truncated by Switchboard: an image of 1048577 bytes (image/png) not shown; the bridge passes at most 1048576 bytes of data per answer]"},"role":"user"}`
	if !got.GetTruncated() || got.GetMessages()[0] != want || got.GetMessages()[1] != `{"content":{"type":"text","text":"look"},"role":"user"}` {
		t.Fatalf("truncated %v, messages %q", got.GetTruncated(), got.GetMessages())
	}
}
