package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resource subscriptions (docs/mcp.md, "Resources and prompts"): a client
// subscribes to a resource the view serves, and the SDK keeps who is
// subscribed to what; the bridge subscribes to every resource of a server
// that offers it and tells its catalog watch of each update, which the
// mirror passes to the views serving that resource.

// subscribe accepts a subscription to a resource the view lists.
func (v *view) subscribe(_ context.Context, req *mcp.SubscribeRequest) error {
	uri := ""
	if req.Params != nil {
		uri = req.Params.URI
	}
	v.mu.RLock()
	_, ok := v.cat.resources[uri]
	v.mu.RUnlock()
	if !ok {
		data, _ := json.Marshal(map[string]string{"uri": uri})
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Data: data, Message: fmt.Sprintf(
			"no resource %q is served in workspace %q%s right now, so none can be subscribed to; list resources/list for the URIs in force", uri, v.m.ws, v.inGroup())}
	}
	return nil
}

// unsubscribe ends a subscription; the SDK forgets it, whatever the URI.
func (v *view) unsubscribe(context.Context, *mcp.UnsubscribeRequest) error { return nil }

// notifyTimeout bounds telling the subscribers of one update, so a slow
// client does not hold the catalog watch.
const notifyTimeout = 5 * time.Second

// resourceUpdated tells the subscribers of uri, in every view serving it
// from client, that it changed.
func (m *Mirror) resourceUpdated(ctx context.Context, client, uri string) {
	ctx, cancel := context.WithTimeout(ctx, notifyTimeout)
	defer cancel()
	m.gmu.Lock()
	views := make([]*view, 0, len(m.groups)+1)
	views = append(views, m.all)
	for _, v := range m.groups {
		views = append(views, v)
	}
	m.gmu.Unlock()
	for _, v := range views {
		v.mu.RLock()
		e, ok := v.cat.resources[uri]
		v.mu.RUnlock()
		if ok && e.client == client {
			_ = v.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
		}
	}
}
