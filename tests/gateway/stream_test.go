package gateway_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/tests/internal/scripted"
)

// A REST follow stream outlives the server's write timeout: here the
// timeout is 300 ms and the second event comes after 1 s.
func TestStreamingRoutesOutliveTheWriteTimeout(t *testing.T) {
	t.Parallel()
	mb := &scripted.Mailbox{
		OnFollow: func(ctx context.Context, _ identity.Identity, _ *mailboxv1.FollowRequest, send func(*mailboxv1.FollowResponse) error) error {
			if err := send(&mailboxv1.FollowResponse{Event: &mailboxv1.FollowResponse_Opened{Opened: &mailboxv1.Opened{}}}); err != nil {
				return err
			}
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
				return ctx.Err()
			}
			return send(&mailboxv1.FollowResponse{Event: &mailboxv1.FollowResponse_Invocation{Invocation: &mailboxv1.Invocation{Invocation: handle, Tool: "grep", Input: "{}", Delivery: 1}}})
		},
	}
	s := newSuite(t, options{scripted: &scripted.Options{Mailbox: mb}})
	srv := httptest.NewUnstartedServer(s.gateway.Handler())
	srv.Config.WriteTimeout = 300 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)

	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/invocations:follow", nil)
	req.Header = laptop.Clone()
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var lines []string
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("the stream broke after %d events: %v", len(lines), err)
	}
	if len(lines) != 2 || !strings.Contains(lines[0], `"opened"`) || !strings.Contains(lines[1], `"invocation":"`+handle+`"`) {
		t.Fatalf("events %q", lines)
	}
}
