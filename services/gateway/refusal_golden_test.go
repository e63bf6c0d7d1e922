package gateway

import (
	"net/http"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/identity"
	"github.com/switchboard-run/switchboard/services/gateway/internal/bodylimit"
	"github.com/switchboard-run/switchboard/services/gateway/internal/scripted"
)

// refusalCases are the gateway's own refusals: strict decoding, limits and
// identity. Each golden holds the sentence and the status.
func refusalCases() []goldenCase {
	inv := `"invocation":"` + handle + `"`
	return []goldenCase{
		{name: "refuse-bad-json", header: alice, body: `{"op":"invoke",}`},
		{name: "refuse-not-an-object", header: alice, body: `["invoke"]`},
		{name: "refuse-trailing-data", header: alice, body: `{"op":"invocations"}{"op":"invocations"}`},
		{name: "refuse-duplicate-key", header: alice, body: `{"op":"clients","workspace":"default","workspace":"other"}`},
		{name: "refuse-missing-op", header: alice, body: `{"workspace":"default"}`},
		{name: "refuse-unknown-op", header: alice, body: `{"op":"explode"}`},
		{name: "refuse-unknown-field", header: alice, body: `{"op":"invoke","client":"laptop","tool":"grep","input":{},"timeout":"5s"}`},
		{name: "refuse-unknown-tool-field", header: laptop, body: `{"op":"advertise","tools":[{"name":"a","description":"","input_schema":{}},{"name":"b","description":"","input_schema":{}},{"name":"c","description":"","input_schema":{},"command":["rm"]}]}`},
		{name: "refuse-missing-field", header: alice, body: `{"op":"invoke","client":"laptop","input":{}}`},
		{name: "refuse-mistyped-field", header: alice, body: `{"op":"clients","workspace":["default"]}`},
		{name: "refuse-cwd-not-a-string", header: alice, body: `{"op":"invoke","client":"laptop","tool":"grep","input":{},"cwd":42}`},
		{name: "refuse-capture-missing-stdout", header: laptop, body: `{"op":"complete",` + inv + `,"capture":{"stderr":"","exit_code":0}}`},
		{name: "refuse-capture-missing-exit-code", header: laptop, body: `{"op":"complete",` + inv + `,"capture":{"stdout":"","stderr":""}}`},
		{name: "refuse-exit-code-out-of-range", header: laptop, body: `{"op":"complete",` + inv + `,"capture":{"stdout":"","stderr":"","exit_code":4294967296}}`},
		{name: "refuse-exit-code-not-an-integer", header: laptop, body: `{"op":"complete",` + inv + `,"capture":{"stdout":"","stderr":"","exit_code":0.5}}`},
		{name: "refuse-bad-wait", header: alice, body: `{"op":"capture",` + inv + `,"wait":"ten seconds"}`},
		{name: "refuse-negative-wait", header: alice, body: `{"op":"capture",` + inv + `,"wait":"-5s"}`},
		{name: "refuse-oversize-body", header: alice, body: `{"op":"invoke","client":"laptop","tool":"grep","input":"` + strings.Repeat("x", bodylimit.MaxBytes) + `"}`},
		{name: "refuse-no-identity", body: `{"op":"invocations"}`},
		{name: "refuse-identity-twice", header: http.Header{"Switchboard-Identity": {"a", "b"}}, body: `{"op":"invocations"}`},
		{name: "refuse-grade-without-name", header: http.Header{"Switchboard-Grade": {"host"}}, body: `{"op":"invocations"}`},
		{name: "refuse-unknown-grade", header: http.Header{"Switchboard-Identity": {"a"}, "Switchboard-Grade": {"admin"}}, body: `{"op":"invocations"}`},
		{name: "refuse-bad-token", header: http.Header{"Authorization": {"Bearer sbt_revoked"}}, body: `{"op":"invocations"}`,
			setup: func(r *scripted.Registry, _ *scripted.Mailbox) {
				r.OnAuthenticateToken = func(identity.Identity, *registryv1.AuthenticateTokenRequest) (*registryv1.AuthenticateTokenResponse, error) {
					return nil, status.Error(codes.Unauthenticated, "unknown or revoked token")
				}
			}},
		{name: "refuse-authorization-not-bearer", header: http.Header{"Authorization": {"Basic YWxpY2U6cHc="}}, body: `{"op":"invocations"}`},
		{name: "refuse-act-get", method: http.MethodGet, header: alice},
	}
}
