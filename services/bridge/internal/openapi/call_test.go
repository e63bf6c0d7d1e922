package openapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

func call(t *testing.T, api *API, tool, input string) *mailboxv1.Capture {
	t.Helper()
	return api.Call(context.Background(), api.Client(), tool, input, 0)
}

// Each call is the operation's request, built from the input: path, query
// (an array repeated: the store keeps the pets with any tag named), header
// and JSON body; the capture is the response. The cases run in order.
func TestCallsAreTheOperationsRequests(t *testing.T) {
	t.Parallel()
	ps := testkit.NewPetStore(t)
	api := load(t, &bridgev1.OpenApiTransport{SpecUrl: ps.SpecURL()})
	for _, c := range []struct {
		name, tool, input string
		exit              int32
		stdout, stderr    string
	}{
		{"a query with an array", "listPets", `{"limit":5,"tag":["cat","bird"]}`, 0, `[{"id":2,"name":"Tom","tag":"cat"}]` + "\n", ""},
		{"a path parameter", "getPet", `{"petId":1}`, 0, `{"id":1,"name":"Rex","tag":"dog"}` + "\n", ""},
		{"a JSON body", "createPet", `{"body":{"name":"Kit","tag":"cat"}}`, 0, `{"id":3,"name":"Kit","tag":"cat"}` + "\n", ""},
		{"an error status", "getPet", `{"petId":9}`, 1, "", "GET " + ps.URL + "/v1/pets/9 answered 404 Not Found\n" + `{"error":"no pet 9"}` + "\n"},
		{"a header parameter (the store refuses a delete without it)", "delete_pets_petId", `{"petId":1,"X-Reason":"adopted"}`, 0, "", ""},
		{"the pet deleted", "getPet", `{"petId":1}`, 1, "", "answered 404 Not Found"},
		{"input the schema refuses", "getPet", `{"petId":"one"}`, 1, "", `"getPet" (GET /pets/{petId}) was not called: its input does not match the tool's input schema`},
		{"a field the operation does not take", "getPet", `{"petId":1,"owner":"me"}`, 1, "", "additional properties 'owner' not allowed"},
		{"a missing required body", "createPet", `{}`, 1, "", "missing property 'body'"},
		{"an unknown tool", "nope", `{}`, 127, "", `the API has no operation "nope"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := call(t, api, c.tool, c.input)
			if got.GetExitCode() != c.exit || got.GetStdout() != c.stdout || !strings.Contains(got.GetStderr(), c.stderr) {
				t.Errorf("capture = %d %q %q\nwant %d %q, stderr holding %q", got.GetExitCode(), got.GetStdout(), got.GetStderr(), c.exit, c.stdout, c.stderr)
			}
		})
	}
}

// A response longer than the capture takes is read only that far, and
// says it was cut.
func TestALargeResponseIsCutWithAMarker(t *testing.T) {
	t.Parallel()
	ps := testkit.NewPetStore(t)
	api := load(t, &bridgev1.OpenApiTransport{SpecUrl: ps.SpecURL()})
	got := api.Call(context.Background(), api.Client(), "getPhoto", `{"petId":1}`, 1000)
	want := strings.Repeat("p", 1000) + "\n[truncated: the response body is longer than 1000 characters; the rest was not read]"
	if got.GetExitCode() != 0 || got.GetStdout() != want {
		t.Errorf("capture = %d, stdout of %d bytes ending %q", got.GetExitCode(), len(got.GetStdout()), got.GetStdout()[max(0, len(got.GetStdout())-90):])
	}
}

// recorder is a server that keeps the headers and queries it is sent.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	seen []*http.Request
}

func newRecorder(t *testing.T, h http.HandlerFunc) *recorder {
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.seen = append(r.seen, req.Clone(context.Background()))
		r.mu.Unlock()
		h(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

// The API's credentials go to its origin only: a redirect to another port
// is refused, with a sentence naming both, and the other never sees them;
// a redirect within the origin keeps them. The key in the query is never
// written in a sentence.
func TestCredentialsArePinnedToTheAPIsOrigin(t *testing.T) {
	t.Parallel()
	elsewhere := newRecorder(t, func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`{"id":1,"name":"Rex"}`)) })
	var home *recorder
	home = newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/pets/1":
			http.Redirect(w, r, elsewhere.URL+"/v1/pets/1", http.StatusTemporaryRedirect)
		case "/v1/pets/2":
			http.Redirect(w, r, home.URL+"/v1/pets/3", http.StatusTemporaryRedirect)
		default:
			w.Write([]byte(`{"id":3,"name":"Kit"}`))
		}
	})
	for _, c := range []struct {
		name  string
		auth  *bridgev1.OpenApiAuth
		check func(r *http.Request) bool
	}{
		{"a bearer token", &bridgev1.OpenApiAuth{BearerToken: "s3cret"}, func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer s3cret" }},
		{"basic", &bridgev1.OpenApiAuth{Basic: &bridgev1.BasicAuth{Username: "u", Password: "s3cret"}}, func(r *http.Request) bool {
			u, p, ok := r.BasicAuth()
			return ok && u == "u" && p == "s3cret"
		}},
		{"an API key in the document's header", &bridgev1.OpenApiAuth{ApiKey: &bridgev1.ApiKey{Value: "s3cret"}}, func(r *http.Request) bool { return r.Header.Get("X-Api-Key") == "s3cret" }},
		{"an API key in the query", &bridgev1.OpenApiAuth{ApiKey: &bridgev1.ApiKey{Value: "s3cret", Name: "key", In: bridgev1.ApiKeyLocation_API_KEY_LOCATION_QUERY}}, func(r *http.Request) bool { return r.URL.Query().Get("key") == "s3cret" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			home.mu.Lock()
			before := len(home.seen)
			home.mu.Unlock()
			api := load(t, &bridgev1.OpenApiTransport{Spec: testkit.PetStoreSpec(t), BaseUrl: home.URL + "/v1", Auth: c.auth})
			refused := call(t, api, "getPet", `{"petId":1}`)
			want := "redirected the bridge to " + elsewhere.URL + "/v1/pets/1, another origin: the bridge sends this API's credentials only to " + home.URL + " and follows no redirect elsewhere"
			if refused.GetExitCode() != 1 || !strings.Contains(refused.GetStderr(), want) || strings.Contains(refused.GetStderr(), "s3cret") {
				t.Errorf("a redirect elsewhere = %d %q\nwant exit 1 and %q, without the secret", refused.GetExitCode(), refused.GetStderr(), want)
			}
			if followed := call(t, api, "getPet", `{"petId":2}`); followed.GetExitCode() != 0 {
				t.Errorf("a redirect within the origin = %v", followed)
			}
			home.mu.Lock()
			defer home.mu.Unlock()
			for i, r := range home.seen[before:] {
				if !c.check(r) {
					t.Errorf("request %d to the API (%s) lacks the credentials: %v", i, r.URL, r.Header)
				}
			}
		})
	}
	elsewhere.mu.Lock()
	defer elsewhere.mu.Unlock()
	if len(elsewhere.seen) != 0 {
		t.Errorf("the other origin was sent %d requests; want none", len(elsewhere.seen))
	}
	home.mu.Lock()
	defer home.mu.Unlock()
	if len(home.seen) != 4*3 { // per credential: the redirect refused, and one followed (two requests)
		t.Errorf("the API was sent %d requests; want 12", len(home.seen))
	}
}
