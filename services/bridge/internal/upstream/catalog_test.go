package upstream

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The session lists the conformance server's catalog as it opens, forwards
// reads and prompts, and lists the prompts again when the server says they
// changed, in every mode: over stdio and HTTP with a session the
// notification comes on the session, statelessly on subscriptions/listen.
func TestTheSessionListsTheCatalogAndHearsItChange(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		ev := newEvents()
		opts := ev.options(t)
		var kinds []Kind
		opts.OnCatalog = func(k Kind) { ev.mu.Lock(); kinds = append(kinds, k); ev.mu.Unlock(); ev.poke() }
		s, _ := conformance(t, m, opts)
		c := s.Catalog()
		if !slices.ContainsFunc(c.Resources, func(r *mcp.Resource) bool { return r.URI == "test://static-text" }) ||
			len(c.Templates) != 1 || c.Templates[0].URITemplate != "test://template/{id}/data" ||
			!slices.ContainsFunc(c.Prompts, func(p *mcp.Prompt) bool { return p.Name == "test_simple_prompt" }) {
			t.Fatalf("catalog: %d resources, templates %v, %d prompts", len(c.Resources), c.Templates, len(c.Prompts))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		read, err := s.ReadResource(ctx, "test://static-text")
		if err != nil || read.Contents[0].Text != "This is the content of the static text resource." {
			t.Fatalf("ReadResource: %v, %v", read, err)
		}
		got, err := s.GetPrompt(ctx, "test_prompt_with_arguments", map[string]string{"arg1": "a", "arg2": "b"}, nil)
		if err != nil || got.Messages[0].Content.(*mcp.TextContent).Text != "Prompt with arguments: arg1='a', arg2='b'" {
			t.Fatalf("GetPrompt: %v, %v", got, err)
		}
		if res, err := s.Call(ctx, "test_trigger_prompt_change", []byte(`{}`), nil, "", nil); err != nil || res.IsError {
			t.Fatalf("trigger: %v, %v", res, err)
		}
		ev.await(t, "the prompts listed again", func(*events) bool {
			return slices.Contains(kinds, Prompts) &&
				slices.ContainsFunc(s.Catalog().Prompts, func(p *mcp.Prompt) bool { return p.Name == "__transient_prompt_for_list_changed" })
		})
	})
}
