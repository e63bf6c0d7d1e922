package console

import (
	"context"
	"net/http"
	"net/url"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/pins"
)

// pinsView is a workspace's changed tools against their pins, each with
// the fields that changed, old and new.
type pinsView struct {
	Workspace string
	Policy    string
	Pins      []*registryv1.Pin
	Decided   string // what the caller just did, when it did something
}

// pinChange is one changed field of a pin, as the diff shows it.
type pinChange struct {
	Field, Pinned, Advertised string
}

// changes are p's changed fields, old and new.
func changes(p *registryv1.Pin) []pinChange {
	out := make([]pinChange, 0, len(p.GetChanged()))
	for _, f := range p.GetChanged() {
		out = append(out, pinChange{Field: f, Pinned: pins.Field(p.GetPinned(), f), Advertised: pins.Field(p.GetAdvertised(), f)})
	}
	return out
}

// pinsPage shows a workspace's changed tools.
func (c *Console) pinsPage(ctx context.Context, r *http.Request) (any, error) {
	return c.readPins(ctx, r.PathValue("workspace"), "")
}

func (c *Console) readPins(ctx context.Context, ws, decided string) (pinsView, error) {
	res, err := c.Registry.ListPins(ctx, &registryv1.ListPinsRequest{Workspace: ws})
	if err != nil {
		return pinsView{}, err
	}
	return pinsView{Workspace: ws, Policy: pins.PolicyName(res.GetPolicy()), Pins: res.GetPins(), Decided: decided}, nil
}

// decidePin approves or rejects the change the form's fingerprint names,
// as the caller (the registry admits admins only).
func (c *Console) decidePin(ctx context.Context, r *http.Request, f url.Values) (any, error) {
	ws, name, fp := r.PathValue("workspace"), r.PathValue("name"), f.Get("fingerprint")
	var err error
	var done string
	switch r.PathValue("decision") {
	case "approve":
		_, err = c.Registry.ApprovePin(ctx, &registryv1.ApprovePinRequest{Workspace: ws, PresentedName: name, Fingerprint: fp})
		done = "approved"
	case "reject":
		_, err = c.Registry.RejectPin(ctx, &registryv1.RejectPinRequest{Workspace: ws, PresentedName: name, Fingerprint: fp})
		done = "rejected"
	default:
		return nil, badForm("%q is neither approve nor reject", r.PathValue("decision"))
	}
	if err != nil {
		return nil, err
	}
	return c.readPins(ctx, ws, done+" "+name)
}
