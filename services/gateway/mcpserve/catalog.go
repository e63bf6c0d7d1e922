package mcpserve

import (
	"context"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/lib/retry"
	"github.com/switchboard-run/switchboard/kit/suite/registryview"
)

// The catalog (docs/mcp.md, "Resources and prompts"): the resources,
// resource templates and prompts of the MCP servers mounted on the bridge
// whose clients are members of the workspace. Like the tools, it is kept
// by a watch and re-read on each change: the bridge's WatchCatalog says a
// mount or a server's catalog changed, the registry's WatchTools that the
// workspace's members did, and the refresher then lists every member's
// catalog again (as the gateway itself, once for every session) and applies
// it to each view (catalogview.go).

// clientCatalog is one mounted server's catalog, as the bridge lists it.
type clientCatalog struct {
	resources []*bridgev1.Resource
	templates []*bridgev1.ResourceTemplate
	prompts   []*bridgev1.Prompt
}

// catalogSnap is the workspace's catalog, by client.
type catalogSnap map[string]*clientCatalog

// catalogWatch follows the bridge's WatchCatalog, reconnecting under the
// suite's backoff, and marks the catalog dirty at each event.
func (m *Mirror) catalogWatch(ctx context.Context) {
	_ = retry.Loop{Policy: retry.Default, OnRetry: func(err error, wait time.Duration) {
		m.log.Warn("the bridge's catalog watch ended; reconnecting", "err", err, "in", wait)
	}}.Forever(ctx, func(ctx context.Context) (bool, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stream, err := m.opts.Bridge.WatchCatalog(m.opts.Self(ctx), &bridgev1.WatchCatalogRequest{})
		if err != nil {
			return false, err
		}
		synced := false
		for {
			ev, err := stream.Recv()
			if err != nil {
				return synced, err
			}
			if ev.GetChange() == bridgev1.CatalogChange_CATALOG_CHANGE_RESOURCE_UPDATED {
				m.resourceUpdated(ctx, ev.GetClient(), ev.GetUri()) // the listing stands
				continue
			}
			synced = synced || ev.GetChange() == bridgev1.CatalogChange_CATALOG_CHANGE_SYNCED
			m.markCatalogDirty()
		}
	})
}

func (m *Mirror) markCatalogDirty() {
	if m.opts.Bridge == nil {
		return
	}
	select {
	case m.catDirty <- struct{}{}:
	default:
	}
}

// catalogRefresher re-reads the catalog each time it is marked dirty,
// retrying a failed read with backoff (or at once on a new change).
func (m *Mirror) catalogRefresher(ctx context.Context) {
	reread := retry.Loop{Policy: retry.Default, Wake: m.catDirty, OnRetry: func(err error, wait time.Duration) {
		m.log.Warn("listing the workspace's resources and prompts failed; retrying", "err", err, "in", wait)
	}}
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.catDirty:
		}
		if err := reread.Do(ctx, m.refreshCatalog); err != nil {
			return
		}
	}
}

// refreshCatalog lists the catalog of each member of the workspace that
// is mounted on the bridge and applies it. A member the bridge does not
// mount (a local tool host) has none; one the bridge cannot answer for now
// (not running, or exclusive on another replica) is left out until the
// watch says it changed.
func (m *Mirror) refreshCatalog(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	self := m.opts.Self(ctx)
	rows, err := registryview.Clients(self, m.opts.Registry, m.ws)
	switch {
	case status.Code(err) == codes.NotFound:
		rows = nil
	case err != nil:
		return err
	}
	snap := catalogSnap{}
	for _, row := range rows {
		client := row.GetClient()
		c, err := m.listClient(self, client)
		switch status.Code(err) {
		case codes.OK:
			snap[client] = c
		case codes.NotFound:
		case codes.Unavailable, codes.FailedPrecondition:
			m.log.Info("a mounted server's resources and prompts are not served for now", "client", client, "why", status.Convert(err).Message())
		default:
			return fmt.Errorf("listing the resources and prompts of %q: %w", client, err)
		}
	}
	m.applyCatalog(snap)
	return nil
}

func (m *Mirror) listClient(ctx context.Context, client string) (*clientCatalog, error) {
	res, err := m.opts.Bridge.ListResources(ctx, &bridgev1.ListResourcesRequest{Client: client})
	if err != nil {
		return nil, err
	}
	tpl, err := m.opts.Bridge.ListResourceTemplates(ctx, &bridgev1.ListResourceTemplatesRequest{Client: client})
	if err != nil {
		return nil, err
	}
	pr, err := m.opts.Bridge.ListPrompts(ctx, &bridgev1.ListPromptsRequest{Client: client})
	if err != nil {
		return nil, err
	}
	return &clientCatalog{resources: res.GetResources(), templates: tpl.GetTemplates(), prompts: pr.GetPrompts()}, nil
}

// applyCatalog puts a catalog in every view.
func (m *Mirror) applyCatalog(snap catalogSnap) {
	m.gmu.Lock()
	defer m.gmu.Unlock()
	m.cat = snap
	m.all.applyCatalog(snap)
	for _, v := range m.groups {
		v.applyCatalog(snap)
	}
}

// sortedClients is snap's clients in name order: where two servers offer
// the same URI, the first in this order serves it.
func (snap catalogSnap) sortedClients() []string {
	out := make([]string, 0, len(snap))
	for c := range snap {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}
