// Package identity is who is calling and what they may do (docs/design.md §4).
//
// An identity is derived per request — from the client certificate in
// production, from metadata in dev mode — and never cached on the
// connection. Its grade says which RPCs it may call (Policy); its
// workspaces say what it may see (Workspaces). A `service` peer may act on
// behalf of another identity by asserting it in metadata, within the scope
// this package states for it (MayAssert); nobody else may.
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
	// Host may only advertise its own tool set, follow its own queue and
	// complete its own invocations.
	Host Grade = "host"
	// Driver may list, invoke, capture and cancel inside the workspaces it
	// is granted. The default grade of a token.
	Driver Grade = "driver"
	// Admin may do what a driver may, and mount and unmount servers,
	// register clients, mint tokens and set grants.
	Admin Grade = "admin"
	// Service is a suite service; it may act on behalf of another identity
	// within its scope (MayAssert).
	Service Grade = "service"
	// Scrape may read metrics and nothing else: no RPC admits it, it sees
	// no workspace. Prometheus's grade.
	Scrape Grade = "scrape"
)

// Grades is every grade, in the order the docs list them.
var Grades = []Grade{Host, Driver, Admin, Service, Scrape}

// Article is the grade with its article, as a sentence says it: "a host",
// "an admin", "a scraper".
func (g Grade) Article() string {
	switch g {
	case Admin:
		return "an " + string(g)
	case Scrape:
		return "a scraper"
	}
	return "a " + string(g)
}

// ParseGrade reads a grade as written in a certificate's OU, in metadata or
// in a token record. There is no default: the empty string is refused.
func ParseGrade(s string) (Grade, error) {
	switch Grade(s) {
	case Host, Driver, Admin, Service, Scrape:
		return Grade(s), nil
	case "operator":
		return "", fmt.Errorf(`grade "operator" is gone: it was split into driver (list, invoke, capture, cancel) and admin (what a driver may, and mount, register, tokens, grants)`)
	}
	return "", fmt.Errorf("unknown grade %q: want host, driver, admin, service or scrape", s)
}

// Identity is one caller.
type Identity struct {
	// Name is the certificate's subject CN, or the asserted name.
	Name string
	// Grade is what the caller may do.
	Grade Grade
	// Workspaces is what the caller's credential says it may see: a
	// token's workspaces (asserted by the gateway), or every workspace in
	// dev mode. Nil when the credential says nothing (a certificate): the
	// grade and the registry's grant records decide (Workspaces.Resolve).
	Workspaces *Workspaces
	// Groups, when set, limit the caller to these tool groups of its
	// workspaces (a token minted with groups, docs/security.md): the
	// gateway serves it only their MCP endpoints and acts naming one of
	// them. Never asserted over gRPC: the gateway enforces it.
	Groups []string
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
