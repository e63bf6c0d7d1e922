package mcpserve

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/retry"
	"github.com/switchboard-run/switchboard/kit/suite/pins"
	"github.com/switchboard-run/switchboard/kit/suite/registryview"
)

// listTimeout bounds reading every page of a listing.
const listTimeout = 10 * time.Second

// watch follows the workspace on WatchTools, reconnecting under the
// suite's default backoff (docs/design.md §5's timing: 0.5 s doubling to 30 s), and
// marks the mirror dirty whenever its tools may have changed. A stream that
// reached `synced` worked: its end starts a new run of failures.
func (m *Mirror) watch(ctx context.Context) {
	_ = retry.Loop{Policy: retry.Default, OnRetry: func(err error, wait time.Duration) {
		m.setErr(fmt.Errorf("the registry's tool watch ended: %s", status.Convert(err).Message()))
		m.log.Warn("the tool watch ended; reconnecting", "err", err, "in", wait)
	}}.Forever(ctx, m.follow)
}

// follow reads one WatchTools stream until it ends. The events themselves
// are not applied: the registry computes presented names (and keeps them
// stable), so after `synced` and after each change the mirror re-reads
// ListTools rather than repeating that logic here.
func (m *Mirror) follow(ctx context.Context) (synced bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := m.opts.Registry.WatchTools(m.opts.Self(ctx), &registryv1.WatchToolsRequest{Workspace: proto.String(m.ws)})
	if err != nil {
		return false, err
	}
	live := false // past the snapshot's `synced`: events are changes now
	for {
		ev, err := stream.Recv()
		if err != nil {
			return synced, err
		}
		switch ev.GetChange().(type) {
		case *registryv1.WatchToolsResponse_Synced:
			live, synced = true, true
			m.markDirty()
			m.markCatalogDirty()
		case *registryv1.WatchToolsResponse_Resync:
			live = false // a fresh snapshot follows, closed by `synced`
		case *registryv1.WatchToolsResponse_Advertised, *registryv1.WatchToolsResponse_Registered,
			*registryv1.WatchToolsResponse_Unregistered, *registryv1.WatchToolsResponse_Grouped, *registryv1.WatchToolsResponse_Pinned:
			if live {
				m.markDirty()
			}
			switch ev.GetChange().(type) {
			case *registryv1.WatchToolsResponse_Registered, *registryv1.WatchToolsResponse_Unregistered:
				m.markCatalogDirty() // the workspace's members changed, so whose catalog it serves did
			}
		}
		// Presence is not part of a tool listing: a busy host is absent and
		// must still get work (docs/design.md §1).
	}
}

func (m *Mirror) markDirty() {
	select {
	case m.dirty <- struct{}{}:
	default: // a re-read is pending already; it will see this change too
	}
}

// refresher re-reads the listing each time the mirror is marked dirty,
// retrying a failed read with backoff (or at once when a new change comes).
func (m *Mirror) refresher(ctx context.Context) {
	reread := retry.Loop{Policy: retry.Default, Wake: m.dirty, OnRetry: func(err error, wait time.Duration) {
		m.setErr(fmt.Errorf("listing the workspace's tools failed: %s", status.Convert(err).Message()))
		m.log.Warn("listing the workspace's tools failed; retrying", "err", err, "in", wait)
	}}
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.dirty:
		}
		if err := reread.Do(ctx, m.refresh); err != nil {
			return // only ctx's end stops the retries
		}
		m.readyOnce.Do(func() { close(m.ready) })
	}
}

// refresh lists the workspace's tools and groups and applies them.
func (m *Mirror) refresh(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	tools, err := registryview.Tools(m.opts.Self(ctx), m.opts.Registry, m.ws)
	switch {
	case status.Code(err) == codes.NotFound:
		// A workspace nobody registered a client in yet: no tools for now;
		// its first member's registration arrives on the watch.
		tools = nil
	case err != nil:
		return err
	}
	groups, err := m.listGroups(ctx)
	if err != nil {
		return err
	}
	held, err := m.listHeld(ctx)
	if err != nil {
		return err
	}
	m.applyAll(tools, groups, held)
	m.setErr(nil)
	return nil
}

// listHeld reads the workspace's tools a pin keeps from being served.
func (m *Mirror) listHeld(ctx context.Context) ([]*registryv1.Pin, error) {
	res, err := m.opts.Registry.ListPins(m.opts.Self(ctx), &registryv1.ListPinsRequest{Workspace: m.ws})
	switch {
	case status.Code(err) == codes.NotFound:
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("listing the pins of workspace %q: %w", m.ws, err)
	}
	var held []*registryv1.Pin
	for _, p := range res.GetPins() {
		if !pins.Served(p.GetState()) {
			held = append(held, p)
		}
	}
	return held, nil
}

// heldRefusal is the sentence refusing a call to client's tool (any
// client's, when client is ""), presented as name, when a pin holds it;
// "" when none does.
func (m *Mirror) heldRefusal(client, name string) string {
	m.gmu.Lock()
	defer m.gmu.Unlock()
	for _, p := range m.held {
		if (client == "" && p.GetPresentedName() == name) || (client != "" && p.GetClient() == client && p.GetTool() == name) {
			return pins.Refusal(p)
		}
	}
	return ""
}
