package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

func TestHTTPOnlyHostAndDriverCompleteRoundTrips(t *testing.T) {
	t.Parallel()
	s := startProcSuite(t)
	alice, laptop := s.party(as("alice", identity.Driver)), s.party(as("laptop", identity.Host))
	ops := s.party(as("ops", identity.Admin))

	laptop.act(t, 200, `{"op":"advertise","tools":[{"name":"echo","description":"Prints its input.","input_schema":`+echoSchema+`}]}`)
	if got := laptop.act(t, 200, `{"op":"advertise","tools":[{"name":"echo","description":"Prints its input.","input_schema":`+echoSchema+`}]}`); got != `{"ok":true,"kind":"advertised","wrote":false}` {
		t.Fatalf("re-advertising the same set: %s", got)
	}
	ops.must(t, 200, http.MethodPut, "/v1/workspaces/default/clients/laptop", "")

	// Before any host reads, the capture is absent: the reply has no capture key.
	input := `{ "text": "héllo", "n": 123456789012345678901234567890, "f": 1.50, "z": null, "deep": [[{}]] }`
	inv := field(t, alice.act(t, 200, `{"op":"invoke","client":"laptop","tool":"echo","input":`+input+`}`), "invocation")
	if got, want := alice.act(t, 200, `{"op":"capture","invocation":"`+inv+`"}`), `{"ok":true,"kind":"routed","invocation":"`+inv+`"}`; got != want {
		t.Fatalf("capture while running: %s, want %s", got, want)
	}
	// Someone else's handle is absent, never forbidden.
	absent := `{"ok":false,"error":"no invocation \"` + inv + `\" is in flight; it was answered already, it expired, or this engine restarted since it was posted — the box may have run it; read the world before acting again"}`
	if got := s.party(as("mallory", identity.Driver)).act(t, 404, `{"op":"capture","invocation":"`+inv+`"}`); got != absent {
		t.Fatalf("a foreign capture: %s\nwant %s", got, absent)
	}

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	rows, errs := make(chan string, 8), make(chan error, 1)
	go serveEcho(ctx, laptop, rows, errs)

	// Round trip 1, act only: the host got the input byte for byte, and the
	// driver's capture carries it back.
	got := alice.act(t, 200, `{"op":"capture","invocation":"`+inv+`","wait":"20s"}`)
	stdout, _ := json.Marshal(input)
	if want := `{"ok":true,"kind":"routed","invocation":"` + inv + `","capture":{"stdout":` + string(stdout) + `,"stderr":"","exit_code":0}}`; got != want {
		t.Fatalf("capture with wait:\n got %s\nwant %s", got, want)
	}
	if row := <-rows; row != input {
		t.Fatalf("the host was handed input %s, want %s", row, input)
	}
	// Read once: the capture is gone.
	if got := alice.act(t, 404, `{"op":"capture","invocation":"`+inv+`"}`); !strings.Contains(got, "is in flight") {
		t.Fatalf("a second collection: %s", got)
	}

	// Round trip 2, REST routes: invoke and collect with grpc-gateway.
	rest := alice.must(t, 200, http.MethodPost, "/v1/invocations", `{"client":"laptop","tool":"echo","input":"[1, 2.0, \"x\"]"}`)
	inv2 := field(t, rest, "invocation")
	got = alice.must(t, 200, http.MethodGet, "/v1/invocations/"+inv2+"/capture?wait=20s", "")
	if want := `{"invocation":"` + inv2 + `","capture":{"stdout":"[1, 2.0, \"x\"]","stderr":"","exit_code":0}}`; got != want {
		t.Fatalf("REST capture:\n got %s\nwant %s", got, want)
	}
	if row := <-rows; row != `[1, 2.0, "x"]` {
		t.Fatalf("the host was handed input %s", row)
	}

	// The workspace listing, both ways.
	clients := alice.act(t, 200, `{"op":"clients","workspace":"default"}`)
	wantTools := `"tools":[{"name":"echo","description":"Prints its input.","input_schema":` + echoSchema + `}]`
	if !strings.HasPrefix(clients, `{"ok":true,"kind":"clients","rows":[{"client":"laptop","present":`) || !strings.Contains(clients, wantTools) {
		t.Fatalf("clients: %s", clients)
	}
	var listing struct {
		Rows []struct {
			LastSeen string `json:"last_seen"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(clients), &listing); err != nil || len(listing.Rows) != 1 {
		t.Fatalf("clients: %s (%v)", clients, err)
	}
	if ts, err := time.Parse(time.RFC3339Nano, listing.Rows[0].LastSeen); err != nil || ts.Location() != time.UTC {
		t.Fatalf("last_seen %q is not RFC 3339 UTC: %v", listing.Rows[0].LastSeen, err)
	}
	if got := alice.must(t, 200, http.MethodGet, "/v1/workspaces/default/clients", ""); !strings.Contains(got, `"client":"laptop"`) {
		t.Fatalf("REST clients: %s", got)
	}
	alice.act(t, 404, `{"op":"clients","workspace":"nobody-made-this"}`)

	// Health names the backend that is down: no bridge runs.
	if got := s.party(as("x", identity.Driver)).must(t, 503, http.MethodGet, "/healthz", ""); !strings.HasPrefix(got, `{"ok":false,"error":"backend down: bridge (`) {
		t.Fatalf("healthz: %s", got)
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

func TestClosingTheHTTPClientReleasesTheHeldRead(t *testing.T) {
	t.Parallel()
	s := startProcSuite(t)
	alice, box := s.party(as("alice", identity.Driver)), s.party(as("idle-box", identity.Host))
	box.act(t, 200, `{"op":"advertise","tools":[{"name":"noop","description":"","input_schema":{}}]}`)
	present := func(want bool) func() bool {
		return func() bool {
			st, body, err := alice.send(context.Background(), http.MethodGet, "/v1/clients/idle-box", "")
			return err == nil && st == 200 && strings.Contains(body, fmt.Sprintf(`"present":%v`, want))
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	held := make(chan error, 1)
	go func() {
		_, _, err := box.send(ctx, http.MethodPost, "/v1/act", `{"op":"invocations"}`)
		held <- err
	}()
	testkit.Eventually(t, "the held read to make idle-box present", 20*time.Second, present(true))

	// While it is held, a second reader is refused with the mailbox's sentence.
	want := `{"ok":false,"error":"invocations: \"idle-box\" is already holding this engine's follow-class read — one machine's queue has one reader"}`
	if got := box.act(t, 409, `{"op":"invocations"}`); got != want {
		t.Fatalf("a second reader: %s\nwant %s", got, want)
	}

	closed := time.Now()
	cancel() // the HTTP client goes away mid-hold
	if err := <-held; !errors.Is(err, context.Canceled) {
		t.Fatalf("the held request ended with %v", err)
	}
	testkit.Eventually(t, "the mailbox to release the read", 20*time.Second, present(false))
	t.Logf("the read was released %v after the client closed (the hold would have lasted 30 s)", time.Since(closed))

	// A new read is not refused: it takes the work queued for it at once.
	inv := field(t, alice.act(t, 200, `{"op":"invoke","client":"idle-box","tool":"noop","input":{}}`), "invocation")
	if got, want := box.act(t, 200, `{"op":"invocations"}`), `{"ok":true,"kind":"invocations","rows":[{"invocation":"`+inv+`","tool":"noop","input":{}}]}`; got != want {
		t.Fatalf("the next read: %s\nwant %s", got, want)
	}
}

func TestBearerTokensWorkUntilRevoked(t *testing.T) {
	t.Parallel()
	s := startProcSuite(t)
	alice, ops := s.party(as("alice", identity.Driver)), s.party(as("ops", identity.Admin))
	created := ops.must(t, 200, http.MethodPost, "/v1/tokens", `{"identity":"ci-bot","grade":"host","note":"e2e"}`)
	var tok struct {
		Token struct {
			ID string `json:"id"`
		} `json:"token"`
		Secret string `json:"secret"`
	}
	if err := json.Unmarshal([]byte(created), &tok); err != nil || tok.Secret == "" {
		t.Fatalf("create token: %s (%v)", created, err)
	}
	bot := s.party(bearer(tok.Secret))
	bot.act(t, 200, `{"op":"advertise","tools":[{"name":"noop","description":"","input_schema":{}}]}`)
	// The token's grade holds: a host may not invoke.
	if got := bot.act(t, 403, `{"op":"invoke","client":"ci-bot","tool":"noop","input":{}}`); !strings.Contains(got, `\"ci-bot\" is a host`) {
		t.Fatalf("a host token invoking: %s", got)
	}
	// The advertisement landed under the token's identity.
	if got := alice.must(t, 200, http.MethodGet, "/v1/clients/ci-bot", ""); !strings.Contains(got, `"name":"noop"`) {
		t.Fatalf("ci-bot's advertisement: %s", got)
	}
	ops.must(t, 200, http.MethodDelete, "/v1/tokens/"+tok.Token.ID, "")
	if got := bot.act(t, 401, `{"op":"advertise","tools":[]}`); got != `{"ok":false,"error":"unknown or revoked token"}` {
		t.Fatalf("a revoked token: %s", got)
	}
	if got := s.party(bearer("sbt_never-minted")).must(t, 401, http.MethodGet, "/v1/workspaces/default/clients", ""); !bytes.Equal([]byte(got), []byte(`{"ok":false,"error":"unknown or revoked token"}`)) {
		t.Fatalf("an unknown token on REST: %s", got)
	}
}
