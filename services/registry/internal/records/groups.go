package records

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

// groupPrefix keys the tool groups: group.<workspace>.<name>. Workspace and
// group names are [a-z0-9-], so they are key tokens as they are.
const groupPrefix = "group."

// Group is one tool group record as the watch reports it.
type Group struct {
	Workspace, Name string
	// Record is the stored group; nil on a deletion.
	Record *registryv1.Group
}

// PutGroup stores g, replacing any earlier group of its name, and returns
// the revision.
func (r *Records) PutGroup(ctx context.Context, g *registryv1.Group) (uint64, error) {
	rec, err := proto.MarshalOptions{Deterministic: true}.Marshal(g)
	if err != nil {
		return 0, err
	}
	return r.set(ctx, groupPrefix+g.GetWorkspace()+"."+g.GetName(), rec)
}

// DeleteGroup removes a group; ok is false when there was none.
func (r *Records) DeleteGroup(ctx context.Context, workspace, name string) (rev uint64, ok bool, err error) {
	return r.deleteIfThere(ctx, groupPrefix+workspace+"."+name)
}

// decodeGroup reads one group key and value.
func decodeGroup(c *Change, rest string, value []byte) error {
	ws, name, ok := strings.Cut(rest, ".")
	if !ok {
		return errors.New("a group key names no group")
	}
	c.Group = &Group{Workspace: ws, Name: name}
	if c.Deleted {
		return nil
	}
	c.Group.Record = new(registryv1.Group)
	if err := proto.Unmarshal(value, c.Group.Record); err != nil {
		return err
	}
	if c.Group.Record.GetWorkspace() != ws || c.Group.Record.GetName() != name {
		return fmt.Errorf("the group under the key of %q in %q names %q in %q", name, ws, c.Group.Record.GetName(), c.Group.Record.GetWorkspace())
	}
	return nil
}
