package gateway_test

import (
	"bufio"
	"net/http"
	"testing"
	"time"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/services/gateway"
)

// A stream held open with a token ends once the token is revoked: the
// gateway checks the token again while the request lasts. The request is
// otherwise endless (a watch), so only the recheck can end it.
func TestAStreamEndsWhenItsTokenIsRevoked(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{configure: func(c *gateway.Config) { c.TokenRecheck = 20 * time.Millisecond }})
	tok, err := s.Registry.CreateToken(opsCtx, &registryv1.CreateTokenRequest{Identity: "watcher", Grade: "driver", Workspaces: []string{"default"}})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/v1/watch?workspace=default", nil)
	req.Header = bearer(tok.GetSecret())
	res, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("watch: HTTP %d", res.StatusCode)
	}
	// The first event says the stream is up and the token was taken, and
	// rechecked more than once by now (the registry answers it first).
	sc := bufio.NewScanner(res.Body)
	if !sc.Scan() {
		t.Fatalf("the watch ended before its first event: %v", sc.Err())
	}
	if _, err := s.Registry.RevokeToken(opsCtx, &registryv1.RevokeTokenRequest{Id: tok.GetToken().GetId()}); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() { // the rest of the snapshot, until the stream is cut
	}
	// It ended: the body was closed by the gateway, not by a timeout of ours
	// (the scan has no deadline; the test's own timeout is the bound).
}
