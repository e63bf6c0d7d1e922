package bridge

import (
	"testing"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// TestAResourceUpdateReachesTheCatalogWatch: the conformance server offers
// subscriptions and says test://watched-resource changed every 3 s to
// whoever subscribed; the bridge subscribes to what it lists, and its
// catalog watchers hear each update with the resource's URI.
func TestAResourceUpdateReachesTheCatalogWatch(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	stream := s.watchCatalog(t)
	s.mount(t, "conf", stdioServer(testkit.Tool(t, "everything-server")))
	for {
		ev, err := stream.Recv()
		if err != nil {
			t.Fatalf("no RESOURCE_UPDATED before the watch ended: %v", err)
		}
		if ev.GetChange() == bridgev1.CatalogChange_CATALOG_CHANGE_RESOURCE_UPDATED {
			if ev.GetClient() != "conf" || ev.GetUri() != "test://watched-resource" {
				t.Fatalf("RESOURCE_UPDATED of %q, %q; want conf's test://watched-resource", ev.GetClient(), ev.GetUri())
			}
			return
		}
	}
}
