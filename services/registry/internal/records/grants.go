package records

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// grantPrefix keys the grant records: grant.<GrantKey(identity)>.
const grantPrefix = "grant."

// Grant is one grant record as the watch reports it.
type Grant struct {
	// Identity is whose grant it is, decoded from the key.
	Identity string
	// Record is the stored grant; nil on a deletion.
	Record *registryv1.Grant
}

// GrantKey encodes an identity name as one KV key token. An identity may
// hold any character but control characters (identity.CheckName), a key
// token only [-_=/.A-Za-z0-9]: unpadded URL-safe base64 maps every name to
// such a token, and back, one to one.
func GrantKey(name string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(name))
}

// ParseGrantKey reads a key token GrantKey wrote, refusing one that no
// identity name encodes to.
func ParseGrantKey(token string) (string, error) {
	b, err := base64.RawURLEncoding.Strict().DecodeString(token)
	if err == nil && GrantKey(string(b)) != token {
		// The decoder skips line breaks; only GrantKey's spelling is a key.
		err = errors.New("it holds characters outside the alphabet")
	}
	if err != nil {
		return "", fmt.Errorf("grant key %q is not unpadded URL-safe base64: %w", token, err)
	}
	name := string(b)
	if err := identity.CheckName(name); err != nil {
		return "", fmt.Errorf("grant key %q: %w", token, err)
	}
	return name, nil
}

// PutGrant stores g under its identity, replacing any earlier grant, and
// returns the revision.
func (r *Records) PutGrant(ctx context.Context, g *registryv1.Grant) (uint64, error) {
	rec, err := proto.MarshalOptions{Deterministic: true}.Marshal(g)
	if err != nil {
		return 0, err
	}
	return r.set(ctx, grantPrefix+GrantKey(g.GetIdentity()), rec)
}

// DeleteGrant removes the grant of name; ok is false when there was none.
func (r *Records) DeleteGrant(ctx context.Context, name string) (rev uint64, ok bool, err error) {
	return r.deleteIfThere(ctx, grantPrefix+GrantKey(name))
}

// deleteIfThere removes key at the revision it holds; ok is false when
// there was none.
func (r *Records) deleteIfThere(ctx context.Context, key string) (rev uint64, ok bool, err error) {
	e, err := r.kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return 0, false, nil
	case err != nil:
		return 0, false, err
	}
	rev, err = r.delete(ctx, key, e.Revision())
	return rev, err == nil, err
}

// decodeGrant reads one grant key and value.
func decodeGrant(c *Change, token string, value []byte) error {
	name, err := ParseGrantKey(token)
	if err != nil {
		return err
	}
	c.Grant = &Grant{Identity: name}
	if c.Deleted {
		return nil
	}
	c.Grant.Record = new(registryv1.Grant)
	if err := proto.Unmarshal(value, c.Grant.Record); err != nil {
		return err
	}
	if c.Grant.Record.GetIdentity() != name {
		return fmt.Errorf("the grant under the key of %q names %q", name, c.Grant.Record.GetIdentity())
	}
	return nil
}
