package registry

import (
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/identity"
)

// tokenSpec is a checked CreateTokenRequest.
type tokenSpec struct {
	grade      identity.Grade
	workspaces identity.Workspaces
	ttl        time.Duration
}

// checkTokenRequest refuses a token that may not be minted, naming the
// field (and the flag of `switchboard tokens create` that sets it).
func checkTokenRequest(req *registryv1.CreateTokenRequest) (tokenSpec, error) {
	refuse := func(format string, a ...any) (tokenSpec, error) {
		return tokenSpec{}, status.Errorf(codes.InvalidArgument, "create token: "+format, a...)
	}
	if err := identity.CheckName(req.GetIdentity()); err != nil {
		return refuse("%v", err)
	}
	spec := tokenSpec{grade: identity.Driver, ttl: DefaultTokenTTL}
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
	if ws.Empty() && spec.grade != identity.Host {
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
