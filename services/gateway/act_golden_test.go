package gateway

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
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

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden from what the gateway answers")

// absent is the mailbox's one sentence for a handle the caller may not see.
const absent = `no invocation "inv-0a1b2c3d4e5f60718293a4b5c6d7e8f9" is in flight; it was answered already, it expired, or this engine restarted since it was posted — the box may have run it; read the world before acting again`

const handle = "inv-0a1b2c3d4e5f60718293a4b5c6d7e8f9"

// goldenCase is one request and the bytes of its answer in
// testdata/golden/<name>.golden.
type goldenCase struct {
	name   string
	method string // default POST
	path   string // default /v1/act
	header http.Header
	body   string
	setup  func(*scripted.Registry, *scripted.Mailbox)
	// check looks at what reached the backends.
	check func(*testing.T, *scripted.Registry, *scripted.Mailbox)
}

var (
	laptop = as("laptop", identity.Host)
	alice  = as("alice", identity.Operator)
)

func TestActRepliesMatchTheirGoldens(t *testing.T) {
	t.Parallel()
	var cases []goldenCase
	cases = append(cases, opCases()...)
	cases = append(cases, refusalCases()...)
	cases = append(cases, restCases()...)
	names := map[string]bool{}
	for _, tc := range cases {
		if names[tc.name] {
			t.Fatalf("two cases named %q", tc.name)
		}
		names[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg, mb := &scripted.Registry{}, &scripted.Mailbox{}
			if tc.setup != nil {
				tc.setup(reg, mb)
			}
			g := devGateway(t, reg, mb)
			method, path := tc.method, tc.path
			if method == "" {
				method = http.MethodPost
			}
			if path == "" {
				path = "/v1/act"
			}
			var body []byte
			if tc.body != "" {
				body = []byte(tc.body)
			}
			res := do(t, g.Client, method, g.URL+path, tc.header, body)
			got := goldenText(method, path, tc.header, tc.body, res)
			compareGolden(t, tc.name, got)
			if ct := res.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			if tc.check != nil {
				tc.check(t, reg, mb)
			}
		})
	}
}

// goldenText is what a golden file holds: the request, then the status and
// the body exactly as sent.
func goldenText(method, path string, h http.Header, body string, res reply) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", method, path)
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	if len(body) > 4096 {
		body = fmt.Sprintf("<%d bytes>", len(body))
	}
	fmt.Fprintf(&b, "\n%s\n---\nHTTP %d\n%s\n", body, res.Status, res.Body)
	return b.String()
}

func compareGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestActRepliesMatchTheirGoldens -update to write it)", err)
	}
	if !bytes.Equal([]byte(got), want) {
		t.Fatalf("%s differs\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// sawCaller checks that the backend was called as name with grade.
func sawCaller(t *testing.T, c scripted.Call, name string, grade identity.Grade) {
	t.Helper()
	if c.Caller.Name != name || c.Caller.Grade != grade {
		t.Fatalf("%s reached the backend as %v, want %s (%s)", c.Method, c.Caller, name, grade)
	}
}

// inputText is an input with what a re-encoder would change: spacing, a
// number beyond float64, trailing zeros, an escape, a null, nesting.
const inputText = `{ "q": "tödo\u0021", "n": 123456789012345678901234567890, "f": 2.50, "z": null, "deep": [[{"k": [true, false]}]] }`

func opCases() []goldenCase {
	schema := `{"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]}`
	return []goldenCase{
		{
			name:   "advertise",
			header: laptop,
			body: `{"op":"advertise","tools":[{"name":"grep","description":"Search files.","input_schema":` + schema +
				`,"subject_cwd":true},{"name":"fetch","description":"Fetch a URL.","input_schema":{"type":"object"},"title":"Fetch","output_schema":{"type": "object"},"annotations":{"readOnlyHint": true}}]}`,
			setup: func(r *scripted.Registry, _ *scripted.Mailbox) {
				r.OnAdvertise = func(id identity.Identity, _ *registryv1.AdvertiseRequest) (*registryv1.AdvertiseResponse, error) {
					return &registryv1.AdvertiseResponse{Wrote: true, Client: id.Name}, nil
				}
			},
			check: func(t *testing.T, r *scripted.Registry, _ *scripted.Mailbox) {
				c := r.Rec.Last(t, "Advertise")
				sawCaller(t, c, "laptop", identity.Host)
				want := &registryv1.AdvertiseRequest{Tools: []*registryv1.Tool{
					{Name: "grep", Description: "Search files.", InputSchema: schema, SubjectCwd: proto.Bool(true)},
					{Name: "fetch", Description: "Fetch a URL.", InputSchema: `{"type":"object"}`, Title: proto.String("Fetch"),
						OutputSchema: proto.String(`{"type": "object"}`), Annotations: proto.String(`{"readOnlyHint": true}`)},
				}}
				if !proto.Equal(c.Request, want) {
					t.Fatalf("the registry got %v, want %v", c.Request, want)
				}
			},
		},
		{
			name:   "advertise-unchanged",
			header: laptop,
			body:   `{"op":"advertise","tools":[]}`,
			setup: func(r *scripted.Registry, _ *scripted.Mailbox) {
				r.OnAdvertise = func(id identity.Identity, _ *registryv1.AdvertiseRequest) (*registryv1.AdvertiseResponse, error) {
					return &registryv1.AdvertiseResponse{Wrote: false, Client: id.Name}, nil
				}
			},
		},
		{
			name:   "invoke",
			header: alice,
			body:   `{"op":"invoke","client":"laptop","tool":"grep","input":` + inputText + `,"cwd":"/home/alice/src"}`,
			setup: func(_ *scripted.Registry, m *scripted.Mailbox) {
				m.OnInvoke = func(identity.Identity, *mailboxv1.InvokeRequest) (*mailboxv1.InvokeResponse, error) {
					return &mailboxv1.InvokeResponse{Invocation: handle}, nil
				}
			},
			check: func(t *testing.T, _ *scripted.Registry, m *scripted.Mailbox) {
				c := m.Rec.Last(t, "Invoke")
				sawCaller(t, c, "alice", identity.Operator)
				want := &mailboxv1.InvokeRequest{Client: "laptop", Tool: "grep", Input: inputText, Cwd: proto.String("/home/alice/src")}
				if !proto.Equal(c.Request, want) {
					t.Fatalf("the mailbox got %v, want %v", c.Request, want)
				}
			},
		},
		{
			name:   "invoke-null-cwd",
			header: alice,
			body:   `{"op":"invoke","client":"laptop","tool":"grep","input":null,"cwd":null}`,
			setup: func(_ *scripted.Registry, m *scripted.Mailbox) {
				m.OnInvoke = func(identity.Identity, *mailboxv1.InvokeRequest) (*mailboxv1.InvokeResponse, error) {
					return &mailboxv1.InvokeResponse{Invocation: handle}, nil
				}
			},
			check: func(t *testing.T, _ *scripted.Registry, m *scripted.Mailbox) {
				req := m.Rec.Last(t, "Invoke").Request.(*mailboxv1.InvokeRequest)
				if req.Input != "null" || req.Cwd != nil {
					t.Fatalf("the mailbox got input %q cwd %v, want null and no cwd", req.Input, req.Cwd)
				}
			},
		},
		{
			name:   "invocations",
			header: laptop,
			body:   `{"op":"invocations"}`,
			setup: func(_ *scripted.Registry, m *scripted.Mailbox) {
				m.OnInvocations = func(context.Context, identity.Identity, *mailboxv1.InvocationsRequest) (*mailboxv1.InvocationsResponse, error) {
					return &mailboxv1.InvocationsResponse{Rows: []*mailboxv1.Invocation{
						{Invocation: handle, Tool: "grep", Input: inputText, Cwd: proto.String("/home/alice/src"), Delivery: 2},
						{Invocation: "inv-ffeeddccbbaa99887766554433221100", Tool: "fetch", Input: `"https://example.com/?a=<b>&c"`, Delivery: 1},
					}}, nil
				}
			},
			check: func(t *testing.T, _ *scripted.Registry, m *scripted.Mailbox) {
				c := m.Rec.Last(t, "Invocations")
				sawCaller(t, c, "laptop", identity.Host)
				if req := c.Request.(*mailboxv1.InvocationsRequest); req.Wait != nil || req.Session != nil {
					t.Fatalf("invocations sent %v; the mailbox's default hold applies", req)
				}
			},
		},
		{
			name:   "invocations-none",
			header: laptop,
			body:   `{"op":"invocations"}`,
			setup: func(_ *scripted.Registry, m *scripted.Mailbox) {
				m.OnInvocations = func(context.Context, identity.Identity, *mailboxv1.InvocationsRequest) (*mailboxv1.InvocationsResponse, error) {
					return &mailboxv1.InvocationsResponse{}, nil
				}
			},
		},
		{
			name:   "complete",
			header: laptop,
			body:   `{"op":"complete","invocation":"` + handle + `","capture":{"stdout":"main.go:12: TODO\n","stderr":"","exit_code":0}}`,
			setup: func(_ *scripted.Registry, m *scripted.Mailbox) {
				m.OnComplete = func(_ identity.Identity, req *mailboxv1.CompleteRequest) (*mailboxv1.CompleteResponse, error) {
					// The receipt is the capture as stored: here the mailbox
					// prefixed stderr, so an echo would differ.
					stored := capture.New(req.GetCapture().GetStdout(),
						`this invocation was handed to "laptop" 2 times; each hand-off may have run it, so what this capture reports may be the effect of more than one run; read the world before acting again`,
						req.GetCapture().GetExitCode())
					return &mailboxv1.CompleteResponse{Invocation: req.GetInvocation(), Capture: stored}, nil
				}
			},
			check: func(t *testing.T, _ *scripted.Registry, m *scripted.Mailbox) {
				c := m.Rec.Last(t, "Complete")
				sawCaller(t, c, "laptop", identity.Host)
				want := &mailboxv1.CompleteRequest{Invocation: handle, Capture: capture.New("main.go:12: TODO\n", "", 0)}
				if !proto.Equal(c.Request, want) {
					t.Fatalf("the mailbox got %v, want %v", c.Request, want)
				}
			},
		},
		{
			name:   "capture-running",
			header: alice,
			body:   `{"op":"capture","invocation":"` + handle + `"}`,
			setup: func(_ *scripted.Registry, m *scripted.Mailbox) {
				m.OnCapture = func(_ identity.Identity, req *mailboxv1.CaptureRequest) (*mailboxv1.CaptureResponse, error) {
					return &mailboxv1.CaptureResponse{Invocation: req.GetInvocation()}, nil
				}
			},
		},
		{
			name:   "capture-answered",
			header: alice,
			body:   `{"op":"capture","invocation":"` + handle + `","wait":"10s"}`,
			setup: func(_ *scripted.Registry, m *scripted.Mailbox) {
				m.OnCapture = func(_ identity.Identity, req *mailboxv1.CaptureRequest) (*mailboxv1.CaptureResponse, error) {
					return &mailboxv1.CaptureResponse{Invocation: req.GetInvocation(),
						Capture: capture.New("", "grep: /nope: No such file or directory\n\t\"quoted\"", 2)}, nil
				}
			},
			check: func(t *testing.T, _ *scripted.Registry, m *scripted.Mailbox) {
				c := m.Rec.Last(t, "Capture")
				sawCaller(t, c, "alice", identity.Operator)
				if w := c.Request.(*mailboxv1.CaptureRequest).GetWait(); w.AsDuration() != 10*time.Second {
					t.Fatalf("wait reached the mailbox as %v, want 10s", w)
				}
			},
		},
		{
			name:   "clients",
			header: alice,
			body:   `{"op":"clients","workspace":"default"}`,
			setup: func(r *scripted.Registry, _ *scripted.Mailbox) {
				r.OnListClients = func(identity.Identity, *registryv1.ListClientsRequest) (*registryv1.ListClientsResponse, error) {
					return &registryv1.ListClientsResponse{Rows: []*registryv1.ClientRow{
						{Client: "laptop", Present: true, LastSeen: timestamppb.New(time.Date(2026, 3, 14, 15, 9, 26, 535897000, time.FixedZone("CET", 3600))),
							Tools: []*registryv1.Tool{
								{Name: "grep", Description: "Search files.", InputSchema: `{"type": "object", "properties": {"pattern": {"type": "string"}}}`, SubjectCwd: proto.Bool(false)},
								{Name: "fetch", Description: "", InputSchema: `{}`, Title: proto.String("Fetch"), OutputSchema: proto.String(`{"type":"object"}`), Annotations: proto.String(`{"readOnlyHint":true}`)},
							}},
						{Client: "new-box", Present: false},
					}}, nil
				}
			},
			check: func(t *testing.T, r *scripted.Registry, _ *scripted.Mailbox) {
				c := r.Rec.Last(t, "ListClients")
				sawCaller(t, c, "alice", identity.Operator)
				if w := c.Request.(*registryv1.ListClientsRequest).GetWorkspace(); w != "default" {
					t.Fatalf("workspace %q", w)
				}
			},
		},
		{
			name:   "clients-unknown-workspace",
			header: alice,
			body:   `{"op":"clients","workspace":"nope"}`,
			setup: func(r *scripted.Registry, _ *scripted.Mailbox) {
				r.OnListClients = func(_ identity.Identity, req *registryv1.ListClientsRequest) (*registryv1.ListClientsResponse, error) {
					return nil, status.Errorf(codes.NotFound, "unknown workspace %q", req.GetWorkspace())
				}
			},
		},
		{
			name:   "capture-foreign-handle",
			header: as("mallory", identity.Operator),
			body:   `{"op":"capture","invocation":"` + handle + `"}`,
			setup: func(_ *scripted.Registry, m *scripted.Mailbox) {
				m.OnCapture = func(identity.Identity, *mailboxv1.CaptureRequest) (*mailboxv1.CaptureResponse, error) {
					return nil, status.Error(codes.NotFound, absent)
				}
			},
		},
		{
			name:   "invoke-no-such-tool",
			header: alice,
			body:   `{"op":"invoke","client":"laptop","tool":"rm","input":{}}`,
			setup: func(_ *scripted.Registry, m *scripted.Mailbox) {
				m.OnInvoke = func(_ identity.Identity, req *mailboxv1.InvokeRequest) (*mailboxv1.InvokeResponse, error) {
					return nil, status.Errorf(codes.FailedPrecondition, "client %q advertises no tool %q right now", req.GetClient(), req.GetTool())
				}
			},
		},
		{
			name:   "invocations-second-reader",
			header: laptop,
			body:   `{"op":"invocations"}`,
			setup: func(_ *scripted.Registry, m *scripted.Mailbox) {
				m.OnInvocations = func(context.Context, identity.Identity, *mailboxv1.InvocationsRequest) (*mailboxv1.InvocationsResponse, error) {
					return nil, status.Error(codes.FailedPrecondition, `invocations: "laptop" is already holding this engine's follow-class read — one machine's queue has one reader`)
				}
			},
		},
		{
			name:   "invoke-grade-refused",
			header: as("alice", identity.Host),
			body:   `{"op":"invoke","client":"laptop","tool":"grep","input":{}}`,
			setup: func(_ *scripted.Registry, m *scripted.Mailbox) {
				m.OnInvoke = func(id identity.Identity, _ *mailboxv1.InvokeRequest) (*mailboxv1.InvokeResponse, error) {
					return nil, status.Errorf(codes.PermissionDenied, "%q is a %s and may not call MailboxService.Invoke", id.Name, id.Grade)
				}
			},
		},
	}
}
