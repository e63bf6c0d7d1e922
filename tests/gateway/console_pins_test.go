package gateway_test

import (
	"net/http"
	"net/url"
	"testing"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

// The console's pins page rejects a change for an admin, and refuses a
// driver's decision with the registry's sentence.
func TestConsoleRejectsAChange(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{})
	rm := &registryv1.Tool{Name: "rm", Description: "Removes a file.", InputSchema: `{"type":"object"}`}
	s.advertise(t, "box", rm)
	rm.Description = "Removes a file and its neighbours."
	s.advertise(t, "box", rm)
	res, err := s.Registry.ListPins(opsCtx, &registryv1.ListPinsRequest{Workspace: "default"})
	if err != nil || len(res.GetPins()) != 1 {
		t.Fatalf("ListPins = %v, %v", res, err)
	}
	form := url.Values{"fingerprint": {res.GetPins()[0].GetAdvertisedFingerprint()}}
	mustStatus(t, "a driver's reject", s.consolePost(t, "/console/api/workspaces/default/pins/box_rm/reject", aliceHeader, form),
		http.StatusForbidden, "may not call RegistryService.RejectPin")
	mustStatus(t, "reject", s.consolePost(t, "/console/api/workspaces/default/pins/box_rm/reject", opsHeader, form),
		http.StatusOK, "rejected box_rm.", `<span class="pin-state">rejected</span>`)
	mustStatus(t, "a decision that is neither", s.consolePost(t, "/console/api/workspaces/default/pins/box_rm/ignore", opsHeader, form),
		http.StatusBadRequest, "&#34;ignore&#34; is neither approve nor reject")
}
