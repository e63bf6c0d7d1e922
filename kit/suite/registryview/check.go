package registryview

import (
	"context"
	"errors"
	"iter"
	"maps"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/pins"
)

// Sees returns the workspaces caller may see (docs/design.md §4): what its
// credential states, else by grade — for a driver certificate its grant
// record, from the view, or confirmed with the registry when the view has
// none. An error means the registry could not be asked.
func (v *View) Sees(ctx context.Context, caller identity.Identity) (identity.Workspaces, error) {
	if caller.Workspaces == nil && caller.Grade == identity.Driver {
		v.mu.RLock()
		w, ok := v.st.grants[caller.Name]
		v.mu.RUnlock()
		if ok {
			return w, nil
		}
	}
	return Sees(v.caller.AsSelf(ctx), v.reg, caller)
}

// Reachable reports whether client advertises tool right now, sits in a
// workspace sees holds (any client, when sees is every workspace), and is
// served in one of those: a tool its pin holds in each of them is refused
// with the pin's sentence (docs/security.md, "Tool pins"). A miss or a hold
// in the view is confirmed with the registry; an error means the registry
// could not be asked, or the refusal.
func (v *View) Reachable(ctx context.Context, client, tool string, sees identity.Workspaces) (bool, error) {
	v.mu.RLock()
	_, advertised := v.st.tools[client][tool]
	member := v.memberLocked(client, sees)
	held := v.st.heldFor(client, tool, sees)
	v.mu.RUnlock()
	if advertised && member && held == nil {
		return true, nil
	}
	res, err := v.confirm(ctx, client, sees)
	if err != nil {
		return false, status.Errorf(codes.Unavailable, "cannot confirm that %q advertises %q: the registry did not answer: %v", client, tool, err)
	}
	if res == nil || !slices.ContainsFunc(res.GetRow().GetTools(), func(t *registryv1.Tool) bool { return t.GetName() == tool }) {
		return false, nil
	}
	confirmed := newState()
	for _, ws := range res.GetWorkspaces() {
		confirmed.join(client, ws)
	}
	for _, p := range res.GetHeld() {
		confirmed.pin(p)
	}
	if p := confirmed.heldFor(client, tool, sees); p != nil {
		return false, status.Error(codes.FailedPrecondition, pins.Refusal(p))
	}
	return true, nil
}

// Visible reports whether client sits in a workspace sees holds: always,
// when sees is every workspace (whether the registry knows client or not —
// the caller's own records say whether it exists). A miss in the view is
// confirmed with the registry; an error means the registry could not be
// asked.
func (v *View) Visible(ctx context.Context, client string, sees identity.Workspaces) (bool, error) {
	if sees.All() {
		return true, nil
	}
	if sees.Empty() {
		return false, nil
	}
	v.mu.RLock()
	member := v.memberLocked(client, sees)
	v.mu.RUnlock()
	if member {
		return true, nil
	}
	res, err := v.confirm(ctx, client, sees)
	if err != nil {
		return false, status.Errorf(codes.Unavailable, "cannot confirm the workspaces of client %q: the registry did not answer: %v", client, err)
	}
	return res != nil, nil
}

// memberLocked reports whether the view has client in a workspace sees
// holds; v.mu is held.
func (v *View) memberLocked(client string, sees identity.Workspaces) bool {
	return sees.All() || seesAny(sees, maps.Keys(v.st.joined[client]))
}

// confirm asks the registry for client: its state when it sits in a
// workspace sees holds, nil when it does not or the registry knows no such
// client. An error is the registry's sentence, for the caller to frame.
func (v *View) confirm(ctx context.Context, client string, sees identity.Workspaces) (*registryv1.GetClientResponse, error) {
	res, err := v.reg.GetClient(v.caller.AsSelf(ctx), &registryv1.GetClientRequest{Client: client})
	switch status.Code(err) {
	case codes.OK:
	case codes.NotFound:
		return nil, nil
	default:
		return nil, errors.New(status.Convert(err).Message())
	}
	if !sees.All() && !seesAny(sees, slices.Values(res.GetWorkspaces())) {
		return nil, nil
	}
	return res, nil
}

// seesAny reports whether sees holds any of workspaces.
func seesAny(sees identity.Workspaces, workspaces iter.Seq[string]) bool {
	for ws := range workspaces {
		if sees.Sees(ws) {
			return true
		}
	}
	return false
}

// RecordsIO reports whether workspace ws's audit trail records inputs
// and outputs.
func (v *View) RecordsIO(ws string) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.st.recordIO[ws]
}

// WorkspaceOf returns client's workspace as the view knows it: the first
// by name when it is in several, "" when in none.
func (v *View) WorkspaceOf(client string) string {
	v.mu.RLock()
	defer v.mu.RUnlock()
	first := ""
	for ws := range v.st.joined[client] {
		if first == "" || ws < first {
			first = ws
		}
	}
	return first
}
