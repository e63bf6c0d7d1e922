package bridge

import (
	"context"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// A mounted server is seen through its client's workspaces, by the rule the
// mailbox's Invoke applies (docs/design.md §4, docs/security.md): a caller
// sees a server whose client sits in a workspace it may see — every one
// for an admin or service certificate and in dev mode, a token's for its
// bearer, a driver certificate's grant. Outside them the server is absent,
// refused with the sentence of a client nothing is mounted as. The
// memberships and grants come from the bridge's watch-fed copy of the
// registry (kit/suite/registryview); a miss is confirmed with the registry.

// absent is the refusal of a client no server is mounted as, and of one
// the caller may not see: one sentence, so it tells nothing of the second.
func absent(client string) error {
	return status.Errorf(codes.NotFound, "no MCP server is mounted as %q", client)
}

// sees returns the workspaces the caller of ctx may see.
func (s *Service) sees(ctx context.Context) (identity.Workspaces, error) {
	caller, err := identity.Caller(ctx)
	if err != nil {
		return identity.Workspaces{}, err
	}
	return s.view.Sees(ctx, caller)
}

// visible refuses client as absent when it sits in no workspace sees holds;
// an error of the registry is UNAVAILABLE.
func (s *Service) visible(ctx context.Context, client string, sees identity.Workspaces) error {
	ok, err := s.view.Visible(ctx, client, sees)
	switch {
	case err != nil:
		return err
	case !ok:
		return absent(client)
	}
	return nil
}

// checkVisible is visible for the caller of ctx.
func (s *Service) checkVisible(ctx context.Context, client string) error {
	sees, err := s.sees(ctx)
	if err != nil {
		return err
	}
	return s.visible(ctx, client, sees)
}

// visibleEntries lists this replica's entries whose clients sit in a
// workspace sees holds, sorted by client.
func (s *Service) visibleEntries(ctx context.Context, sees identity.Workspaces) ([]*entry, error) {
	s.mu.Lock()
	entries := make([]*entry, 0, len(s.entries))
	for _, e := range s.entries {
		entries = append(entries, e)
	}
	s.mu.Unlock()
	slices.SortFunc(entries, func(a, b *entry) int { return strings.Compare(a.client, b.client) })
	out := entries[:0]
	for _, e := range entries {
		ok, err := s.view.Visible(ctx, e.client, sees)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, e)
		}
	}
	return out, nil
}
