package gateway

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/capture"
	"github.com/switchboard-run/switchboard/kit/identity"
	"github.com/switchboard-run/switchboard/services/gateway/internal/scripted"
)

// restCases are the REST routes' goldens: the same backends behind
// grpc-gateway, snake_case, zero values printed, absent messages absent,
// errors in the act envelope.
func restCases() []goldenCase {
	capturePath := "/v1/invocations/" + handle + "/capture"
	answered := func(_ *scripted.Registry, m *scripted.Mailbox) {
		m.OnCapture = func(_ identity.Identity, req *mailboxv1.CaptureRequest) (*mailboxv1.CaptureResponse, error) {
			if req.GetWait() == nil {
				return &mailboxv1.CaptureResponse{Invocation: req.GetInvocation()}, nil
			}
			return &mailboxv1.CaptureResponse{Invocation: req.GetInvocation(), Capture: capture.New("", "", 0)}, nil
		}
	}
	return []goldenCase{
		{
			name: "rest-invoke", method: http.MethodPost, path: "/v1/invocations", header: alice,
			body: `{"client":"laptop","tool":"grep","input":"{\"q\": 1}"}`,
			setup: func(_ *scripted.Registry, m *scripted.Mailbox) {
				m.OnInvoke = func(identity.Identity, *mailboxv1.InvokeRequest) (*mailboxv1.InvokeResponse, error) {
					return &mailboxv1.InvokeResponse{Invocation: handle}, nil
				}
			},
			check: func(t *testing.T, _ *scripted.Registry, m *scripted.Mailbox) {
				c := m.Rec.Last(t, "Invoke")
				sawCaller(t, c, "alice", identity.Operator)
				if want := (&mailboxv1.InvokeRequest{Client: "laptop", Tool: "grep", Input: `{"q": 1}`}); !proto.Equal(c.Request, want) {
					t.Fatalf("the mailbox got %v, want %v", c.Request, want)
				}
			},
		},
		{name: "rest-capture-running", method: http.MethodGet, path: capturePath, header: alice, setup: answered},
		{
			name: "rest-capture-answered", method: http.MethodGet, path: capturePath + "?wait=10s", header: alice, setup: answered,
			check: func(t *testing.T, _ *scripted.Registry, m *scripted.Mailbox) {
				if w := m.Rec.Last(t, "Capture").Request.(*mailboxv1.CaptureRequest).GetWait(); w.AsDuration() != 10*time.Second {
					t.Fatalf("wait reached the mailbox as %v", w)
				}
			},
		},
		{
			name: "rest-complete", method: http.MethodPut, path: capturePath, header: laptop,
			body: `{"stdout":"done\n","stderr":"","exit_code":3}`,
			setup: func(_ *scripted.Registry, m *scripted.Mailbox) {
				m.OnComplete = func(_ identity.Identity, req *mailboxv1.CompleteRequest) (*mailboxv1.CompleteResponse, error) {
					return &mailboxv1.CompleteResponse{Invocation: req.GetInvocation(), Capture: req.GetCapture()}, nil
				}
			},
			check: func(t *testing.T, _ *scripted.Registry, m *scripted.Mailbox) {
				c := m.Rec.Last(t, "Complete")
				sawCaller(t, c, "laptop", identity.Host)
				if want := (&mailboxv1.CompleteRequest{Invocation: handle, Capture: capture.New("done\n", "", 3)}); !proto.Equal(c.Request, want) {
					t.Fatalf("the mailbox got %v, want %v", c.Request, want)
				}
			},
		},
		{
			name: "rest-clients", method: http.MethodGet, path: "/v1/workspaces/default/clients", header: alice,
			setup: func(r *scripted.Registry, _ *scripted.Mailbox) {
				r.OnListClients = func(identity.Identity, *registryv1.ListClientsRequest) (*registryv1.ListClientsResponse, error) {
					return &registryv1.ListClientsResponse{Rows: []*registryv1.ClientRow{
						{Client: "laptop", Present: true, LastSeen: timestamppb.New(time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)),
							Tools: []*registryv1.Tool{{Name: "grep", Description: "", InputSchema: `{}`}}},
						{Client: "new-box"},
					}}, nil
				}
			},
			check: func(t *testing.T, r *scripted.Registry, _ *scripted.Mailbox) {
				if w := r.Rec.Last(t, "ListClients").Request.(*registryv1.ListClientsRequest).GetWorkspace(); w != "default" {
					t.Fatalf("workspace %q", w)
				}
			},
		},
		{
			name: "rest-capture-foreign-handle", method: http.MethodGet, path: capturePath, header: as("mallory", identity.Operator),
			setup: func(_ *scripted.Registry, m *scripted.Mailbox) {
				m.OnCapture = func(identity.Identity, *mailboxv1.CaptureRequest) (*mailboxv1.CaptureResponse, error) {
					return nil, status.Error(codes.NotFound, absent)
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
	g := devGateway(t, nil, &scripted.Mailbox{})
	for _, tc := range []struct {
		name, body, mention string
	}{
		{"an unknown field", `{"client":"laptop","tool":"grep","input":"{}","bogus":1}`, "bogus"},
		{"a mistyped field", `{"client":7,"tool":"grep","input":"{}"}`, "client"},
		{"a body that is not JSON", `{"client":`, "unexpected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := do(t, g.Client, http.MethodPost, g.URL+"/v1/invocations", alice, []byte(tc.body))
			if res.Status != 400 || !strings.HasPrefix(string(res.Body), `{"ok":false,"error":"`) || !strings.Contains(string(res.Body), tc.mention) {
				t.Fatalf("HTTP %d %s, want 400 with the envelope naming %q", res.Status, res.Body, tc.mention)
			}
		})
	}
}
