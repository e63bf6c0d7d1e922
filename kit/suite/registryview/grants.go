package registryview

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// GrantReader is the part of the registry's client a grant is read with.
type GrantReader interface {
	GetGrant(ctx context.Context, in *registryv1.GetGrantRequest, opts ...grpc.CallOption) (*registryv1.GetGrantResponse, error)
}

// Sees returns the workspaces caller may see. Only a driver whose
// credential states none (a certificate) needs the registry: its grant is
// read there, under ctx (the service's own identity), and no grant is no
// workspace. An error (UNAVAILABLE) means the registry could not be asked.
func Sees(ctx context.Context, reg GrantReader, caller identity.Identity) (identity.Workspaces, error) {
	if caller.Workspaces != nil || caller.Grade != identity.Driver {
		return caller.Resolve(nil), nil
	}
	res, err := reg.GetGrant(ctx, &registryv1.GetGrantRequest{Identity: caller.Name})
	switch status.Code(err) {
	case codes.OK:
	case codes.NotFound:
		return identity.Workspaces{}, nil
	default:
		return identity.Workspaces{}, status.Errorf(codes.Unavailable,
			"cannot read the grant of %q: the registry did not answer: %v", caller.Name, status.Convert(err).Message())
	}
	return identity.ParseWorkspaces(res.GetGrant().GetWorkspaces())
}
