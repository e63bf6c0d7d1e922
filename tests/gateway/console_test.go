package gateway_test

import (
	"encoding/base64"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

func TestConsoleShellAndAssetsNeedNoIdentity(t *testing.T) {
	s := newSuite(t, options{})
	shell := s.consoleGet(t, "/console/", nil)
	mustStatus(t, "GET /console/", shell, http.StatusOK, `<script src="/console/static/console.js"`, `id="signin"`, "Switchboard-Identity")
	if csp := shell.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("the shell's Content-Security-Policy is %q", csp)
	}
	mustStatus(t, "GET console.js", s.consoleGet(t, "/console/static/console.js", nil), http.StatusOK, "text/event-stream")
	mustStatus(t, "GET console.css", s.consoleGet(t, "/console/static/console.css", nil), http.StatusOK, "@media")
	mustStatus(t, "GET /console/nothing", s.consoleGet(t, "/console/nothing", nil), http.StatusNotFound, "the console has no page /console/nothing")
	mustStatus(t, "GET /console/api/nothing", s.consoleGet(t, "/console/api/nothing", opsHeader), http.StatusNotFound, "the console has no page")
	// The fragments hold data: without an identity they are refused the
	// way the API refuses.
	api := do(t, s.Client, http.MethodGet, s.URL+"/v1/tokens", nil, nil)
	mustStatus(t, "GET workspaces without identity", s.consoleGet(t, "/console/api/workspaces", nil), http.StatusUnauthorized, refusalOf(t, api))
	mustStatus(t, "GET whoami", s.consoleGet(t, "/console/api/whoami", aliceHeader), http.StatusOK, "<strong>alice</strong> (driver)")
}

func TestConsoleShellRefusesForeignHostAndOrigin(t *testing.T) {
	s := newSuite(t, options{})
	r := do(t, s.Client, http.MethodGet, s.URL+"/console/", http.Header{"Origin": {"https://evil.example"}}, nil)
	if r.Status != http.StatusForbidden {
		t.Fatalf("a page of another origin got the console: %d %s", r.Status, r.Body)
	}
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/console/api/workspaces", nil)
	req.Host = "rebound.example"
	req.Header = opsHeader.Clone()
	res, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("a rebound host name got a fragment: %d", res.StatusCode)
	}
}

func TestConsoleWorkspaceToolAndTry(t *testing.T) {
	s := newSuite(t, options{laptop: true})
	mustStatus(t, "workspaces", s.consoleGet(t, "/console/api/workspaces", aliceHeader), http.StatusOK, `href="#workspace/default"`)
	// The registry learns of the host's read from the presence watch, a
	// moment after the host is ready: the page is read until it says so.
	var ws reply
	testkit.Eventually(t, "the console to show laptop present", 10*time.Second, func() bool {
		ws = s.consoleGet(t, "/console/api/workspaces/default", aliceHeader)
		return strings.Contains(string(ws.Body), "● present")
	})
	mustStatus(t, "workspace default", ws, http.StatusOK, `data-client="laptop"`, "● present", `href="#tool/laptop_cat"`, "Prints its input.",
		`data-live="/console/api/workspaces/default/live"`)

	tool := s.consoleGet(t, "/console/api/tools/laptop_cat", aliceHeader)
	mustStatus(t, "tool laptop_cat", tool, http.StatusOK, "<dd>laptop</dd>", "<code>text</code>", `name="f.text"`, "&#34;properties&#34;")
	mustStatus(t, "tool laptop_stats", s.consoleGet(t, "/console/api/tools/laptop_stats", aliceHeader), http.StatusOK, "Output schema", `name="input"`)

	posted := s.consolePost(t, "/console/api/tools/laptop_cat/invoke", aliceHeader, url.Values{"f.text": {"hi <there>"}})
	mustStatus(t, "invoke laptop_cat", posted, http.StatusOK, "inv-", "hi &lt;there&gt;")
	inv := regexp.MustCompile(`inv-[A-Za-z0-9_-]+`).FindString(string(posted.Body))
	// Only the poster may follow the capture: to anyone else it is absent.
	bob := s.consoleGet(t, "/console/api/invocations/"+inv+"/live", as("bob", "driver"))
	mustStatus(t, "bob following alice's invocation", bob, http.StatusNotFound, "no invocation")
	ev := s.consoleLive(t, "/console/api/invocations/"+inv+"/live", aliceHeader)
	got := ev.until(t, "capture", contains(`data-state="answered"`))
	for _, want := range []string{`<strong class="exit-code">0</strong>`, html.EscapeString(`{"text":"hi <there>"}`)} {
		if !strings.Contains(got, want) {
			t.Fatalf("the capture lacks %s:\n%s", want, got)
		}
	}

	// A failing tool's capture shows its exit code and stderr.
	posted = s.consolePost(t, "/console/api/tools/laptop_fail/invoke", aliceHeader, url.Values{"input": {"{}"}})
	inv = regexp.MustCompile(`inv-[A-Za-z0-9_-]+`).FindString(string(posted.Body))
	got = s.consoleLive(t, "/console/api/invocations/"+inv+"/live", aliceHeader).until(t, "capture", contains(`data-state="answered"`))
	if !strings.Contains(got, `<strong class="exit-code">3</strong> (an error)`) || !strings.Contains(got, `<pre class="stderr">bad`) {
		t.Fatalf("the failing tool's capture:\n%s", got)
	}

	// Strict form values: a refusal that names the field, nothing sent.
	mustStatus(t, "invoke with bad JSON", s.consolePost(t, "/console/api/tools/laptop_fail/invoke", aliceHeader, url.Values{"input": {"{nope"}}),
		http.StatusBadRequest, "the input is not JSON")
	mustStatus(t, "unknown tool", s.consoleGet(t, "/console/api/tools/laptop_nope", aliceHeader), http.StatusNotFound,
		html.EscapeString(`no tool is presented as "laptop_nope" right now`))
}

func TestConsoleEscapesHostileToolText(t *testing.T) {
	s := newSuite(t, options{})
	const hostile = `<script>alert("x")</script><img src=x onerror=alert(1)>`
	s.advertise(t, "evil", &registryv1.Tool{
		Name:        "tool",
		Title:       proto.String(hostile),
		Description: hostile,
		InputSchema: `{"type":"object","properties":{"<b>p</b>":{"type":"string","description":"` + strings.ReplaceAll(hostile, `"`, `\"`) + `"}}}`,
	}, &registryv1.Tool{Name: hostile, Description: "A hostile name.", InputSchema: `{"type":"object"}`})
	s.join(t, "default", "evil")
	// The hostile name is presented sanitised; the page shows it as text.
	ws := s.consoleGet(t, "/console/api/workspaces/default", aliceHeader)
	m := regexp.MustCompile(`data-tool="(evil_[^"]+)"><td><a href="#tool/[^"]+">[^<]+</a></td><td>evil [^/]*</span></td><td>A hostile name.`).FindStringSubmatch(string(ws.Body))
	if m == nil {
		t.Fatalf("no row for the hostile name:\n%s", ws.Body)
	}
	named := s.consoleGet(t, "/console/api/tools/"+m[1], aliceHeader)
	mustStatus(t, "the hostile name's page", named, http.StatusOK, "<dt>Name</dt><dd>&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;</dd>")
	for _, path := range []string{"/console/api/workspaces/default", "/console/api/tools/evil_tool", "/console/api/tools/" + m[1]} {
		r := s.consoleGet(t, path, aliceHeader)
		mustStatus(t, path, r, http.StatusOK, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;")
		if b := string(r.Body); strings.Contains(b, "<script") || strings.Contains(b, "<img") || strings.Contains(b, "<b>p") {
			t.Fatalf("%s renders the tool's markup as markup:\n%s", path, b)
		}
	}
}

func TestConsoleDriverIsRefusedAdminPagesAsTheAPIRefuses(t *testing.T) {
	s := newSuite(t, options{})
	cases := []struct {
		what       string
		console    func() reply
		api        func() reply
		wantStatus int
	}{
		{"list tokens",
			func() reply { return s.consoleGet(t, "/console/api/tokens", aliceHeader) },
			func() reply { return do(t, s.Client, http.MethodGet, s.URL+"/v1/tokens", aliceHeader, nil) }, http.StatusForbidden},
		{"create a token",
			func() reply {
				return s.consolePost(t, "/console/api/tokens", aliceHeader, url.Values{"identity": {"mallory"}, "grade": {"admin"}, "workspaces": {"*"}})
			},
			func() reply {
				return do(t, s.Client, http.MethodPost, s.URL+"/v1/tokens", aliceHeader, []byte(`{"identity":"mallory","grade":"admin","workspaces":["*"]}`))
			}, http.StatusForbidden},
		{"revoke a token",
			func() reply { return s.consolePost(t, "/console/api/tokens/tok-x/revoke", aliceHeader, nil) },
			func() reply { return do(t, s.Client, http.MethodDelete, s.URL+"/v1/tokens/tok-x", aliceHeader, nil) }, http.StatusForbidden},
		{"mount",
			func() reply {
				return s.consolePost(t, "/console/api/servers", aliceHeader, url.Values{"client": {"x"}, "command": {"/bin/true"}})
			},
			func() reply {
				return do(t, s.Client, http.MethodPut, s.URL+"/v1/servers/x", aliceHeader, []byte(`{"stdio":{"command":"/bin/true"}}`))
			}, http.StatusForbidden},
		{"unmount",
			func() reply { return s.consolePost(t, "/console/api/servers/x/unmount", aliceHeader, nil) },
			func() reply { return do(t, s.Client, http.MethodDelete, s.URL+"/v1/servers/x", aliceHeader, nil) }, http.StatusForbidden},
	}
	for _, c := range cases {
		api := c.api()
		sentence := refusalOf(t, api)
		if api.Status != c.wantStatus || !strings.Contains(sentence, "is a driver and may not call") {
			t.Fatalf("the API's refusal to %s: %d %q", c.what, api.Status, sentence)
		}
		mustStatus(t, "the console's "+c.what, c.console(), c.wantStatus, `role="alert"`, html.EscapeString(sentence))
	}
	// Listing servers is a driver's right, as in the API.
	mustStatus(t, "servers as a driver", s.consoleGet(t, "/console/api/servers", aliceHeader), http.StatusOK, "No servers mounted.")
}

func TestConsoleShowsOnlyTheGrantedWorkspaces(t *testing.T) {
	s := newSuite(t, options{laptop: true})
	s.advertise(t, "teambox", &registryv1.Tool{Name: "echo", Description: "Team tool.", InputSchema: `{"type":"object"}`})
	s.join(t, "team", "teambox")
	created := s.consolePost(t, "/console/api/tokens", opsHeader, url.Values{"identity": {"carol"}, "grade": {"driver"}, "workspaces": {"team"}})
	mustStatus(t, "create carol's token", created, http.StatusOK, "shown this once")
	carol := bearer(secretIn(t, created))

	ws := s.consoleGet(t, "/console/api/workspaces", carol)
	mustStatus(t, "carol's workspaces", ws, http.StatusOK, `href="#workspace/team"`)
	if strings.Contains(string(ws.Body), "#workspace/default") {
		t.Fatalf("carol sees the default workspace:\n%s", ws.Body)
	}
	mustStatus(t, "carol's team", s.consoleGet(t, "/console/api/workspaces/team", carol), http.StatusOK, "teambox_echo")
	for _, c := range []struct{ console, api string }{
		{"/console/api/workspaces/default", "/v1/workspaces/default/tools"},
		{"/console/api/workspaces/default/live", "/v1/workspaces/default/clients"},
		{"/console/api/tools/laptop_cat", "/v1/tools/laptop_cat"},
	} {
		api := do(t, s.Client, http.MethodGet, s.URL+c.api, carol, nil)
		mustStatus(t, "carol at "+c.console, s.consoleGet(t, c.console, carol), api.Status, html.EscapeString(refusalOf(t, api)))
	}
	mustStatus(t, "carol invoking laptop_cat", s.consolePost(t, "/console/api/tools/laptop_cat/invoke", carol, url.Values{"f.text": {"x"}}),
		http.StatusNotFound, "no tool is presented")
}

func TestConsoleTokensCreateListRevoke(t *testing.T) {
	s := newSuite(t, options{laptop: true})
	created := s.consolePost(t, "/console/api/tokens", opsHeader, url.Values{"identity": {"dave"}, "grade": {"driver"}, "workspaces": {"default"}, "note": {"<i>laptop</i>"}, "ttl": {"1h"}})
	mustStatus(t, "create", created, http.StatusOK, "shown this once", "<td>dave</td>", "&lt;i&gt;laptop&lt;/i&gt;")
	secret := secretIn(t, created)
	id := regexp.MustCompile(`data-token="([^"]+)"`).FindStringSubmatch(string(created.Body))[1]
	list := s.consoleGet(t, "/console/api/tokens", opsHeader)
	mustStatus(t, "list", list, http.StatusOK, `data-token="`+id+`"`)
	if strings.Contains(string(list.Body), secret) {
		t.Fatal("the token list shows a secret")
	}
	mustStatus(t, "dave's whoami", s.consoleGet(t, "/console/api/whoami", bearer(secret)), http.StatusOK, "<strong>dave</strong> (driver)")
	mustStatus(t, "bad ttl", s.consolePost(t, "/console/api/tokens", opsHeader, url.Values{"identity": {"x"}, "ttl": {"soon"}}), http.StatusBadRequest, `ttl &#34;soon&#34; is not a positive duration`)

	revoked := s.consolePost(t, "/console/api/tokens/"+id+"/revoke", opsHeader, nil)
	mustStatus(t, "revoke", revoked, http.StatusOK)
	if strings.Contains(string(revoked.Body), `data-token="`+id+`"`) {
		t.Fatalf("the revoked token is still listed:\n%s", revoked.Body)
	}
	api := do(t, s.Client, http.MethodGet, s.URL+"/v1/workspaces/default/tools", bearer(secret), nil)
	mustStatus(t, "dave after revocation", s.consoleGet(t, "/console/api/whoami", bearer(secret)), http.StatusUnauthorized, refusalOf(t, api))
}

func TestConsoleWorkspaceIsLive(t *testing.T) {
	s := newSuite(t, options{})
	s.advertise(t, "early", &registryv1.Tool{Name: "t", Description: "d", InputSchema: `{"type":"object"}`})
	s.join(t, "default", "early")
	ev := s.consoleLive(t, "/console/api/workspaces/default/live", aliceHeader)
	ev.until(t, "tools", contains("early_t"))
	// A host starts serving: its tools arrive, and its presence.
	s.serveLaptop(t)
	s.join(t, "default", "laptop")
	ev.until(t, "tools", contains("laptop_cat", "laptop_stats"))
	ev.until(t, "clients", contains(`data-client="laptop"`, "● present"))
	// It withdraws its set: its tools leave the page.
	s.advertise(t, "early")
	ev.until(t, "tools", func(d string) bool { return !strings.Contains(d, "early_t") })
}

// A mounted server's image and audio show in the capture, as data: URLs of
// their bytes (the page's policy allows them for images and media only).
func TestConsoleShowsAResultsImagesAndAudio(t *testing.T) {
	s := newSuite(t, options{})
	s.mountConformance(t)
	direct := callDirectly(t, testkit.Tool(t, "everything-server"), "test_multiple_content_types")
	var png string
	for _, c := range direct.Content {
		if img, ok := c.(*mcp.ImageContent); ok {
			png = base64.StdEncoding.EncodeToString(img.Data)
		}
	}
	for tool, want := range map[string]string{
		"conf_test_multiple_content_types": `<img class="capture-image" alt="image content (image/png)" src="data:image/png;base64,` + png + `">`,
		"conf_test_audio_content":          `<audio class="capture-audio" controls src="data:audio/wav;base64,`,
	} {
		posted := s.consolePost(t, "/console/api/tools/"+tool+"/invoke", aliceHeader, url.Values{"input": {"{}"}})
		inv := regexp.MustCompile(`inv-[A-Za-z0-9_-]+`).FindString(string(posted.Body))
		got := s.consoleLive(t, "/console/api/invocations/"+inv+"/live", aliceHeader).until(t, "capture", contains(`data-state="answered"`))
		if png == "" || !strings.Contains(got, want) {
			t.Fatalf("%s's capture lacks %.120s:\n%.2000s", tool, want, got)
		}
	}
	if csp := s.consoleGet(t, "/console/api/workspaces", aliceHeader).Header.Get("Content-Security-Policy"); !strings.Contains(csp, "img-src 'self' data:;") || !strings.Contains(csp, "media-src data:;") {
		t.Errorf("the console's Content-Security-Policy is %q", csp)
	}
}

func TestConsoleServersMountLiveUnmount(t *testing.T) {
	s := newSuite(t, options{})
	ev := s.consoleLive(t, "/console/api/servers/live", opsHeader)
	ev.until(t, "server-list", contains("No servers mounted."))
	mounted := s.consolePost(t, "/console/api/servers", opsHeader, url.Values{"client": {"conf"}, "command": {testkit.Tool(t, "everything-server")}, "workspace": {"default"}})
	mustStatus(t, "mount", mounted, http.StatusOK, `data-server="conf"`, `Done: mounted &#34;conf&#34; in workspace &#34;default&#34;.`)
	ev.until(t, "server-list", contains(`data-server="conf" data-state="running"`, "<dt>Protocol</dt><dd>20"))
	mustStatus(t, "servers page", s.consoleGet(t, "/console/api/servers", aliceHeader), http.StatusOK, `data-server="conf"`, "<dt>Transport</dt><dd>stdio</dd>")
	mustStatus(t, "conf's tools", s.consoleGet(t, "/console/api/workspaces/default", aliceHeader), http.StatusOK, "conf_")
	mustStatus(t, "unmount", s.consolePost(t, "/console/api/servers/conf/unmount", opsHeader, nil), http.StatusOK, `Done: unmounted &#34;conf&#34;.`)
	ev.until(t, "server-list", contains("No servers mounted."))
}

// refusalOf is the sentence of an API refusal envelope.
func refusalOf(t testing.TB, r reply) string {
	t.Helper()
	var env struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(r.Body, &env); err != nil || env.Error == "" {
		t.Fatalf("not a refusal envelope (%d): %s", r.Status, r.Body)
	}
	return env.Error
}

// secretIn is the secret a token-creation fragment shows.
func secretIn(t testing.TB, r reply) string {
	t.Helper()
	m := regexp.MustCompile(`class="secret-value" readonly value="(sbt_[^"]+)"`).FindStringSubmatch(string(r.Body))
	if m == nil {
		t.Fatalf("no secret in:\n%s", r.Body)
	}
	return m[1]
}

func TestConsoleInvocationsAreLive(t *testing.T) {
	s := newSuite(t, options{laptop: true})
	mustStatus(t, "invocations page", s.consoleGet(t, "/console/api/invocations", aliceHeader), http.StatusOK, `data-live="/console/api/invocations/live"`)
	ops := s.consoleLive(t, "/console/api/invocations/live", opsHeader)
	ops.until(t, "invocation-list", contains("None."))

	posted := s.consolePost(t, "/console/api/tools/laptop_fail/invoke", aliceHeader, url.Values{"input": {"{}"}})
	inv := regexp.MustCompile(`inv-[A-Za-z0-9_-]+`).FindString(string(posted.Body))
	ops.until(t, "invocation-list", contains(`data-invocation="`+inv+`"`, "<td>fail</td><td>laptop</td><td>alice</td>"))
	s.consoleLive(t, "/console/api/invocations/"+inv+"/live", aliceHeader).until(t, "capture", contains(`data-state="answered"`))
	row := ops.until(t, "invocation-list", contains(`data-invocation="`+inv+`" data-phase="collected"`))
	if !strings.Contains(row, "<td>collected</td><td>1</td>") || !strings.Contains(row, "<td>3</td></tr>") {
		t.Fatalf("the finished row lacks its hand-off count or exit code:\n%s", row)
	}
	// A driver sees what it posted, and nobody else's.
	first := func(d string) bool { return true }
	if got := s.consoleLive(t, "/console/api/invocations/live", aliceHeader).until(t, "invocation-list", first); !strings.Contains(got, inv) {
		t.Fatalf("alice's own invocation is missing from her view:\n%s", got)
	}
	if got := s.consoleLive(t, "/console/api/invocations/live", as("bob", "driver")).until(t, "invocation-list", first); strings.Contains(got, inv) {
		t.Fatalf("bob sees alice's invocation:\n%s", got)
	}
	// A host may not watch, with the API's sentence.
	// (A streaming REST route wraps its refusal: {"error":{"message":…}}.)
	api := do(t, s.Client, http.MethodGet, s.URL+"/v1/invocations:watch", as("laptop", "host"), nil)
	var streamErr struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(api.Body, &streamErr); err != nil || api.Status != http.StatusForbidden || streamErr.Error.Message == "" {
		t.Fatalf("the API's refusal of a host's watch: %d %s", api.Status, api.Body)
	}
	mustStatus(t, "a host's invocations view", s.consoleGet(t, "/console/api/invocations/live", as("laptop", "host")), http.StatusForbidden, html.EscapeString(streamErr.Error.Message))
}
