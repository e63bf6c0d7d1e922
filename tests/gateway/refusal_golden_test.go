package gateway_test

import (
	"net/http"
	"strings"

	"github.com/switchboard-run/switchboard/kit/suite/grpcserver"
)

// refusalCases are the gateway's own refusals: strict decoding, limits and
// identity, met before the act reaches a backend (a request that reached
// the real services would be answered otherwise). The one backend answer
// here is the registry's to the gateway's token check. Each golden holds
// the sentence and the status.
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
		{name: "refuse-progress-not-a-boolean", header: alice, body: `{"op":"capture",` + inv + `,"progress":"yes"}`},
		{name: "refuse-oversize-body", header: alice, body: `{"op":"invoke","client":"laptop","tool":"grep","input":"` + strings.Repeat("x", grpcserver.MaxMessageBytes) + `"}`},
		{name: "refuse-no-identity", body: `{"op":"invocations"}`},
		{name: "refuse-identity-twice", header: http.Header{"Switchboard-Identity": {"a", "b"}}, body: `{"op":"invocations"}`},
		{name: "refuse-grade-without-name", header: http.Header{"Switchboard-Grade": {"host"}}, body: `{"op":"invocations"}`},
		{name: "refuse-unknown-grade", header: http.Header{"Switchboard-Identity": {"a"}, "Switchboard-Grade": {"root"}}, body: `{"op":"invocations"}`},
		// The registry's answer for a secret it never minted.
		{name: "refuse-bad-token", header: http.Header{"Authorization": {"Bearer sbt_nobody_minted_this"}}, body: `{"op":"invocations"}`},
		{name: "refuse-authorization-not-bearer", header: http.Header{"Authorization": {"Basic YWxpY2U6cHc="}}, body: `{"op":"invocations"}`},
		{name: "refuse-act-get", method: http.MethodGet, header: alice},
	}
}
