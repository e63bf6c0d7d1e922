package identity

import (
	"context"
	"crypto/subtle"
	"fmt"
)

// MetadataDevSecret carries a dev-mode suite's per-run secret (HTTP header
// Switchboard-Dev-Secret): `switchboard dev` takes a caller's word for who
// it is only from a caller that can read that secret, which it writes to
// a file only its own user may read (docs/security.md, "Dev mode").
const MetadataDevSecret = "switchboard-dev-secret"

// CheckDevSecret refuses values (the metadata's or the header's under
// key, as a sentence names it) unless they are exactly secret.
func CheckDevSecret(values []string, secret, key string) error {
	switch {
	case len(values) == 0:
		return fmt.Errorf("this dev-mode suite takes calls only with its per-run secret in %s: switchboard dev wrote it to dev-secret in its --data directory, readable by its own user only (the switchboard CLI and switchboard host --dev read it by themselves; its console link carries it)", key)
	case len(values) > 1 || subtle.ConstantTimeCompare([]byte(values[0]), []byte(secret)) != 1:
		return fmt.Errorf("the secret this call carries in %s is not this run's: switchboard dev draws a new one at each start, in dev-secret in its --data directory", key)
	}
	return nil
}

// DevSecret is a dev-mode suite's per-run secret as call credentials: each
// call on a connection dialed with grpc.WithPerRPCCredentials(DevSecret(s))
// carries it.
type DevSecret string

// GetRequestMetadata adds the secret to a call.
func (s DevSecret) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{MetadataDevSecret: string(s)}, nil
}

// RequireTransportSecurity is false: dev mode is plaintext on loopback.
func (DevSecret) RequireTransportSecurity() bool { return false }
