package registry

import (
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/toolgroups"
)

// tokenSpec is a checked CreateTokenRequest.
type tokenSpec struct {
	grade      identity.Grade
	workspaces identity.Workspaces
	ttl        time.Duration
	groups     []string // sorted, without repeats
}

// checkTokenRequest refuses a token that may not be minted, naming the
// field (and the flag of `switchboard tokens create` that sets it).
func checkTokenRequest(req *registryv1.CreateTokenRequest, maxTTL time.Duration) (tokenSpec, error) {
	refuse := func(format string, a ...any) (tokenSpec, error) {
		return tokenSpec{}, status.Errorf(codes.InvalidArgument, "create token: "+format, a...)
	}
	if err := identity.CheckName(req.GetIdentity()); err != nil {
		return refuse("%v", err)
	}
	spec := tokenSpec{grade: identity.Driver, ttl: min(DefaultTokenTTL, maxTTL)}
	if req.GetGrade() != "" {
		g, err := identity.ParseGrade(req.GetGrade())
		if err != nil {
			return refuse("%v", err)
		}
		spec.grade = g
	}
	if spec.grade == identity.Service {
		return refuse(`grade "service" cannot be minted: a token is host, driver or admin; services have certificates`)
	}
	ws, err := identity.ParseWorkspaces(req.GetWorkspaces())
	if err != nil {
		return refuse("workspaces (--workspaces): %v", err)
	}
	if ws.Empty() && spec.grade != identity.Host && spec.grade != identity.Scrape {
		return refuse("%s token needs the workspaces it may see: name them (--workspaces dev,ops, or '*' for every workspace)", spec.grade.Article())
	}
	spec.workspaces = ws
	if req.Ttl != nil {
		if err := req.Ttl.CheckValid(); err != nil {
			return refuse("ttl (--ttl) is not a valid duration: %v", err)
		}
		if spec.ttl = req.Ttl.AsDuration(); spec.ttl <= 0 {
			return refuse("ttl (--ttl) %v is not positive: a token must work for some time", spec.ttl)
		}
		if spec.ttl > maxTTL {
			return refuse("ttl (--ttl) %v is longer than the %v a token may work here (the registry's --max-token-ttl)", spec.ttl, maxTTL)
		}
	}
	if spec.groups, err = tokenGroups(req.GetGroups(), spec.grade); err != nil {
		return refuse("%v", err)
	}
	if len(req.GetNote()) > maxNoteBytes {
		return refuse("the note is %d bytes; at most %d are kept", len(req.GetNote()), maxNoteBytes)
	}
	return spec, nil
}

// current is a stored token as this version reads it. Tokens minted before
// grades were split (grade "operator", which could do everything) are
// admins of every workspace, and tokens minted before expiries expire
// DefaultTokenTTL after their creation. The record is never changed in
// place: the view hands it out.
func current(tok *registryv1.Token) *registryv1.Token {
	if tok.GetGrade() != "operator" && tok.Expires != nil {
		return tok
	}
	tok = proto.CloneOf(tok)
	if tok.GetGrade() == "operator" {
		tok.Grade = string(identity.Admin)
		tok.Workspaces = []string{identity.EveryWorkspace}
	}
	if tok.Expires == nil {
		tok.Expires = timestamppb.New(tok.GetCreated().AsTime().Add(DefaultTokenTTL))
	}
	return tok
}

// tokenGroups checks the tool groups a token is limited to (docs/security.md).
// A group need not exist yet: a limit to a group that does not exist grants
// nothing, and the admin may define it later.
func tokenGroups(groups []string, grade identity.Grade) ([]string, error) {
	if len(groups) == 0 {
		return nil, nil
	}
	if grade != identity.Driver {
		return nil, fmt.Errorf("groups (--groups) limit a driver token; %s token is not limited to tool groups", grade.Article())
	}
	if len(groups) > toolgroups.MaxTokenGroups {
		return nil, fmt.Errorf("groups (--groups) names %d groups; a token may be limited to at most %d", len(groups), toolgroups.MaxTokenGroups)
	}
	out := slices.Clone(groups)
	for _, g := range out {
		if err := toolgroups.CheckName(g); err != nil {
			return nil, fmt.Errorf("groups (--groups): %v", err)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
