package gateway_test

import (
	"encoding/json"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// inputText is an input with what a re-encoder would change: spacing, a
// number beyond float64, trailing zeros, an escape, a null, nesting.
const inputText = `{ "q": "tödo\u0021", "n": 123456789012345678901234567890, "f": 2.50, "z": null, "deep": [[{"k": [true, false]}]] }`

const grepSchema = `{"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]}`

// grep is the tool laptop advertises in most cases.
func grep() *registryv1.Tool {
	return &registryv1.Tool{Name: "grep", Description: "Search files.", InputSchema: grepSchema, SubjectCwd: proto.Bool(true)}
}

// laptopAdvertisesGrep is the setup of a case that invokes grep on laptop.
func laptopAdvertisesGrep(t *testing.T, b *suite) {
	t.Helper()
	b.advertise(t, "laptop", grep())
}

// handedToLaptop: alice has invoked grep on laptop, and laptop's read has
// handed it out once; the invocation is running.
func handedToLaptop(t *testing.T, b *suite) {
	t.Helper()
	laptopAdvertisesGrep(t, b)
	b.invoke(t, "alice", "laptop", "grep", `{"pattern": "TODO"}`, nil)
	b.read(t, "laptop")
}

// completeLater answers the case's invocation as laptop once the gateway
// has asked the mailbox about it with a wait, so the case shows the wait
// was passed on: a request whose wait were dropped answers at once, running.
func completeLater(c *mailboxv1.Capture) func(*testing.T, *suite) {
	return func(t *testing.T, b *suite) {
		timeout := time.After(10 * time.Second)
		for id := ""; id != b.inv; {
			select {
			case id = <-b.waited:
			case <-timeout:
				t.Errorf("the gateway never asked the mailbox to wait for %s", b.inv)
				return
			}
		}
		if err := b.complete("laptop", b.inv, c); err != nil {
			t.Errorf("laptop completing: %v", err)
		}
	}
}

// routedTo reads the invocation that laptop's read hands out, after an
// invoke whose reply is res, and checks it is the one res names.
func routedTo(t *testing.T, b *suite, res reply) *mailboxv1.Invocation {
	t.Helper()
	var routed struct{ Invocation string }
	if err := json.Unmarshal(res.Body, &routed); err != nil {
		t.Fatalf("the reply %s: %v", res.Body, err)
	}
	rows := b.read(t, "laptop")
	if len(rows) != 1 || rows[0].GetInvocation() != routed.Invocation {
		t.Fatalf("laptop was handed %v, want %s alone", rows, routed.Invocation)
	}
	// Only the poster may collect: alice seeing it running shows that the
	// gateway posted as alice.
	if c := b.collect(t, "alice", routed.Invocation); c.Capture != nil {
		t.Fatalf("a capture %v before laptop answered", c.Capture)
	}
	return rows[0]
}

// laptopInAGroup: laptop advertises grep and fetch in the default
// workspace, and its group "search" holds grep alone.
func laptopInAGroup(t *testing.T, b *suite) {
	t.Helper()
	b.advertise(t, "laptop", grep(), &registryv1.Tool{Name: "fetch", Description: "Fetch a URL.", InputSchema: `{"type":"object"}`})
	b.join(t, "default", "laptop")
	if _, err := b.Registry.SetGroup(opsCtx, &registryv1.SetGroupRequest{Group: &registryv1.Group{
		Workspace: "default", Name: "search", Patterns: []string{"laptop_grep"}}}); err != nil {
		t.Fatal(err)
	}
}

// clientsInAGroup: laptop advertises grep, fetch and ls, box advertises
// uptime, both in the default workspace; its group "search" holds grep
// (shown as "find", described anew) and ls (described anew).
func clientsInAGroup(t *testing.T, b *suite) {
	t.Helper()
	b.advertise(t, "laptop", grep(), &registryv1.Tool{Name: "fetch", Description: "Fetch a URL.", InputSchema: `{"type":"object"}`},
		&registryv1.Tool{Name: "ls", Description: "List.", InputSchema: `{}`, Title: proto.String("List")})
	b.advertise(t, "box", &registryv1.Tool{Name: "uptime", Description: "How long the box has run.", InputSchema: `{}`})
	b.join(t, "default", "laptop", "box")
	if _, err := b.Registry.SetGroup(opsCtx, &registryv1.SetGroupRequest{Group: &registryv1.Group{
		Workspace: "default", Name: "search", Patterns: []string{"laptop_grep", "laptop_ls"},
		Overrides: []*registryv1.ToolOverride{
			{Tool: "laptop_grep", Alias: proto.String("find"), Description: proto.String("Find text in files.")},
			{Tool: "laptop_ls", Description: proto.String("Lists a directory.")},
		}}}); err != nil {
		t.Fatal(err)
	}
}

func opCases() []goldenCase {
	return []goldenCase{
		{
			name:   "advertise",
			header: laptop,
			body: `{"op":"advertise","tools":[{"name":"grep","description":"Search files.","input_schema":` + grepSchema +
				`,"subject_cwd":true},{"name":"fetch","description":"Fetch a URL.","input_schema":{"type":"object"},"title":"Fetch","output_schema":{"type": "object"},"annotations":{"readOnlyHint": true}}]}`,
			check: func(t *testing.T, b *suite, _ reply) {
				// The set landed under the caller's name, each JSON value as sent.
				res, err := b.Registry.GetClient(opsCtx, &registryv1.GetClientRequest{Client: "laptop"})
				if err != nil {
					t.Fatal(err)
				}
				want := []*registryv1.Tool{grep(),
					{Name: "fetch", Description: "Fetch a URL.", InputSchema: `{"type":"object"}`, Title: proto.String("Fetch"),
						OutputSchema: proto.String(`{"type": "object"}`), Annotations: proto.String(`{"readOnlyHint": true}`)}}
				if got := res.GetRow().GetTools(); !proto.Equal(&registryv1.AdvertiseRequest{Tools: got}, &registryv1.AdvertiseRequest{Tools: want}) {
					t.Fatalf("the registry holds %v for laptop, want %v", got, want)
				}
			},
		},
		{
			name:   "advertise-unchanged",
			header: laptop,
			body:   `{"op":"advertise","tools":[{"name":"grep","description":"Search files.","input_schema":` + grepSchema + `,"subject_cwd":true}]}`,
			setup:  laptopAdvertisesGrep,
		},
		{
			name:   "invoke",
			header: alice,
			body:   `{"op":"invoke","client":"laptop","tool":"grep","input":` + inputText + `,"cwd":"/home/alice/src"}`,
			setup:  laptopAdvertisesGrep,
			check: func(t *testing.T, b *suite, res reply) {
				row := routedTo(t, b, res)
				if row.GetTool() != "grep" || row.GetInput() != inputText || row.GetCwd() != "/home/alice/src" {
					t.Fatalf("laptop read tool %q input %s cwd %v; want grep, the input byte for byte, /home/alice/src",
						row.GetTool(), row.GetInput(), row.Cwd)
				}
			},
		},
		{
			name:   "invoke-null-cwd",
			header: alice,
			body:   `{"op":"invoke","client":"laptop","tool":"grep","input":null,"cwd":null}`,
			setup:  laptopAdvertisesGrep,
			check: func(t *testing.T, b *suite, res reply) {
				if row := routedTo(t, b, res); row.GetInput() != "null" || row.Cwd != nil {
					t.Fatalf("laptop read input %q cwd %v, want null and no cwd", row.GetInput(), row.Cwd)
				}
			},
		},
		{
			name:   "invocations",
			header: laptop,
			body:   `{"op":"invocations"}`,
			setup: func(t *testing.T, b *suite) {
				b.advertise(t, "laptop", grep(), &registryv1.Tool{Name: "fetch", Description: "Fetch a URL.", InputSchema: `{}`})
				b.invoke(t, "alice", "laptop", "grep", inputText, proto.String("/home/alice/src"))
				b.invoke(t, "alice", "laptop", "fetch", `"https://example.com/?a=<b>&c"`, nil)
			},
		},
		{
			// The act names no wait, so an empty read holds the mailbox's
			// full 30 s. Rather than wait that out, the case ends the hold
			// the other way the real mailbox ends one: its drain (SIGTERM),
			// once the read is held, answers the same empty rows.
			name:   "invocations-none",
			header: laptop,
			body:   `{"op":"invocations"}`,
			during: func(t *testing.T, b *suite) {
				if err := b.present("laptop"); err != nil {
					t.Error(err)
				}
				b.drain()
			},
		},
		{
			name:   "complete",
			header: laptop,
			body:   `{"op":"complete","invocation":"` + handle + `","capture":{"stdout":"main.go:12: TODO\n","stderr":"","exit_code":0}}`,
			setup: func(t *testing.T, b *suite) {
				// Handed out twice: the mailbox prefixes the stderr it
				// stores, so the receipt (a re-read) differs from an echo.
				handedToLaptop(t, b)
				b.read(t, "laptop")
			},
			check: func(t *testing.T, b *suite, _ reply) {
				warning := `this invocation was handed to "laptop" 2 times; each hand-off may have run it, so what this capture reports may be the effect of more than one run; read the world before acting again`
				want := capture.New("main.go:12: TODO\n", warning, 0)
				want.Warning = &warning
				if got := b.collect(t, "alice", b.inv).GetCapture(); !proto.Equal(got, want) {
					t.Fatalf("alice collected %v, want %v", got, want)
				}
			},
		},
		{
			name:   "capture-running",
			header: alice,
			body:   `{"op":"capture","invocation":"` + handle + `"}`,
			setup:  handedToLaptop,
		},
		{
			// Asked for, a running reply carries the host's notes.
			name:   "capture-progress",
			header: alice,
			body:   `{"op":"capture","invocation":"` + handle + `","progress":true}`,
			setup: func(t *testing.T, b *suite) {
				handedToLaptop(t, b)
				b.report(t, "laptop", b.inv, 0.5, nil, "scanning \"src\"")
				b.report(t, "laptop", b.inv, 3, proto.Float64(4), "")
			},
		},
		{
			name:   "capture-progress-none-yet",
			header: alice,
			body:   `{"op":"capture","invocation":"` + handle + `","progress":false}`,
			setup:  handedToLaptop,
		},
		{
			name:   "capture-progress-none-yet-asked",
			header: alice,
			body:   `{"op":"capture","invocation":"` + handle + `","progress":true}`,
			setup:  handedToLaptop,
		},
		{
			// Answered, the reply is the capture alone, as without progress.
			name:   "capture-progress-answered",
			header: alice,
			body:   `{"op":"capture","invocation":"` + handle + `","wait":"10s","progress":true}`,
			setup: func(t *testing.T, b *suite) {
				handedToLaptop(t, b)
				b.report(t, "laptop", b.inv, 1, nil, "started")
			},
			during: completeLater(capture.New("3 matches\n", "", 0)),
		},
		{
			name:   "capture-answered",
			header: alice,
			body:   `{"op":"capture","invocation":"` + handle + `","wait":"10s"}`,
			setup:  handedToLaptop,
			during: completeLater(capture.New("", "grep: /nope: No such file or directory\n\t\"quoted\"", 2)),
		},
		{
			name:   "clients",
			header: alice,
			body:   `{"op":"clients","workspace":"default"}`,
			setup: func(t *testing.T, b *suite) {
				b.advertise(t, "laptop",
					&registryv1.Tool{Name: "grep", Description: "Search files.", InputSchema: `{"type": "object", "properties": {"pattern": {"type": "string"}}}`, SubjectCwd: proto.Bool(false)},
					&registryv1.Tool{Name: "fetch", Description: "", InputSchema: `{}`, Title: proto.String("Fetch"), OutputSchema: proto.String(`{"type":"object"}`), Annotations: proto.String(`{"readOnlyHint":true}`)})
				b.join(t, "default", "laptop", "new-box")
				b.hold(t, "laptop")
				if err := b.present("laptop"); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name:   "clients-unknown-workspace",
			header: alice,
			body:   `{"op":"clients","workspace":"nope"}`,
			setup:  func(t *testing.T, b *suite) { b.join(t, "default", "laptop") },
		},
		{
			name:   "capture-foreign-handle",
			header: as("mallory", identity.Driver),
			body:   `{"op":"capture","invocation":"` + handle + `"}`,
			setup:  handedToLaptop,
			check: func(t *testing.T, b *suite, _ reply) {
				b.collect(t, "alice", b.inv) // still alice's to collect
			},
		},
		{
			name:   "invoke-no-such-tool",
			header: alice,
			body:   `{"op":"invoke","client":"laptop","tool":"rm","input":{}}`,
			setup:  laptopAdvertisesGrep,
		},
		{
			name:   "invocations-second-reader",
			header: laptop,
			body:   `{"op":"invocations"}`,
			setup:  func(t *testing.T, b *suite) { b.hold(t, "laptop") },
		},
		{
			name:   "invoke-group",
			header: alice,
			body:   `{"op":"invoke","client":"laptop","tool":"grep","input":{},"group":"default/search"}`,
			setup:  laptopInAGroup,
			check: func(t *testing.T, b *suite, res reply) {
				if row := routedTo(t, b, res); row.GetTool() != "grep" {
					t.Fatalf("laptop read tool %q, want grep", row.GetTool())
				}
			},
		},
		{
			// fetch exists, but outside the group it is absent.
			name:   "invoke-group-outside",
			header: alice,
			body:   `{"op":"invoke","client":"laptop","tool":"fetch","input":{},"group":"default/search"}`,
			setup:  laptopInAGroup,
		},
		{
			name:   "invoke-group-unknown",
			header: alice,
			body:   `{"op":"invoke","client":"laptop","tool":"grep","input":{},"group":"default/nope"}`,
			setup:  laptopInAGroup,
		},
		{
			// grep under its alias with the group's description, ls with
			// the group's description, fetch left out; box holds no tool
			// of the group, so its row is absent.
			name:   "clients-group",
			header: alice,
			body:   `{"op":"clients","workspace":"default","group":"default/search"}`,
			setup:  clientsInAGroup,
		},
		{
			name:   "clients-group-unknown",
			header: alice,
			body:   `{"op":"clients","workspace":"default","group":"default/nope"}`,
			setup:  clientsInAGroup,
		},
		{
			name:   "refuse-clients-group-workspace",
			header: alice,
			body:   `{"op":"clients","workspace":"default","group":"other/search"}`,
		},
		{
			name:   "refuse-group-unqualified",
			header: alice,
			body:   `{"op":"invoke","client":"laptop","tool":"grep","input":{},"group":"search"}`,
		},
		{
			// laptop advertises grep: the same body as a driver routes.
			name:   "invoke-grade-refused",
			header: as("alice", identity.Host),
			body:   `{"op":"invoke","client":"laptop","tool":"grep","input":{}}`,
			setup:  laptopAdvertisesGrep,
		},
	}
}
