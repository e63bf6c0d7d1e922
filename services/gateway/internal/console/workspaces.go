package console

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/registryview"
)

// snapshotWait bounds the wait for a watch's snapshot: the registry sends
// it at once, so a long wait means a backend is unwell.
const snapshotWait = 10 * time.Second

// whoami shows who the console acts as.
func (c *Console) whoami(w http.ResponseWriter, r *http.Request) {
	_, id, ok := caller(w, r)
	if !ok {
		return
	}
	render(w, "whoami", id)
}

// workspaceRow is one workspace the caller sees.
type workspaceRow struct {
	Name    string
	Clients int
}

// workspaces lists the workspaces the caller sees: those that hold a
// registered client, as a watch of everything shows them to this caller
// (its grants decide, in the registry).
func (c *Console) workspaces(ctx context.Context, _ *http.Request) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, snapshotWait)
	defer cancel()
	members, err := c.memberships(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([]workspaceRow, 0, len(members))
	for ws, n := range members {
		rows = append(rows, workspaceRow{Name: ws, Clients: n})
	}
	slices.SortFunc(rows, func(a, b workspaceRow) int { return strings.Compare(a.Name, b.Name) })
	return rows, nil
}

// memberships reads a watch of everything up to the end of its snapshot
// and counts each workspace's clients.
func (c *Console) memberships(ctx context.Context) (map[string]int, error) {
	stream, err := c.Registry.WatchTools(ctx, &registryv1.WatchToolsRequest{})
	if err != nil {
		return nil, err
	}
	members := map[string]int{}
	for {
		ev, err := stream.Recv()
		switch {
		case errors.Is(err, io.EOF):
			return members, nil
		case err != nil:
			return nil, err
		case ev.GetSynced() != nil:
			return members, nil
		case ev.GetRegistered() != nil:
			members[ev.GetRegistered().GetWorkspace()]++
		}
	}
}

// workspaceView is one workspace's clients and tools.
type workspaceView struct {
	Name    string
	Clients []*registryv1.ClientRow
	Tools   []*registryv1.PresentedTool
}

// workspace shows a workspace's clients and tools; its script then opens
// the live stream, which re-renders both on every change.
func (c *Console) workspace(ctx context.Context, r *http.Request) (any, error) {
	return c.readWorkspace(ctx, r.PathValue("workspace"))
}

// readWorkspace lists a workspace as the caller: an unknown workspace, or
// one outside the caller's grants, is the registry's refusal.
func (c *Console) readWorkspace(ctx context.Context, ws string) (workspaceView, error) {
	clients, err := registryview.Clients(ctx, c.Registry, ws)
	if err != nil {
		return workspaceView{}, err
	}
	tools, err := registryview.Tools(ctx, c.Registry, ws)
	if err != nil {
		return workspaceView{}, err
	}
	return workspaceView{Name: ws, Clients: clients, Tools: tools}, nil
}
