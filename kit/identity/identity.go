// Package identity is who is calling and what they may do (docs/design.md §4).
//
// An identity is derived per request — from the client certificate in
// production, from metadata in dev mode — and never cached on the
// connection. A `service` peer may act on behalf of another identity by
// asserting it in metadata; nobody else may.
package identity

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Grade is what an identity may do.
type Grade string

const (
	// Operator may do every act. It is the default grade.
	Operator Grade = "operator"
	// Host may only advertise, read invocations and complete them.
	Host Grade = "host"
	// Service is a suite service; it may act on behalf of another identity.
	Service Grade = "service"
)

// ParseGrade reads a grade as written in a certificate's OU or in metadata.
// The empty string is Operator, the default.
func ParseGrade(s string) (Grade, error) {
	switch Grade(s) {
	case "", Operator:
		return Operator, nil
	case Host, Service:
		return Grade(s), nil
	}
	return "", fmt.Errorf("unknown grade %q: want operator, host or service", s)
}

// Identity is one caller.
type Identity struct {
	// Name is the certificate's subject CN, or the asserted name.
	Name string
	// Grade is what the caller may do.
	Grade Grade
}

func (id Identity) String() string { return id.Name + " (" + string(id.Grade) + ")" }

// MaxNameLen bounds an identity name; a client name is shorter still.
const MaxNameLen = 128

// CheckName refuses names that cannot be an identity: empty, too long, not
// UTF-8, or holding control characters or spaces at either end.
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("identity is empty")
	case len(name) > MaxNameLen:
		return fmt.Errorf("identity %.40q… is longer than %d bytes", name, MaxNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("identity %q is not valid UTF-8", name)
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("identity %q has leading or trailing spaces", name)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("identity %q holds a control character", name)
		}
	}
	return nil
}

type ctxKey struct{}

// NewContext returns ctx carrying id, as the server interceptors do.
func NewContext(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// FromContext returns the caller's identity, set by the server interceptors.
func FromContext(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(ctxKey{}).(Identity)
	return id, ok
}
