package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/grpcclient"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// BenchmarkRoundTrip compares one full round trip — a driver invokes, a
// parked host reads it, completes it, and the driver collects the capture —
// over HTTP through the gateway (act endpoint on both sides) and over gRPC
// straight to the mailbox, against the same real processes in the same run.
// Run it without -race: go test -run '^$' -bench RoundTrip ./services/gateway/
func BenchmarkRoundTrip(b *testing.B) {
	s := startProcSuite(b)
	mbAddr := s.mailboxAddr
	alice := s.party(as("alice", identity.Driver))

	b.Run("grpc", func(b *testing.B) {
		cc, err := grpcclient.Dial(mbAddr, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cc.Close()
		mb := mailboxv1.NewMailboxServiceClient(cc)
		host := testkit.As("grpc-box", identity.Host)
		driver := aliceCtx
		s.party(as("grpc-box", identity.Host)).act(b, 200, `{"op":"advertise","tools":[{"name":"echo","description":"","input_schema":{}}]}`)
		ctx, stop := context.WithCancel(host)
		defer stop()
		go func() { // the host: a parked read, then complete each row
			for ctx.Err() == nil {
				res, err := mb.Invocations(ctx, &mailboxv1.InvocationsRequest{})
				if err != nil {
					return
				}
				for _, row := range res.GetRows() {
					_, _ = mb.Complete(ctx, &mailboxv1.CompleteRequest{Invocation: row.GetInvocation(), Capture: capture.New(row.GetInput(), "", 0)})
				}
			}
		}()
		b.ResetTimer()
		for i := range b.N {
			input := fmt.Sprintf(`{"i":%d}`, i)
			inv, err := mb.Invoke(driver, &mailboxv1.InvokeRequest{Client: "grpc-box", Tool: "echo", Input: input})
			if err != nil {
				b.Fatal(err)
			}
			res, err := mb.Capture(driver, &mailboxv1.CaptureRequest{Invocation: inv.GetInvocation(), Wait: durationpb.New(10 * time.Second)})
			if err != nil || res.GetCapture().GetStdout() != input {
				b.Fatalf("capture %v: %v", res, err)
			}
		}
	})

	b.Run("http", func(b *testing.B) {
		box := s.party(as("http-box", identity.Host))
		box.act(b, 200, `{"op":"advertise","tools":[{"name":"echo","description":"","input_schema":{}}]}`)
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		go serveEcho(ctx, box, make(chan string, 1<<20), make(chan error, 1))
		b.ResetTimer()
		for i := range b.N {
			input := fmt.Sprintf(`{"i":%d}`, i)
			inv := field(b, alice.act(b, 200, `{"op":"invoke","client":"http-box","tool":"echo","input":`+input+`}`), "invocation")
			st, body, err := alice.send(context.Background(), http.MethodPost, "/v1/act", `{"op":"capture","invocation":"`+inv+`","wait":"10s"}`)
			var res struct {
				Capture struct {
					Stdout string `json:"stdout"`
				} `json:"capture"`
			}
			if err != nil || st != 200 || json.Unmarshal([]byte(body), &res) != nil || res.Capture.Stdout != input {
				b.Fatalf("capture: HTTP %d %s %v", st, body, err)
			}
		}
	})
}
