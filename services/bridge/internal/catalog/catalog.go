// Package catalog turns what a mounted MCP server lists and answers besides
// tools — resources, resource templates, prompts, a read resource, a got
// prompt — into the bridge's messages, bounded (docs/mcp.md, "Resources and
// prompts"): definitions travel as the server's JSON, and contents beyond
// MaxText characters of text or MaxData bytes of data per answer are cut
// with a marker that says so.
package catalog

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/proto"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/services/bridge/internal/results"
)

// Resources maps a listing. A definition that does not encode (it came
// from JSON, so it always does) is left out.
func Resources(list []*mcp.Resource) []*bridgev1.Resource {
	out := make([]*bridgev1.Resource, 0, len(list))
	for _, r := range list {
		if def, err := definition(r); err == nil {
			out = append(out, &bridgev1.Resource{Uri: r.URI, Name: r.Name, Definition: def})
		}
	}
	return out
}

// Templates maps a listing of resource templates.
func Templates(list []*mcp.ResourceTemplate) []*bridgev1.ResourceTemplate {
	out := make([]*bridgev1.ResourceTemplate, 0, len(list))
	for _, t := range list {
		if def, err := definition(t); err == nil {
			out = append(out, &bridgev1.ResourceTemplate{UriTemplate: t.URITemplate, Name: t.Name, Definition: def})
		}
	}
	return out
}

// Prompts maps a listing of prompts.
func Prompts(list []*mcp.Prompt) []*bridgev1.Prompt {
	out := make([]*bridgev1.Prompt, 0, len(list))
	for _, p := range list {
		if def, err := definition(p); err == nil {
			out = append(out, &bridgev1.Prompt{Name: p.Name, Definition: def})
		}
	}
	return out
}

func definition(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// Read maps a resources/read result, bounded.
func Read(res *mcp.ReadResourceResult) *bridgev1.ReadResourceResponse {
	b := newBudget()
	out := &bridgev1.ReadResourceResponse{}
	for _, c := range res.Contents {
		if len(out.Contents) == MaxParts {
			break
		}
		if c == nil {
			continue
		}
		rc := b.contents(c)
		p := &bridgev1.ResourceContents{Uri: rc.URI, MimeType: rc.MIMEType, Truncated: rc != c}
		if rc.Blob != nil {
			p.Content = &bridgev1.ResourceContents_Blob{Blob: rc.Blob}
		} else {
			p.Content = &bridgev1.ResourceContents_Text{Text: rc.Text}
		}
		if len(rc.Meta) > 0 {
			if m, err := json.Marshal(rc.Meta); err == nil {
				p.Meta = string(m)
			}
		}
		out.Contents = append(out.Contents, p)
	}
	return out
}

// PromptInput maps a prompts/get result that asks the client for input
// (input_required): its requests and state, whole, less the server's
// identity (the endpoint names itself).
func PromptInput(res *mcp.GetPromptResult) (*bridgev1.GetPromptResponse, error) {
	b, err := json.Marshal(&mcp.GetPromptResult{Meta: results.WithoutServerInfo(res.Meta), InputRequests: res.InputRequests, RequestState: res.RequestState})
	if err != nil {
		return nil, fmt.Errorf("the server's input request could not be encoded: %w", err)
	}
	return &bridgev1.GetPromptResponse{InputRequired: proto.String(string(b))}, nil
}

// Prompt maps a prompts/get result, bounded.
func Prompt(res *mcp.GetPromptResult) (*bridgev1.GetPromptResponse, error) {
	b := newBudget()
	out := &bridgev1.GetPromptResponse{Description: res.Description}
	for _, m := range res.Messages {
		if len(out.Messages) == MaxParts {
			out.Truncated = true
			break
		}
		if m == nil {
			continue
		}
		bounded := &mcp.PromptMessage{Role: m.Role, Content: b.content(m.Content)}
		out.Truncated = out.Truncated || bounded.Content != m.Content
		j, err := json.Marshal(bounded)
		if err != nil {
			return nil, fmt.Errorf("the server's prompt message could not be encoded: %w", err)
		}
		out.Messages = append(out.Messages, string(j))
	}
	return out, nil
}
