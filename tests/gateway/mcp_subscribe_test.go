package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// TestASubscriberHearsAResourceChange: the conformance server says
// test://watched-resource changed every 3 s to whoever subscribed. A client
// of the endpoint that subscribes hears it through the bridge's
// subscription, in either era; one that asks for a resource nobody serves
// is refused.
func TestASubscriberHearsAResourceChange(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{})
	s.mountConformance(t)
	const watched = "test://watched-resource"
	forEachRevision(t, func(t *testing.T, rev string) {
		updated := make(chan string, 16)
		cs := s.connectAt(t, rev, "/mcp", as("alice", identity.Driver), &mcp.ClientOptions{
			ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
				select {
				case updated <- req.Params.URI:
				default:
				}
			}})
		if caps := cs.InitializeResult().Capabilities; caps.Resources == nil || !caps.Resources.Subscribe {
			t.Fatalf("capabilities %+v; want resources with subscribe", caps.Resources)
		}
		testkit.Eventually(t, "the watched resource listed", 20*time.Second, func() bool {
			return resourceURIs(t, cs)[watched] == "conf"
		})
		if err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: watched}); err != nil {
			t.Fatalf("subscribing to %s: %v", watched, err)
		}
		select {
		case uri := <-updated:
			if uri != watched {
				t.Fatalf("notifications/resources/updated for %q; want %q", uri, watched)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no notifications/resources/updated within 30 s of subscribing (the server sends one every 3 s)")
		}
		// A resource nobody serves: refused in a session; in the stateless
		// era the listen stream's acknowledgement leaves it out.
		if rev < "2026-07-28" {
			err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: "test://nope"})
			refusedWith(t, err, `no resource "test://nope" is served in workspace "default" right now, so none can be subscribed to; list resources/list for the URIs in force`)
		}
	})
}
