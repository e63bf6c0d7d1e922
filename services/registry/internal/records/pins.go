package records

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

// Pins and pin policies (docs/security.md, "Tool pins"):
//
//	pins.<workspace>.<client>  the client's pins in the workspace (a PinSet)
//	pinpolicy.<workspace>      off, warn or hold
const (
	pinsPrefix   = "pins."
	policyPrefix = "pinpolicy."
)

// Pins is one client's pins in one workspace as the watch reports them.
type Pins struct {
	Workspace, Client string
	// Set is the stored set; nil on a deletion.
	Set *registryv1.PinSet
}

// Policy is one workspace's pin policy as the watch reports it.
type Policy struct {
	Workspace string
	// Policy is the stored policy; unspecified on a deletion.
	Policy registryv1.PinPolicy
}

// PutPins stores client's pins in workspace over revision rev (0: only
// when it has none yet, else ErrChanged).
func (r *Records) PutPins(ctx context.Context, workspace, client string, set *registryv1.PinSet, rev uint64) (uint64, error) {
	rec, err := proto.MarshalOptions{Deterministic: true}.Marshal(set)
	if err != nil {
		return 0, err
	}
	return r.put(ctx, pinsPrefix+workspace+"."+client, rec, rev)
}

// PutPolicy stores a workspace's pin policy.
func (r *Records) PutPolicy(ctx context.Context, workspace string, p registryv1.PinPolicy) (uint64, error) {
	return r.set(ctx, policyPrefix+workspace, []byte(p.String()))
}

// decodePins reads one pins key and value.
func decodePins(c *Change, rest string, value []byte) error {
	set := new(registryv1.PinSet)
	ws, client, err := decodePair(rest, value, c.Deleted, errNoClient, set)
	if err != nil {
		return err
	}
	c.Pins = &Pins{Workspace: ws, Client: client}
	if c.Deleted {
		return nil
	}
	c.Pins.Set = set
	for _, p := range set.GetPins() {
		if p.GetWorkspace() != ws || p.GetClient() != client {
			return fmt.Errorf("the pins of %q in %q hold one of %q in %q", client, ws, p.GetClient(), p.GetWorkspace())
		}
	}
	return nil
}

// decodePolicy reads one policy key and value.
func decodePolicy(c *Change, ws string, value []byte) error {
	c.Policy = &Policy{Workspace: ws}
	if c.Deleted {
		return nil
	}
	p, ok := registryv1.PinPolicy_value[string(value)]
	if !ok || p == 0 {
		return fmt.Errorf("workspace %q has the pin policy %q, which is none of off, warn and hold", ws, value)
	}
	c.Policy.Policy = registryv1.PinPolicy(p)
	return nil
}
