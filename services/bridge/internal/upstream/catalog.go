package upstream

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server's catalog: the resources, resource templates and prompts it
// lists. The session lists them (every page, bounded) when it opens and
// again after the server's notifications/resources/list_changed or
// notifications/prompts/list_changed; reads and prompts are forwarded to
// the session (read.go). A server without the capability lists nothing.

// MaxCatalog bounds each of the resources, templates and prompts read from
// a server's listing, all pages together; a server listing more is cut
// there, with a fault.
const MaxCatalog = 1_000

// Kind says which part of a catalog changed.
type Kind int

// The parts of a catalog, as OnCatalog reports them.
const (
	// Resources are the resources and the resource templates.
	Resources Kind = 1 << iota
	// Prompts are the prompts.
	Prompts
)

// Catalog is what a server lists besides its tools.
type Catalog struct {
	Resources []*mcp.Resource
	Templates []*mcp.ResourceTemplate
	Prompts   []*mcp.Prompt
}

// listCatalog reads the parts of the catalog kinds names that the server's
// capabilities offer, into c. A failed part is kept as it was and reported
// as a fault: resources and prompts are not worth ending a session over.
func (s *Session) listCatalog(ctx context.Context, cs *mcp.ClientSession, kinds Kind, c *Catalog) {
	caps := cs.InitializeResult().Capabilities
	if caps == nil {
		caps = &mcp.ServerCapabilities{}
	}
	if kinds&Resources != 0 && caps.Resources != nil {
		res, err := collect(cs.Resources(ctx, nil), "resources", s.opts.OnFault)
		if err == nil {
			var tpl []*mcp.ResourceTemplate
			if tpl, err = collect(cs.ResourceTemplates(ctx, nil), "resource templates", s.opts.OnFault); err == nil {
				c.Resources, c.Templates = res, tpl
			}
		}
		if err != nil && s.life.Err() == nil {
			s.opts.OnFault(fmt.Sprintf("listing resources failed: %v", err))
		}
	}
	if kinds&Prompts != 0 && caps.Prompts != nil {
		p, err := collect(cs.Prompts(ctx, nil), "prompts", s.opts.OnFault)
		if err == nil {
			c.Prompts = p
		} else if s.life.Err() == nil {
			s.opts.OnFault(fmt.Sprintf("listing prompts failed: %v", err))
		}
	}
}

// collect reads every page of a listing, at most MaxCatalog items.
func collect[T any](seq func(func(T, error) bool), what string, fault func(string)) ([]T, error) {
	var out []T
	for v, err := range seq {
		if err != nil {
			return nil, err
		}
		if len(out) == MaxCatalog {
			fault(fmt.Sprintf("the server lists more than %d %s; the rest were not read", MaxCatalog, what))
			break
		}
		out = append(out, v)
	}
	return out, nil
}

func (s *Session) onResourcesChanged(context.Context, *mcp.ResourceListChangedRequest) {
	s.recatalog(Resources)
}

func (s *Session) onPromptsChanged(context.Context, *mcp.PromptListChangedRequest) {
	s.recatalog(Prompts)
}

// recatalog asks catalogLoop to list kinds again. Like onListChanged it
// runs on the SDK's reading goroutine, which a listing needs: the work is
// handed over, and a burst coalesces.
func (s *Session) recatalog(kinds Kind) {
	s.mu.Lock()
	s.pending |= kinds
	s.mu.Unlock()
	select {
	case s.catalogWake <- struct{}{}:
	default:
	}
}

func (s *Session) catalogLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.life.Done():
			return
		case <-s.catalogWake:
		}
		s.mu.Lock()
		cs, gen, kinds, c := s.cs, s.gen, s.pending, s.catalog
		s.pending = 0
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(s.life, listTimeout)
		s.listCatalog(ctx, cs, kinds, &c)
		cancel()
		s.mu.Lock()
		current := gen == s.gen
		if current {
			s.catalog = c
		}
		s.mu.Unlock()
		if current {
			s.opts.OnCatalog(kinds)
			s.subscribeListed(cs, c.Resources)
		}
	}
}

// Catalog returns the server's resources, templates and prompts, as last
// listed. The slices are shared: callers must not change them.
func (s *Session) Catalog() Catalog {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.catalog
}

// ReadResource forwards resources/read to the server and bounds what it
// answers (Bound).
func (s *Session) ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	return retried(s, ctx, func(cs *mcp.ClientSession) (*mcp.ReadResourceResult, error) {
		return cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	})
}

// GetPrompt forwards prompts/get to the server, with what the driver's
// client sent beyond name and arguments (from, when not nil), as Call does.
func (s *Session) GetPrompt(ctx context.Context, name string, args map[string]string, from *ClientParams) (*mcp.GetPromptResult, error) {
	return retried(s, ctx, func(cs *mcp.ClientSession) (*mcp.GetPromptResult, error) {
		p := &mcp.GetPromptParams{Name: name, Arguments: args}
		if from != nil {
			p.InputResponses, p.RequestState = from.InputResponses, from.RequestState
		}
		if cs.InitializeResult().ProtocolVersion >= statelessRevision {
			p.Meta = mcp.Meta{mcp.MetaKeyClientCapabilities: from.capabilities()}
		}
		return cs.GetPrompt(ctx, p)
	})
}

// Complete forwards completion/complete to the server. A server that does
// not declare completions is not asked: it has no suggestions.
func (s *Session) Complete(ctx context.Context, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	return retried(s, ctx, func(cs *mcp.ClientSession) (*mcp.CompleteResult, error) {
		if caps := cs.InitializeResult().Capabilities; caps == nil || caps.Completions == nil {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
		}
		return cs.Complete(ctx, p)
	})
}

// retried runs f on the current session, and once more on a new one when
// an HTTP server had forgotten the session (404): it never saw the request.
func retried[T any](s *Session, ctx context.Context, f func(*mcp.ClientSession) (T, error)) (T, error) {
	s.mu.Lock()
	cs, gen := s.cs, s.gen
	s.mu.Unlock()
	res, err := f(cs)
	if err == nil || !s.http || !errors.Is(err, mcp.ErrSessionMissing) || ctx.Err() != nil {
		return res, err
	}
	if rerr := s.reinit(gen); rerr != nil {
		return res, err
	}
	s.mu.Lock()
	cs = s.cs
	s.mu.Unlock()
	return f(cs)
}
