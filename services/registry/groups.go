package registry

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/names"
	"github.com/switchboard-run/switchboard/kit/suite/toolgroups"
	"github.com/switchboard-run/switchboard/services/registry/internal/watch"
)

// Tool groups (docs/mcp.md, "Tool groups"): named subsets of a workspace's
// tools, kept in the records bucket like every other record, so every
// replica serves them and the workspace's watchers hear each change.

// unknownGroup answers a group that does not exist, or one in a workspace
// the caller may not see: the same bytes (docs/design.md §4).
func unknownGroup(ws, name string) error {
	return status.Errorf(codes.NotFound, "unknown group %q in workspace %q", name, ws)
}

// setGroup puts a group record in force (nil removes it). Call with s.mu
// held.
func (s *state) setGroup(ws, name string, rec *registryv1.Group) {
	if rec == nil {
		delete(s.groups[ws], name)
		if len(s.groups[ws]) == 0 {
			delete(s.groups, ws)
		}
		return
	}
	if s.groups[ws] == nil {
		s.groups[ws] = map[string]*registryv1.Group{}
	}
	s.groups[ws][name] = rec
}

// SetGroup checks a group and stores it, replacing any earlier group of its
// name, and answers once this replica's view holds it.
func (s *Service) SetGroup(ctx context.Context, req *registryv1.SetGroupRequest) (*registryv1.SetGroupResponse, error) {
	g := proto.CloneOf(req.GetGroup())
	if g == nil {
		return nil, status.Error(codes.InvalidArgument, "set group: the request holds no group")
	}
	ws := g.GetWorkspace()
	if err := names.CheckWorkspace(ws); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "set group: %v", err)
	}
	rule, err := toolgroups.Compile(g)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "set group: %v", err)
	}
	s.st.mu.Lock()
	_, exists := s.st.groups[ws][g.GetName()]
	count := len(s.st.groups[ws])
	err = rule.CheckAliases(g.GetName(), func(n string) bool {
		p, ok := s.st.byName[n]
		return ok && s.st.members[ws][p.client]
	})
	s.st.mu.Unlock()
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "set group: %v", err)
	}
	if !exists && count >= toolgroups.MaxGroups {
		return nil, status.Errorf(codes.ResourceExhausted,
			"set group %q: workspace %q holds %d groups already, the most it may; delete one first", g.GetName(), ws, toolgroups.MaxGroups)
	}
	g.Updated = timestamppb.Now()
	rev, err := s.st.records.PutGroup(ctx, g)
	if err != nil {
		return nil, storeFailed("set group "+strconv.Quote(g.GetName())+" in workspace "+strconv.Quote(ws), err)
	}
	if err := s.st.waitApplied(ctx, rev); err != nil {
		return nil, err
	}
	s.st.act(ctx, "group.set", ws, g.GetName(), "patterns "+strings.Join(g.GetPatterns(), " "))
	return &registryv1.SetGroupResponse{Group: g}, nil
}

// GetGroup reads one group of a workspace the caller may see.
func (s *Service) GetGroup(ctx context.Context, req *registryv1.GetGroupRequest) (*registryv1.GetGroupResponse, error) {
	_, sees, err := s.st.caller(ctx)
	if err != nil {
		return nil, err
	}
	ws, name := req.GetWorkspace(), req.GetName()
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	g := s.st.groups[ws][name]
	if g == nil || !sees.Sees(ws) {
		return nil, unknownGroup(ws, name)
	}
	return &registryv1.GetGroupResponse{Group: g}, nil
}

// ListGroups lists the groups of a workspace the caller may see, sorted by
// name; a workspace without groups lists none.
func (s *Service) ListGroups(ctx context.Context, req *registryv1.ListGroupsRequest) (*registryv1.ListGroupsResponse, error) {
	_, sees, err := s.st.caller(ctx)
	if err != nil {
		return nil, err
	}
	ws := req.GetWorkspace()
	if err := names.CheckWorkspace(ws); err != nil || !sees.Sees(ws) {
		return nil, unknownWorkspace(ws)
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	out := &registryv1.ListGroupsResponse{Groups: make([]*registryv1.Group, 0, len(s.st.groups[ws]))}
	for _, name := range sortedKeys(s.st.groups[ws]) {
		out.Groups = append(out.Groups, s.st.groups[ws][name])
	}
	return out, nil
}

// DeleteGroup removes a group; its endpoint serves no tool from then on.
func (s *Service) DeleteGroup(ctx context.Context, req *registryv1.DeleteGroupRequest) (*registryv1.DeleteGroupResponse, error) {
	ws, name := req.GetWorkspace(), req.GetName()
	if names.CheckWorkspace(ws) != nil || toolgroups.CheckName(name) != nil {
		return nil, unknownGroup(ws, name)
	}
	s.st.mu.Lock()
	old := s.st.groups[ws][name]
	s.st.mu.Unlock()
	rev, ok, err := s.st.records.DeleteGroup(ctx, ws, name)
	if err != nil {
		return nil, storeFailed("delete group "+strconv.Quote(name)+" in workspace "+strconv.Quote(ws), err)
	}
	if !ok {
		return nil, unknownGroup(ws, name)
	}
	if err := s.st.waitApplied(ctx, rev); err != nil {
		return nil, err
	}
	if old == nil { // stored, but this view had not heard of it yet
		old = &registryv1.Group{Workspace: ws, Name: name}
	}
	s.st.act(ctx, "group.delete", ws, name, "")
	return &registryv1.DeleteGroupResponse{Group: old}, nil
}

// publishGrouped announces a group as it now stands (removed: no patterns)
// to the watchers of its workspace.
func (s *state) publishGrouped(ws, name string) {
	g := s.groups[ws][name]
	if g == nil {
		g = &registryv1.Group{Workspace: ws, Name: name}
	}
	s.hub.Publish(groupedEvent(s.applied, g), toWorkspace(ws))
}

func groupedEvent(rev uint64, g *registryv1.Group) *watch.Event {
	return &watch.Event{Revision: rev, Change: &registryv1.WatchToolsResponse_Grouped{Grouped: g}}
}

// groupEvents are a snapshot's groups: those of workspace, or ("") of
// every workspace sees holds. Call with s.mu held.
func (s *state) groupEvents(rev uint64, workspace string, sees identity.Workspaces) []*watch.Event {
	var out []*watch.Event
	for _, ws := range sortedKeys(s.groups) {
		if ws != workspace && (workspace != "" || !sees.Sees(ws)) {
			continue
		}
		for _, name := range sortedKeys(s.groups[ws]) {
			out = append(out, groupedEvent(rev, s.groups[ws][name]))
		}
	}
	return out
}

// setGroupsFile sets every group of a declarative groups file (--groups),
// checked as SetGroup checks a group; the first refusal stops the start.
func (s *Service) setGroupsFile(ctx context.Context, path string) error {
	groups, err := toolgroups.LoadFile(path)
	if err != nil {
		return err
	}
	for _, g := range groups {
		if _, err := s.SetGroup(ctx, &registryv1.SetGroupRequest{Group: g}); err != nil {
			return fmt.Errorf("the groups file %s: %s", path, status.Convert(err).Message())
		}
	}
	s.log.Info("tool groups set from the groups file", "file", path, "groups", len(groups))
	return nil
}
