package bridge

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

func openapiServer(t *bridgev1.OpenApiTransport) *bridgev1.ServerConfig {
	return &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Openapi{Openapi: t}}
}

// An API mounted from its document runs at once: its operations are
// advertised with their schemas, ListServers names the document, and a
// call through the mailbox is the operation's request.
func TestAnOpenAPIMountAdvertisesAndServesItsOperations(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	ps := testkit.NewPetStore(t)
	st := s.mount(t, "petstore", openapiServer(&bridgev1.OpenApiTransport{SpecUrl: ps.SpecURL(), Exclude: []string{"admin"}}))
	if st.GetState() != bridgev1.State_STATE_RUNNING || st.GetTransport() != "openapi" || st.GetToolCount() != 4 ||
		st.GetServerName() != "Pet Store" || st.GetServerVersion() != "1.2.0" || st.GetProtocolVersion() != "3.1.0" {
		t.Fatalf("Mount's status = %v", st)
	}
	if !contains(st.GetToolsSkipped(), `"adoptPet" (POST /pets/{petId}/adoption): a form body`) {
		t.Errorf("tools_skipped = %q; want the form body named", st.GetToolsSkipped())
	}
	res, err := s.reg.GetClient(admin, &registryv1.GetClientRequest{Client: "petstore"})
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*registryv1.Tool{}
	for _, tool := range res.GetRow().GetTools() {
		tools[tool.GetName()] = tool
	}
	if len(tools) != 4 || tools["delete_pets_petId"] != nil || !strings.Contains(tools["getPet"].GetInputSchema(), `"petId"`) ||
		!strings.Contains(tools["getPet"].GetOutputSchema(), `"$defs"`) {
		t.Fatalf("advertised %v", tools)
	}
	if got := s.call(t, "petstore", "getPet", `{"petId":2}`); got.GetExitCode() != 0 || got.GetStdout() != `{"id":2,"name":"Tom","tag":"cat"}`+"\n" {
		t.Errorf("getPet = %v", got)
	}
	if got := s.call(t, "petstore", "getPet", `{"petId":7}`); got.GetExitCode() != 1 || !strings.Contains(got.GetStderr(), "answered 404 Not Found\n{\"error\":\"no pet 7\"}") {
		t.Errorf("getPet of no pet = %v", got)
	}
	if got := s.call(t, "petstore", "getPhoto", `{"petId":1}`); got.GetExitCode() != 0 || len(got.GetStdout()) > 100_200 ||
		!strings.HasSuffix(got.GetStdout(), "[truncated: the response body is longer than 100000 characters; the rest was not read]") {
		t.Errorf("a %d-byte photo = exit %d, %d bytes", testkit.PhotoBytes, got.GetExitCode(), len(got.GetStdout()))
	}
}

// A document that cannot be mounted is refused by Mount with its
// sentence, and nothing is stored.
func TestMountRefusesADocumentItCannotMount(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	for _, c := range []struct {
		name string
		tr   *bridgev1.OpenApiTransport
		want string
	}{
		{"no document", &bridgev1.OpenApiTransport{}, `mount "api": the OpenAPI mount names no document: give its text (spec) or a URL to read it from (spec_url)`},
		{"Swagger 2.0", &bridgev1.OpenApiTransport{Spec: `{"swagger":"2.0"}`, BaseUrl: "https://x.example"}, `mount "api": the document is Swagger 2.0 (OpenAPI 2.0); the bridge mounts OpenAPI 3.0 and 3.1: convert it first`},
		{"an include naming nothing", &bridgev1.OpenApiTransport{Spec: testkit.PetStoreSpec(t), BaseUrl: "http://127.0.0.1:1", Include: []string{"pest"}},
			`mount "api": include "pest" names no operationId or tag of the document`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.bridge.Mount(admin, &bridgev1.MountRequest{Client: "api", Config: openapiServer(c.tr)})
			testkit.Refused(t, err, codes.InvalidArgument, c.want)
		})
	}
	if s.row(t, "api") != nil {
		t.Error("a refused mount was stored")
	}
}

// A request that outlives the mount's call_timeout is stopped and
// answered with exit code 124, as an MCP call is.
func TestAnAPIRequestPastItsTimeoutIsStopped(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); slow.Close() })
	doc := `{"openapi":"3.0.3","info":{"title":"slow","version":"1"},"paths":{"/wait":{"get":{"operationId":"wait","responses":{"200":{"description":"ok"}}}}}}`
	cfg := openapiServer(&bridgev1.OpenApiTransport{Spec: doc, BaseUrl: slow.URL})
	cfg.CallTimeout = durationpb(300 * time.Millisecond)
	s.mount(t, "slow", cfg)
	got := s.call(t, "slow", "wait", `{}`)
	if got.GetExitCode() != 124 || !strings.Contains(got.GetStderr(), `the request of tool "wait" of "slow" was stopped`) {
		t.Errorf("a request past its timeout = %v", got)
	}
}

// An API mount sends at most max_in_flight requests at once, the others
// waiting for a slot, and cuts each response at its max_result_chars.
func TestAnAPIMountHonoursMaxInFlightAndMaxResultChars(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	var mu sync.Mutex
	running, most := 0, 0
	started, release := make(chan struct{}, 10), make(chan struct{})
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		defer func() { mu.Lock(); running--; mu.Unlock() }()
		started <- struct{}{}
		select {
		case <-release:
			w.Write([]byte(strings.Repeat("x", 2000)))
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { api.CloseClientConnections(); api.Close() }) // a held request ends with its connection
	doc := `{"openapi":"3.1.0","info":{"title":"held","version":"1"},"paths":{"/hold":{"get":{"operationId":"hold","responses":{"200":{"description":"ok"}}}}}}`
	cfg := openapiServer(&bridgev1.OpenApiTransport{Spec: doc, BaseUrl: api.URL})
	cfg.MaxInFlight, cfg.MaxResultChars = 2, 500
	s.mount(t, "held", cfg)
	ids := []string{s.invoke(t, "held", "hold", `{}`), s.invoke(t, "held", "hold", `{}`), s.invoke(t, "held", "hold", `{}`)}
	for range 2 {
		select {
		case <-started:
		case <-time.After(20 * time.Second):
			t.Fatal("the API was not sent two requests")
		}
	}
	select {
	case <-started:
		t.Fatal("a third request was sent with max_in_flight 2")
	case <-time.After(200 * time.Millisecond):
	}
	if row := s.row(t, "held"); row.GetInFlight() != 2 {
		t.Errorf("in_flight = %d, want 2", row.GetInFlight())
	}
	close(release)
	want := strings.Repeat("x", 500) + "\n[truncated: the response body is longer than 500 characters; the rest was not read]"
	for _, id := range ids {
		res, err := s.mb.Capture(driver, &mailboxv1.CaptureRequest{Invocation: id, Wait: durationpb(20 * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		if c := res.GetCapture(); c.GetExitCode() != 0 || c.GetStdout() != want {
			t.Errorf("capture of %s = exit %d, %d bytes of stdout; want 0 and %d", id, c.GetExitCode(), len(c.GetStdout()), len(want))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if most != 2 {
		t.Errorf("the API held %d requests at once; want 2", most)
	}
}
