package upstream

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resource updates (docs/mcp.md, "Resources and prompts"): a server that
// offers resources.subscribe is subscribed to every resource it lists, as
// each listing finds them, so the bridge hears its
// notifications/resources/updated (OnResourceUpdated) whoever asks and on
// every replica that runs it. Subscriptions end with the SDK session; a
// new session is subscribed again as it is listed.

// subscribeListed subscribes cs to each listed resource it is not yet
// subscribed to: one resources/subscribe each before the stateless era, a
// subscriptions/listen in it (the SDK keeps it until the session ends),
// each asked aside so a listing never waits on them.
func (s *Session) subscribeListed(cs *mcp.ClientSession, resources []*mcp.Resource) {
	caps := cs.InitializeResult().Capabilities
	if s.opts.OnResourceUpdated == nil || caps == nil || caps.Resources == nil || !caps.Resources.Subscribe {
		return
	}
	s.mu.Lock()
	if s.subscribedOn != cs {
		s.subscribedOn, s.subscribed = cs, map[string]bool{}
	}
	var todo []string
	for _, r := range resources {
		if !s.subscribed[r.URI] {
			s.subscribed[r.URI] = true
			todo = append(todo, r.URI)
		}
	}
	s.mu.Unlock()
	for _, uri := range todo {
		go func() {
			err := cs.Subscribe(s.life, &mcp.SubscribeParams{URI: uri})
			if err == nil {
				return
			}
			s.mu.Lock()
			current := s.subscribedOn == cs
			if current {
				delete(s.subscribed, uri) // the next listing tries again
			}
			s.mu.Unlock()
			if current && s.life.Err() == nil {
				s.opts.OnFault(fmt.Sprintf("subscribing to resource %q failed: %v", uri, err))
			}
		}()
	}
}

// onResourceUpdated passes a server's notifications/resources/updated on,
// for a resource it lists: anything else is not the bridge's to announce.
func (s *Session) onResourceUpdated(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	if req.Params == nil || s.opts.OnResourceUpdated == nil {
		return
	}
	uri := req.Params.URI
	s.mu.Lock()
	listed := s.subscribed[uri]
	s.mu.Unlock()
	if listed {
		s.opts.OnResourceUpdated(uri)
	}
}
