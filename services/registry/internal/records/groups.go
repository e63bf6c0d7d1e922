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
	rec := new(registryv1.Group)
	ws, name, err := decodePair(rest, value, c.Deleted, errNoGroup, rec)
	if err != nil {
		return err
	}
	c.Group = &Group{Workspace: ws, Name: name}
	if c.Deleted {
		return nil
	}
	if rec.GetWorkspace() != ws || rec.GetName() != name {
		return fmt.Errorf("the group under the key of %q in %q names %q in %q", name, ws, rec.GetName(), rec.GetWorkspace())
	}
	c.Group.Record = rec
	return nil
}

var (
	errNoGroup  = errors.New("a group key names no group")
	errNoClient = errors.New("a pins key names no client")
)

// decodePair splits a "<workspace>.<name>" key (noName when it has no name)
// and, unless the key was deleted, decodes its value into m.
func decodePair(rest string, value []byte, deleted bool, noName error, m proto.Message) (ws, name string, err error) {
	ws, name, ok := strings.Cut(rest, ".")
	if !ok {
		return "", "", noName
	}
	if !deleted {
		err = proto.Unmarshal(value, m)
	}
	return ws, name, err
}
