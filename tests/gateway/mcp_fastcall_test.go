package gateway_test

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/gateway"
)

// statelessCall is one raw tools/call of the stateless era, as the go-sdk
// client sends it (headers, the _meta triple), with the parts a case
// changes.
type statelessCall struct {
	name     string // the case
	tool     string // the body's name, and Mcp-Name unless nameHeader is set
	id       string // raw JSON id; 1 by default
	args     string // raw arguments; omitted when ""
	meta     string // extra _meta members, each `"key": value,`
	triple   string // the _meta triple; statelessMeta when ""
	header   http.Header
	wantFast bool // the endpoint answers it itself (or else the SDK does)
}

const statelessMeta = `"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}`

// post makes the call; it returns the reply's status, content type, body,
// and the length it declared (-1 for none: a chunked reply).
func (c statelessCall) post(t *testing.T, s *suite) (int, string, string, int64) {
	t.Helper()
	id := c.idOr1()
	params := `"name": ` + quote(c.tool)
	if c.args != "" {
		params += `, "arguments": ` + c.args
	}
	triple := c.triple
	if triple == "" {
		triple = statelessMeta
	}
	params += `, "_meta": {` + c.meta + triple + `}`
	body := `{"jsonrpc": "2.0", "id": ` + id + `, "method": "tools/call", "params": {` + params + `}}`
	req, err := http.NewRequest(http.MethodPost, s.URL+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = as("alice", identity.Driver)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", c.tool)
	for k, v := range c.header {
		req.Header[k] = v
	}
	res, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	got, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header.Get("Content-Type"), string(got), res.ContentLength
}

func (c statelessCall) idOr1() string {
	if c.id == "" {
		return "1"
	}
	return c.id
}

func quote(s string) string { return `"` + s + `"` }

// invocationID is the one part of an answer that differs between two suites.
var invocationID = regexp.MustCompile(`inv-[0-9a-zA-Z-]+`)

// A plain tools/call of the stateless era, which the endpoint answers in
// front of the SDK, gets the very reply the SDK gives it: the same status,
// content type and bytes, for results, structured results, tool errors and
// every refusal; and a request it leaves to the SDK still gets the SDK's.
func TestTheStatelessCallFastPathAnswersAsTheSDKDoes(t *testing.T) {
	t.Parallel()
	fast := newSuite(t, options{laptop: true})
	sdk := newSuite(t, options{laptop: true, configure: func(c *gateway.Config) { c.MCPSDKOnly = true }})
	ready := statelessCall{tool: "laptop_cat", args: `{}`}
	for _, s := range []*suite{fast, sdk} {
		testkit.Eventually(t, "the laptop's tools on the endpoint", 20*time.Second, func() bool {
			_, _, body, _ := ready.post(t, s)
			return strings.Contains(body, `"text":"{}"`)
		})
	}
	for _, c := range []statelessCall{
		{name: "a result", tool: "laptop_cat", args: `{"text": "a <b> & \"c\" é"}`, wantFast: true},
		{name: "a string id and the client's identity", tool: "laptop_cat", id: `"call-7"`, args: `{"n":1}`,
			meta: `"io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},`, wantFast: true},
		{name: "structured output", tool: "laptop_stats", args: `{}`, wantFast: true},
		{name: "a tool error", tool: "laptop_fail", args: `{}`, wantFast: true},
		{name: "an unknown tool", tool: "laptop_nope", args: `{}`, wantFast: true},
		{name: "a bad timeout in _meta", tool: "laptop_cat", args: `{}`, meta: `"run.switchboard/timeout": "soon",`, wantFast: true},
		{name: "a timeout that is not a string", tool: "laptop_cat", args: `{}`, meta: `"run.switchboard/timeout": 5,`, wantFast: true},
		{name: "no arguments", tool: "laptop_cat", wantFast: true},
		{name: "null arguments", tool: "laptop_cat", args: `null`, wantFast: true},
		{name: "a name header that disagrees", tool: "laptop_cat", args: `{}`, header: http.Header{"Mcp-Name": {"laptop_fail"}}},
		{name: "no name header", tool: "laptop_cat", args: `{}`, header: http.Header{"Mcp-Name": nil}},
		{name: "a progress token", tool: "laptop_cat", args: `{}`, meta: `"progressToken": 3,`},
		{name: "a negative id", tool: "laptop_cat", id: "-1", args: `{}`},
		{name: "capabilities that are not an object", tool: "laptop_cat", args: `{}`,
			triple: `"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": 3`},
		{name: "no protocol version in _meta", tool: "laptop_cat", args: `{}`, triple: `"io.modelcontextprotocol/clientCapabilities": {}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs, fc, fb, flen := c.post(t, fast)
			ss, sc, sb, _ := c.post(t, sdk)
			// Answered in front of the SDK, the reply is whole: sent with its
			// length, not flushed as a chunk and ended by another.
			if c.wantFast && flen != int64(len(fb)) {
				t.Fatalf("the reply declared a length of %d for its %d bytes", flen, len(fb))
			}
			fb, sb = invocationID.ReplaceAllString(fb, "inv-…"), invocationID.ReplaceAllString(sb, "inv-…")
			if fs != ss || fc != sc || fb != sb {
				t.Fatalf("the endpoint answered\n%d %s %q\nthe SDK\n%d %s %q", fs, fc, fb, ss, sc, sb)
			}
			if c.wantFast && (fs != http.StatusOK || !strings.HasPrefix(fb, `event: message`+"\n"+`data: {"jsonrpc":"2.0","id":`+c.idOr1()+`,"result":{`)) {
				t.Fatalf("a call answered with a result: %d %s %q", fs, fc, fb)
			}

		})
	}
}
