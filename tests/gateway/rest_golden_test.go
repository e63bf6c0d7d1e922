package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// restCases are the REST routes' goldens: the same real services behind
// grpc-gateway, snake_case, zero values printed, absent messages absent,
// errors in the act envelope.
func restCases() []goldenCase {
	capturePath := "/v1/invocations/" + handle + "/capture"
	statusPath := "/v1/invocations/" + handle + "/status"
	stillRunning := func(t *testing.T, b *suite, _ reply) {
		if c := b.collect(t, "alice", b.inv).GetCapture(); c != nil {
			t.Fatalf("the refused capture was stored: %v", c)
		}
	}
	return []goldenCase{
		{
			name: "rest-invoke", method: http.MethodPost, path: "/v1/invocations", header: alice,
			body:  `{"client":"laptop","tool":"grep","input":"{\"q\": 1}"}`,
			setup: laptopAdvertisesGrep,
			check: func(t *testing.T, b *suite, res reply) {
				if row := routedTo(t, b, res); row.GetTool() != "grep" || row.GetInput() != `{"q": 1}` || row.Cwd != nil {
					t.Fatalf("laptop read tool %q input %s cwd %v; want grep, {\"q\": 1} byte for byte, no cwd", row.GetTool(), row.GetInput(), row.Cwd)
				}
			},
		},
		{name: "rest-capture-running", method: http.MethodGet, path: capturePath, header: alice, setup: handedToLaptop},
		{
			name: "rest-capture-answered", method: http.MethodGet, path: capturePath + "?wait=10s", header: alice,
			setup: handedToLaptop, during: completeLater(capture.New("", "", 0)),
		},
		{
			name: "rest-complete", method: http.MethodPut, path: capturePath, header: laptop,
			body:  `{"stdout":"done\n","stderr":"","exit_code":3}`,
			setup: handedToLaptop,
			check: func(t *testing.T, b *suite, _ reply) {
				if got, want := b.collect(t, "alice", b.inv).GetCapture(), capture.New("done\n", "", 3); !proto.Equal(got, want) {
					t.Fatalf("alice collected %v, want %v", got, want)
				}
			},
		},
		{
			// protojson leaves an absent field unset; the mailbox's strict
			// capture refuses it rather than default it.
			name: "rest-complete-missing-stdout", method: http.MethodPut, path: capturePath, header: laptop,
			body:  `{"stderr":"","exit_code":0}`,
			setup: handedToLaptop, check: stillRunning,
		},
		{
			name: "rest-clients", method: http.MethodGet, path: "/v1/workspaces/default/clients", header: alice,
			setup: func(t *testing.T, b *suite) {
				b.advertise(t, "laptop", &registryv1.Tool{Name: "grep", Description: "", InputSchema: `{}`})
				b.join(t, "default", "laptop", "new-box")
				b.hold(t, "laptop")
				if err := b.present("laptop"); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "rest-capture-foreign-handle", method: http.MethodGet, path: capturePath, header: as("mallory", identity.Driver),
			setup: handedToLaptop, check: stillRunning,
		},
		{
			name: "rest-report", method: http.MethodPost, path: "/v1/invocations/" + handle + ":report", header: laptop,
			body:  `{"progress":1,"total":4,"message":"reading"}`,
			setup: handedToLaptop,
			check: func(t *testing.T, b *suite, _ reply) {
				if n := b.status(t, "alice", b.inv).GetProgress(); len(n) != 1 || n[0].GetMessage() != "reading" || n[0].GetTotal() != 4 {
					t.Fatalf("alice read the notes %v, want the one reported", n)
				}
			},
		},
		{
			name: "rest-status", method: http.MethodGet, path: statusPath, header: alice,
			setup: func(t *testing.T, b *suite) {
				handedToLaptop(t, b)
				b.report(t, "laptop", b.inv, 0.5, nil, "half way")
				b.report(t, "laptop", b.inv, 1, proto.Float64(2), "")
			},
		},
		{
			name: "rest-status-after-waits-for-the-answer", method: http.MethodGet, path: statusPath + "?after=1&wait=10s", header: alice,
			setup: func(t *testing.T, b *suite) {
				handedToLaptop(t, b)
				b.report(t, "laptop", b.inv, 1, nil, "seen")
			},
			during: completeLater(capture.New("done\n", "", 0)),
			check: func(t *testing.T, b *suite, _ reply) {
				if c := b.collect(t, "alice", b.inv).GetCapture(); c.GetStdout() != "done\n" {
					t.Fatalf("alice collected %v after the status: the status took it", c)
				}
			},
		},
		{
			name: "rest-status-foreign-handle", method: http.MethodGet, path: statusPath, header: as("mallory", identity.Driver),
			setup: handedToLaptop,
		},
		{
			name: "rest-cancel-keep", method: http.MethodPost, path: "/v1/invocations/" + handle + ":cancel", header: alice,
			body:  `{"reason":"task cancelled","keep":true}`,
			setup: handedToLaptop,
			check: func(t *testing.T, b *suite, _ reply) {
				if st := b.status(t, "alice", b.inv); st.GetPhase() != mailboxv1.Phase_PHASE_CANCELLED || st.GetCapture().GetExitCode() != 130 {
					t.Fatalf("after a kept cancel alice read %v, want it cancelled and readable", st)
				}
			},
		},
		{name: "rest-no-route", method: http.MethodGet, path: "/v1/nothing-here", header: alice},
		{name: "rest-method-not-allowed", method: http.MethodDelete, path: "/v1/invocations", header: alice},
		{name: "rest-no-identity", method: http.MethodGet, path: "/v1/workspaces/default/clients"},
		{name: "rest-bridge-route", method: http.MethodGet, path: "/v1/servers", header: alice},
	}
}

// The REST decoder is protojson's, whose messages are deliberately unstable
// (they vary spacing per build), so these are checked by name, not golden.
func TestRESTRefusesUnknownAndMistypedFields(t *testing.T) {
	t.Parallel()
	b := newSuite(t, options{})
	for _, tc := range []struct {
		name, body, mention string
	}{
		{"an unknown field", `{"client":"laptop","tool":"grep","input":"{}","bogus":1}`, "bogus"},
		{"a mistyped field", `{"client":7,"tool":"grep","input":"{}"}`, "client"},
		{"a body that is not JSON", `{"client":`, "unexpected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := do(t, b.Client, http.MethodPost, b.URL+"/v1/invocations", alice, []byte(tc.body))
			if res.Status != 400 || !strings.HasPrefix(string(res.Body), `{"ok":false,"error":"`) || !strings.Contains(string(res.Body), tc.mention) {
				t.Fatalf("HTTP %d %s, want 400 with the envelope naming %q", res.Status, res.Body, tc.mention)
			}
		})
	}
}
