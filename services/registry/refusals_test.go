package registry_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/names"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/registry"
)

// withSchema is tool("grep") with its JSON fields set by edit.
func withSchema(edit func(*registryv1.Tool)) *registryv1.Tool {
	t := tool("grep")
	edit(t)
	return t
}

// TestRefusals covers every refusal sentence the registry gives, each
// against a fresh registry, byte for byte.
func TestRefusals(t *testing.T) {
	t.Parallel()
	collider := names.Presented("box", "a b")[len("box_"):] // a plain name presenting as "a b" does
	long := strings.Repeat("x", 257)
	adv := func(client string, set ...*registryv1.Tool) func(*env) error {
		return func(e *env) error {
			_, err := e.reg.Advertise(host(client), &registryv1.AdvertiseRequest{Tools: set})
			return err
		}
	}
	// serving holds a follow read of "box" in session "s1" with set {grep}.
	serving := func(e *env) {
		e.advertise("box", tool("grep"))
		p := e.presence()
		p.send("box", true, "s1")
		waitPresent(e, "box", true)
	}
	tests := []struct {
		name  string
		setup func(*env)
		call  func(*env) error
		code  codes.Code
		msg   string
	}{
		{name: "a caller that is not a client name may not advertise", call: adv("Alice", tool("grep")), code: codes.InvalidArgument,
			msg: `advertise: the set lands under the caller's identity, which must be a client name: client name "Alice" is not 1–32 chars of [a-z0-9-] starting with a letter or digit`},
		{name: "an empty tool name is unusable", call: adv("box", tool("")), code: codes.InvalidArgument, msg: `advertise: unusable tool name ""`},
		{name: "a tool name over 256 bytes is unusable", call: adv("box", tool(long)), code: codes.InvalidArgument, msg: `advertise: unusable tool name "` + long + `"`},
		{name: "a tool name with a control character is unusable", call: adv("box", tool("a\tb")), code: codes.InvalidArgument, msg: `advertise: unusable tool name "a\tb"`},
		{name: "a tool name twice in one set is a duplicate", call: adv("box", tool("grep"), tool("ls"), tool("grep")), code: codes.InvalidArgument, msg: `advertise: duplicate tool name "grep"`},
		{name: "an empty input_schema is refused", call: adv("box", withSchema(func(t *registryv1.Tool) { t.InputSchema = "" })), code: codes.InvalidArgument,
			msg: `advertise: tool "grep" has an empty input_schema; send a JSON Schema object such as {"type":"object"}`},
		{name: "an input_schema that is not JSON is refused", call: adv("box", withSchema(func(t *registryv1.Tool) { t.InputSchema = "{type: object}" })), code: codes.InvalidArgument,
			msg: `advertise: tool "grep": input_schema is not valid JSON`},
		{name: "an input_schema that is not an object is refused", call: adv("box", withSchema(func(t *registryv1.Tool) { t.InputSchema = `["object"]` })), code: codes.InvalidArgument,
			msg: `advertise: tool "grep": input_schema is not a JSON object`},
		{name: "an input_schema that does not compile is refused with the compiler's reason", call: adv("box", withSchema(func(t *registryv1.Tool) { t.InputSchema = `{"type":"objekt"}` })), code: codes.InvalidArgument,
			msg: `advertise: tool "grep": input_schema does not compile as a JSON Schema: at '/type': value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'`},
		{name: "an input_schema that refers outside itself is refused", call: adv("box", withSchema(func(t *registryv1.Tool) { t.InputSchema = `{"$ref":"https://example.com/s.json"}` })), code: codes.InvalidArgument,
			msg: `advertise: tool "grep": input_schema does not compile as a JSON Schema: failing loading "https://example.com/s.json": schemas must be self-contained: the registry fetches no $ref or $schema from elsewhere`},
		{name: "an output_schema that is not an object is refused", call: adv("box", withSchema(func(t *registryv1.Tool) { t.OutputSchema = proto.String("true") })), code: codes.InvalidArgument,
			msg: `advertise: tool "grep": output_schema is not a JSON object`},
		{name: "an output_schema that does not compile is refused", call: adv("box", withSchema(func(t *registryv1.Tool) { t.OutputSchema = proto.String(`{"minLength":-1}`) })), code: codes.InvalidArgument,
			msg: `advertise: tool "grep": output_schema does not compile as a JSON Schema: at '/minLength': minimum: got -1, want 0`},
		{name: "annotations that are not an object are refused", call: adv("box", withSchema(func(t *registryv1.Tool) { t.Annotations = proto.String(`"readOnly"`) })), code: codes.InvalidArgument,
			msg: `advertise: tool "grep": annotations is not a JSON object`},
		{name: "two tools presented alike are refused by name", call: adv("box", tool("a b"), tool(collider)), code: codes.InvalidArgument,
			msg: `advertise: tools "a b" and "` + collider + `" would both be presented as "box_` + collider + `"; rename one of them`},
		{name: "more tools than --max-tools is a bound", call: adv("box", tools("a", "b", "c", "d")...), code: codes.ResourceExhausted,
			msg: `advertise: 4 tools is more than the 3 one client may advertise`},
		{name: "a different set without a session is refused while serving", setup: serving, call: adv("box", tool("ls")), code: codes.FailedPrecondition,
			msg: `advertise: "box" holds a follow read, so a different set may come only from that read's session; pass the session the read was opened with, or close the read first`},
		{name: "a different set from another session is refused while serving", setup: serving, call: func(e *env) error {
			_, err := e.reg.Advertise(host("box"), &registryv1.AdvertiseRequest{Tools: tools("ls"), Session: proto.String("s2")})
			return err
		}, code: codes.FailedPrecondition,
			msg: `advertise: "box" holds a follow read, but not in session "s2"; a different set may come only from the session holding the read`},
		{name: "listing clients of a workspace nobody created is not found", call: func(e *env) error {
			_, err := e.reg.ListClients(admin, &registryv1.ListClientsRequest{Workspace: "nobody"})
			return err
		}, code: codes.NotFound, msg: `unknown workspace "nobody"`},
		{name: "listing clients of a workspace whose members all left is not found alike", setup: func(e *env) {
			e.register("gone", "box")
			if _, err := e.reg.UnregisterClient(admin, &registryv1.UnregisterClientRequest{Workspace: "gone", Client: "box"}); err != nil {
				e.t.Fatal(err)
			}
		}, call: func(e *env) error {
			_, err := e.reg.ListClients(admin, &registryv1.ListClientsRequest{Workspace: "gone"})
			return err
		}, code: codes.NotFound, msg: `unknown workspace "gone"`},
		{name: "listing clients of an invalid workspace name is not found alike", call: func(e *env) error {
			_, err := e.reg.ListClients(admin, &registryv1.ListClientsRequest{Workspace: "Not Valid"})
			return err
		}, code: codes.NotFound, msg: `unknown workspace "Not Valid"`},
		{name: "listing tools of a workspace nobody created is not found", call: func(e *env) error {
			_, err := e.reg.ListTools(admin, &registryv1.ListToolsRequest{Workspace: "nobody"})
			return err
		}, code: codes.NotFound, msg: `unknown workspace "nobody"`},
		{name: "resolving an unknown presented name names it", setup: func(e *env) { e.advertise("box", tool("grep")) }, call: func(e *env) error {
			_, err := e.reg.ResolveTool(admin, &registryv1.ResolveToolRequest{PresentedName: "box_nope"})
			return err
		}, code: codes.NotFound, msg: `no tool is presented as "box_nope" right now; list the workspace's tools for the names in force`},
		{name: "getting a client with no set and no workspace names it", call: func(e *env) error {
			_, err := e.reg.GetClient(admin, &registryv1.GetClientRequest{Client: "ghost"})
			return err
		}, code: codes.NotFound, msg: `no client "ghost": it advertises no tools and belongs to no workspace`},
		{name: "registering into an invalid workspace names it", call: func(e *env) error {
			_, err := e.reg.RegisterClient(admin, &registryv1.RegisterClientRequest{Workspace: "Bad WS", Client: "box"})
			return err
		}, code: codes.InvalidArgument, msg: `workspace name "Bad WS" is not 1–64 chars of [a-z0-9-] starting with a letter or digit`},
		{name: "registering an invalid client names it", call: func(e *env) error {
			_, err := e.reg.RegisterClient(admin, &registryv1.RegisterClientRequest{Workspace: "default", Client: "my_box"})
			return err
		}, code: codes.InvalidArgument, msg: `client name "my_box" is not 1–32 chars of [a-z0-9-] starting with a letter or digit`},
		{name: "unregistering an invalid client names it", call: func(e *env) error {
			_, err := e.reg.UnregisterClient(admin, &registryv1.UnregisterClientRequest{Workspace: "default", Client: ""})
			return err
		}, code: codes.InvalidArgument, msg: `client name "" is not 1–32 chars of [a-z0-9-] starting with a letter or digit`},
		{name: "watching an invalid workspace name names it", call: func(e *env) error {
			stream, err := e.reg.WatchTools(admin, &registryv1.WatchToolsRequest{Workspace: proto.String("_x")})
			if err != nil {
				return err
			}
			_, err = stream.Recv()
			return err
		}, code: codes.InvalidArgument, msg: `workspace name "_x" is not 1–64 chars of [a-z0-9-] starting with a letter or digit`},
		{name: "a token for an empty identity is refused", call: createToken("", "host", ""), code: codes.InvalidArgument, msg: `create token: identity is empty`},
		{name: "a token of service grade cannot be minted", call: createToken("gw", "service", "", "*"), code: codes.InvalidArgument,
			msg: `create token: grade "service" cannot be minted: a token is host, driver or admin; services have certificates`},
		{name: "a token of the gone operator grade cannot be minted", call: createToken("gw", "operator", "", "*"), code: codes.InvalidArgument,
			msg: `create token: grade "operator" is gone: it was split into driver (list, invoke, capture, cancel) and admin (what a driver may, and mount, register, tokens, grants)`},
		{name: "a token without a grade is a driver, which needs workspaces", call: createToken("gw", "", ""), code: codes.InvalidArgument,
			msg: `create token: a driver token needs the workspaces it may see: name them (--workspaces dev,ops, or '*' for every workspace)`},
		{name: "an admin token needs workspaces too", call: createToken("root", "admin", ""), code: codes.InvalidArgument,
			msg: `create token: an admin token needs the workspaces it may see: name them (--workspaces dev,ops, or '*' for every workspace)`},
		{name: "a token's workspaces are checked", call: createToken("gw", "driver", "", "dev", "Ops"), code: codes.InvalidArgument,
			msg: `create token: workspaces (--workspaces): workspace name "Ops" is not 1–64 chars of [a-z0-9-] starting with a letter or digit`},
		{name: "every workspace comes alone", call: createToken("gw", "driver", "", "*", "dev"), code: codes.InvalidArgument,
			msg: `create token: workspaces (--workspaces): "*" stands for every workspace and comes alone, not with 1 others`},
		{name: "a token's ttl must be positive", call: func(e *env) error {
			_, err := e.reg.CreateToken(admin, &registryv1.CreateTokenRequest{Identity: "gw", Grade: "host", Ttl: durationpb.New(-time.Hour)})
			return err
		}, code: codes.InvalidArgument, msg: `create token: ttl (--ttl) -1h0m0s is not positive: a token must work for some time`},
		{name: "a token note over 1 KiB is refused", call: createToken("gw", "host", strings.Repeat("n", 1025)), code: codes.InvalidArgument,
			msg: `create token: the note is 1025 bytes; at most 1024 are kept`},
		{name: "revoking an unknown token names it", call: func(e *env) error {
			_, err := e.reg.RevokeToken(admin, &registryv1.RevokeTokenRequest{Id: "tok-deadbeef"})
			return err
		}, code: codes.NotFound, msg: `no token "tok-deadbeef"`},
		{name: "an unknown bearer token is unauthenticated", call: func(e *env) error {
			_, err := e.reg.AuthenticateToken(svc, &registryv1.AuthenticateTokenRequest{Secret: "sbt_nope"})
			return err
		}, code: codes.Unauthenticated, msg: `unknown or revoked token`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := serve(t, nil, func(c *registry.Config) { c.MaxTools = 3 })
			if tt.setup != nil {
				tt.setup(e)
			}
			testkit.Refused(t, tt.call(e), tt.code, tt.msg)
		})
	}
}

func createToken(id, grade, note string, workspaces ...string) func(*env) error {
	return func(e *env) error {
		_, err := e.reg.CreateToken(admin, &registryv1.CreateTokenRequest{Identity: id, Grade: grade, Note: note, Workspaces: workspaces})
		return err
	}
}

// TestGrades checks the policy: each method refuses the grades it does not
// list, with the guard's sentence.
func TestGrades(t *testing.T) {
	t.Parallel()
	e := serve(t, nil)
	call := func(ctx context.Context, method string) error {
		switch method {
		case "ListClients":
			_, err := e.reg.ListClients(ctx, &registryv1.ListClientsRequest{Workspace: "default"})
			return err
		case "RegisterClient":
			_, err := e.reg.RegisterClient(ctx, &registryv1.RegisterClientRequest{Workspace: "default", Client: "box"})
			return err
		case "CreateToken":
			_, err := e.reg.CreateToken(ctx, &registryv1.CreateTokenRequest{Identity: "x", Grade: "host"})
			return err
		case "ListTokens":
			_, err := e.reg.ListTokens(ctx, &registryv1.ListTokensRequest{})
			return err
		case "SetGrant":
			_, err := e.reg.SetGrant(ctx, &registryv1.SetGrantRequest{Identity: "x", Workspaces: []string{"*"}})
			return err
		case "ListGrants":
			_, err := e.reg.ListGrants(ctx, &registryv1.ListGrantsRequest{})
			return err
		case "Advertise":
			_, err := e.reg.Advertise(ctx, &registryv1.AdvertiseRequest{})
			return err
		case "AuthenticateToken":
			_, err := e.reg.AuthenticateToken(ctx, &registryv1.AuthenticateTokenRequest{Secret: "x"})
			return err
		case "WatchTools":
			stream, err := e.reg.WatchTools(ctx, &registryv1.WatchToolsRequest{})
			if err != nil {
				return err
			}
			_, err = stream.Recv()
			return err
		}
		t.Fatalf("no call for %s", method)
		return nil
	}
	tests := []struct {
		name   string
		caller string
		grade  identity.Grade
		method string
	}{
		{"a host may not list clients", "box", identity.Host, "ListClients"},
		{"a host may not watch", "box", identity.Host, "WatchTools"},
		{"a host may not register clients", "box", identity.Host, "RegisterClient"},
		{"a host may not mint tokens", "box", identity.Host, "CreateToken"},
		{"a driver may not register clients", "alice", identity.Driver, "RegisterClient"},
		{"a driver may not mint tokens", "alice", identity.Driver, "CreateToken"},
		{"a driver may not list tokens", "alice", identity.Driver, "ListTokens"},
		{"a driver may not set grants", "alice", identity.Driver, "SetGrant"},
		{"a driver may not advertise", "alice", identity.Driver, "Advertise"},
		{"a service may not register clients", "gw", identity.Service, "RegisterClient"},
		{"a service may not mint tokens", "gw", identity.Service, "CreateToken"},
		{"a service may not list grants", "gw", identity.Service, "ListGrants"},
		{"an admin may not authenticate tokens", "ops", identity.Admin, "AuthenticateToken"},
		{"an admin may not advertise", "ops", identity.Admin, "Advertise"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := call(testkit.As(tt.caller, tt.grade), tt.method)
			testkit.Refused(t, err, codes.PermissionDenied, `"`+tt.caller+`" is `+tt.grade.Article()+` and may not call RegistryService.`+tt.method)
		})
	}
}
