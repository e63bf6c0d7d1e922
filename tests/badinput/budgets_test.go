package badinput

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox"
	"github.com/switchboard-run/switchboard/services/mailbox/mailboxtest"
)

// budgetRows are the rows of docs/bad-input.md about the mailbox's byte
// budgets and bounds. The floods run on a mailbox of their own, with small
// budgets, so they fill nothing the other rows use.
var budgetRows = map[string]func(t *testing.T, s *suite){
	"poster-flood": func(t *testing.T, _ *suite) {
		mb := smallMailbox(t, func(b *mailbox.Bounds) { b.MaxInputBytes, b.MaxPosterBytes = 64<<10, 256<<10 })
		for range 4 {
			invokeAs(t, mb, "alice", "laptop", 60<<10)
		}
		_, err := mb.Invoke(testkit.As("alice", identity.Driver), &mailboxv1.InvokeRequest{Client: "laptop", Tool: "echo", Input: jsonText(60 << 10)})
		wantStatus(t, err, codes.ResourceExhausted, `driver "alice" holds 245776 bytes of invocations and uncollected captures in this mailbox, and this invocation's 61444 more would pass the budget of 262144 per poster (--max-poster-bytes); collect or cancel what it posted first`)
		invokeAs(t, mb, "bob", "laptop", 60<<10) // another poster is served
	},
	"one-poster-default-budget": func(t *testing.T, _ *suite) {
		mb := smallMailbox(t, func(b *mailbox.Bounds) {
			b.MaxHeldBytes, b.MaxPosterBytes, b.MaxClientBytes = mailbox.DefaultMaxHeldBytes, mailbox.DefaultMaxPosterBytes, mailbox.DefaultMaxClientBytes
		})
		held := 0
		for {
			_, err := mb.Invoke(testkit.As("alice", identity.Driver), &mailboxv1.InvokeRequest{Client: "laptop", Tool: "echo", Input: jsonText(mailbox.DefaultMaxInputBytes)})
			if err != nil {
				if status.Code(err) != codes.ResourceExhausted || !strings.Contains(status.Convert(err).Message(), "per poster (--max-poster-bytes)") {
					t.Fatalf("%v\nwant the poster's own budget to refuse", err)
				}
				break
			}
			if held += mailbox.DefaultMaxInputBytes; held > mailbox.DefaultMaxClientBytes {
				t.Fatalf("one driver posted %d bytes to one client, past the client's whole budget", held)
			}
		}
		if held > mailbox.DefaultMaxClientBytes/4 || held > mailbox.DefaultMaxHeldBytes/16 {
			t.Fatalf("one driver held %d bytes: more than a quarter of a client's budget or a sixteenth of the replica's", held)
		}
		invokeAs(t, mb, "bob", "laptop", mailbox.DefaultMaxInputBytes) // another poster is served, to the same client
	},
	"client-flood": func(t *testing.T, _ *suite) {
		mb := smallMailbox(t, func(b *mailbox.Bounds) { b.MaxInputBytes, b.MaxClientBytes = 64<<10, 256<<10 })
		for _, poster := range []string{"alice", "bob", "carol", "dave"} {
			invokeAs(t, mb, poster, "laptop", 60<<10)
		}
		_, err := mb.Invoke(testkit.As("erin", identity.Driver), &mailboxv1.InvokeRequest{Client: "laptop", Tool: "echo", Input: jsonText(60 << 10)})
		wantStatus(t, err, codes.ResourceExhausted, `client "laptop" has 245776 bytes of invocations and uncollected captures waiting in this mailbox, and this invocation's 61444 more would pass the budget of 262144 per client (--max-client-bytes); it is not answering (or its posters not collecting) fast enough`)
		invokeAs(t, mb, "erin", "desk", 60<<10) // another client is served
	},
	"huge-backlog": func(t *testing.T, _ *suite) {
		mb := smallMailbox(t, nil)
		for range 20 {
			invokeAs(t, mb, "alice", "laptop", mailbox.DefaultMaxInputBytes)
		}
		handed := map[string]int{}
		for reads := 0; len(handed) < 20 && reads < 20; reads++ {
			res, err := mb.Invocations(testkit.As("laptop", identity.Host), &mailboxv1.InvocationsRequest{})
			if err != nil {
				t.Fatalf("read %d of a 20 MiB backlog: %v", reads, err)
			}
			if n := proto.Size(res); n > mailbox.DefaultMaxReadBytes || len(res.GetRows()) == 0 {
				t.Fatalf("read %d answered %d rows in %d bytes; want some, within %d", reads, len(res.GetRows()), n, mailbox.DefaultMaxReadBytes)
			}
			for _, row := range res.GetRows() {
				handed[row.GetInvocation()] += int(row.GetDelivery())
				c, err := mb.Complete(testkit.As("laptop", identity.Host), &mailboxv1.CompleteRequest{Invocation: row.GetInvocation(), Capture: capture.New("", "", 0)})
				if err != nil || strings.Contains(c.GetCapture().GetStderr(), "handed") {
					t.Fatalf("completing %s: %v, %v", row.GetInvocation(), c, err)
				}
			}
		}
		for id, n := range handed {
			if n != 1 {
				t.Fatalf("%s was handed out as delivery %d; want each once", id, n)
			}
		}
		if len(handed) != 20 {
			t.Fatalf("%d of 20 invocations were handed out", len(handed))
		}
	},
	"huge-input": func(t *testing.T, s *suite) {
		_, err := s.mb.Invoke(testkit.As("driver", identity.Driver), &mailboxv1.InvokeRequest{Client: "box", Tool: "echo", Input: jsonText(2 << 20)})
		wantStatus(t, err, codes.ResourceExhausted, "input: 2097152 bytes is more than the 1048576 this mailbox takes for one invocation (--max-input-bytes)")
	},
	"huge-cwd": func(t *testing.T, s *suite) {
		_, err := s.mb.Invoke(testkit.As("driver", identity.Driver), &mailboxv1.InvokeRequest{Client: "box", Tool: "echo", Input: "{}", Cwd: proto.String("/" + strings.Repeat("d", 4096))})
		wantStatus(t, err, codes.InvalidArgument, "cwd: 4097 bytes is more than the 4096 a path may hold")
	},
	"huge-cancel-reason": func(t *testing.T, s *suite) {
		_, err := s.mb.Cancel(testkit.As("driver", identity.Driver), &mailboxv1.CancelRequest{Invocation: "inv-0", Reason: proto.String(strings.Repeat("r", 2048))})
		wantStatus(t, err, codes.InvalidArgument, "cancel: the reason holds 2048 bytes; at most 1024 are kept (--max-cancel-reason)")
	},
}

// smallMailbox serves a registry and a mailbox of their own, inputs of at
// most 1 MiB, "laptop" and "desk" advertising "echo"; tune shrinks a bound.
func smallMailbox(t *testing.T, tune func(*mailbox.Bounds)) mailboxv1.MailboxServiceClient {
	t.Helper()
	b := mailboxtest.Defaults
	if tune != nil {
		tune(&b)
	}
	m := mailboxtest.New(t, mailboxtest.Options{Mailbox: b})
	for _, client := range []string{"laptop", "desk"} {
		_, err := m.Registry.Advertise(testkit.As(client, identity.Host), &registryv1.AdvertiseRequest{
			Tools: []*registryv1.Tool{{Name: "echo", Description: "echo", InputSchema: `{"type":"object"}`}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	return m.Mailbox
}

// jsonText is n bytes of JSON text: one string.
func jsonText(n int) string { return `"` + strings.Repeat("x", n-2) + `"` }

func invokeAs(t *testing.T, mb mailboxv1.MailboxServiceClient, poster, client string, n int) {
	t.Helper()
	if _, err := mb.Invoke(testkit.As(poster, identity.Driver), &mailboxv1.InvokeRequest{Client: client, Tool: "echo", Input: jsonText(n)}); err != nil {
		t.Fatalf("%s posting %d bytes to %s: %v", poster, n, client, err)
	}
}
