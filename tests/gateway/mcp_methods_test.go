package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// rawMCPReply is what one raw JSON-RPC POST to the endpoint got back.
type rawMCPReply struct {
	status int
	result json.RawMessage
	code   int // the JSON-RPC error's code; 0 without an error
	msg    string
	data   json.RawMessage // the JSON-RPC error's data
	acked  bool            // a subscriptions/listen stream began with its acknowledgement
}

// rawMCPClient speaks JSON-RPC to /mcp by hand, for the methods the SDK's
// client cannot send; in the era with sessions it carries the session id.
type rawMCPClient struct {
	url, rev, session string
	h                 http.Header
	id                int
}

// send POSTs one request (or, with notify, one notification) of method
// with params; in the stateless era it adds the _meta and headers that era
// asks of every request.
func (c *rawMCPClient) send(t testing.TB, method string, params map[string]any, notify bool) rawMCPReply {
	t.Helper()
	params = maps.Clone(params)
	if params == nil {
		params = map[string]any{}
	}
	if c.rev >= "2026-07-28" {
		meta, _ := params["_meta"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		meta["io.modelcontextprotocol/protocolVersion"] = c.rev
		if _, ok := meta["io.modelcontextprotocol/clientCapabilities"]; !ok {
			meta["io.modelcontextprotocol/clientCapabilities"] = map[string]any{}
		}
		meta["io.modelcontextprotocol/clientInfo"] = map[string]any{"name": "switchboard-test", "version": "1"}
		params["_meta"] = meta
	}
	msg := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
	if !notify {
		c.id++
		msg["id"] = c.id
	}
	body, _ := json.Marshal(msg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range c.h {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.rev >= "2026-07-28" {
		// The headers the stateless era requires to mirror the body.
		req.Header.Set("Mcp-Protocol-Version", c.rev)
		req.Header.Set("Mcp-Method", method)
		if name, ok := params["name"].(string); ok {
			req.Header.Set("Mcp-Name", name)
		}
		if id, ok := params["taskId"].(string); ok {
			req.Header.Set("Mcp-Name", id) // the Tasks extension's routing header
		}
		if uri, ok := params["uri"].(string); ok && method == "resources/read" {
			req.Header.Set("Mcp-Name", uri)
		}
	}
	if c.session != "" {
		req.Header.Set("Mcp-Protocol-Version", c.rev)
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	resp, err := testkit.HTTP.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		c.session = sid
	}
	out := rawMCPReply{status: resp.StatusCode}
	var data []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// Read events until the reply, or the acknowledgement that opens a
		// subscriptions/listen stream (which then stays open).
		sc := bufio.NewScanner(io.LimitReader(resp.Body, 1<<20))
		for data == nil && sc.Scan() {
			d, ok := strings.CutPrefix(sc.Text(), "data:")
			if !ok {
				continue
			}
			var m struct {
				ID     json.RawMessage
				Method string
			}
			if json.Unmarshal([]byte(d), &m) != nil {
				continue
			}
			switch {
			case m.Method == "notifications/subscriptions/acknowledged":
				out.acked = true
				return out
			case m.ID != nil:
				data = []byte(d)
			}
		}
	} else {
		raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			t.Fatalf("%s: reading the answer: %v", method, err)
		}
		data = raw
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return out
	}
	var r struct {
		Result json.RawMessage
		Error  *struct {
			Code    int
			Message string
			Data    json.RawMessage
		}
	}
	if err := json.Unmarshal(data, &r); err != nil {
		out.msg = string(data) // a plain-text refusal
		return out
	}
	out.result = r.Result
	if r.Error != nil {
		out.code, out.msg, out.data = r.Error.Code, r.Error.Message, r.Error.Data
	}
	return out
}

// TestEveryMCPMethodAnswersAsDocsSay walks the endpoint's tables in
// docs/mcp.md ("Every MCP method, as Switchboard handles it"): each request
// row is sent in both eras, by hand over HTTP (the SDK's client sends only
// the methods it knows), and its answer must be the one the table names;
// each client notification must get the HTTP status the table says. A
// change of the endpoint or of the SDK that changes an answer fails here
// until the table says so too.
func TestEveryMCPMethodAnswersAsDocsSay(t *testing.T) {
	t.Parallel()
	requests, notifications := endpointMethodTables(t)
	s := newSuite(t, options{laptop: true})
	// The conformance server's prompts and resources are what prompts/get
	// and resources/read name; they are listed once the bridge's catalog
	// reached the mirror.
	s.mountConformance(t)
	cs := s.connect(t, "/mcp", as("alice", identity.Driver), nil)
	testkit.Eventually(t, "conf's resources and prompts served", 20*time.Second, func() bool {
		return resourceURIs(t, cs)["test://static-text"] == "conf" && promptNames(t, cs)["conf_test_simple_prompt"] != nil
	})
	forEachRevision(t, func(t *testing.T, rev string) {
		col := 1
		if rev >= "2026-07-28" {
			col = 2
		}
		session := s.rawMCPSession(t, rev)
		for _, row := range requests {
			for _, method := range row.methods {
				t.Run(method, func(t *testing.T) {
					c := session
					if method == "initialize" {
						c = &rawMCPClient{url: s.URL + "/mcp", rev: rev, h: as("alice", identity.Driver)}
					}
					checkMethodAnswer(t, method, row.cells[col], c.send(t, method, methodParams(t, method, rev), false))
				})
			}
		}
		for _, row := range notifications {
			for _, method := range row.methods {
				t.Run(method, func(t *testing.T) {
					want := http.StatusAccepted
					if strings.Contains(row.cells[1], "HTTP 400") {
						want = http.StatusBadRequest
					}
					if got := session.send(t, method, methodParams(t, method, rev), true); got.status != want {
						t.Fatalf("%s: HTTP %d %q, the table says %d (%q)", method, got.status, got.msg, want, row.cells[1])
					}
				})
			}
		}
	})
}

// checkMethodAnswer holds a reply to what a cell of the requests table says.
func checkMethodAnswer(t *testing.T, method, cell string, got rawMCPReply) {
	t.Helper()
	code := regexp.MustCompile("`(-3\\d{4})`").FindStringSubmatch(cell)
	switch {
	case cell == "—":
		t.Skip("the table says the method does not exist in this era")
	case strings.HasPrefix(cell, "served"):
		if got.code != 0 || got.status != http.StatusOK || (got.result == nil && !got.acked) {
			t.Fatalf("%s: HTTP %d, error %d %q; the table says %q", method, got.status, got.code, got.msg, cell)
		}
		if strings.Contains(cell, "notifications/subscriptions/acknowledged") && !got.acked {
			t.Fatalf("%s: the stream did not start with the acknowledgement: %s", method, got.result)
		}
		if strings.Contains(cell, "`[]`") {
			var res map[string]json.RawMessage
			if err := json.Unmarshal(got.result, &res); err != nil {
				t.Fatal(err)
			}
			for k, v := range res {
				if strings.HasPrefix(string(v), "[") && string(v) != "[]" {
					t.Fatalf("%s: %s = %s; the table says it is empty", method, k, v)
				}
			}
		}
		if method == "tools/call" && strings.Contains(string(got.result), `"isError":true`) {
			t.Fatalf("tools/call of laptop_cat failed: %s", got.result)
		}
	case strings.Contains(cell, "HTTP 400"):
		if got.status != http.StatusBadRequest || got.code != 0 {
			t.Fatalf("%s: HTTP %d, error %d %q; the table says %q", method, got.status, got.code, got.msg, cell)
		}
	case code != nil:
		if want, _ := strconv.Atoi(code[1]); got.code != want {
			t.Fatalf("%s: HTTP %d, error %d %q, result %s; the table says %q", method, got.status, got.code, got.msg, got.result, cell)
		}
	default:
		t.Fatalf("the table's cell %q for %s says neither served nor a refusal this test knows", cell, method)
	}
}

// methodRow is one row of a table in docs/mcp.md: the methods its first
// cell names, and its cells.
type methodRow struct {
	methods []string
	cells   []string
}

// endpointMethodTables reads the endpoint's request and notification tables
// from docs/mcp.md.
func endpointMethodTables(t *testing.T) (requests, notifications []methodRow) {
	t.Helper()
	doc, err := os.ReadFile("../../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "### The workspace endpoint")
	end := strings.Index(text, "### The bridge, toward a mounted server")
	if start < 0 || end < start {
		t.Fatal(`docs/mcp.md has no section "### The workspace endpoint" before "### The bridge, toward a mounted server"`)
	}
	var tables [][]methodRow
	var current []methodRow
	for _, line := range strings.Split(text[start:end], "\n") {
		if !strings.HasPrefix(line, "|") {
			if current != nil {
				tables, current = append(tables, current), nil
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if current == nil {
			current = []methodRow{} // the header row
			continue
		}
		if strings.HasPrefix(cells[0], "---") {
			continue
		}
		row := methodRow{cells: cells}
		for _, m := range regexp.MustCompile("`([A-Za-z/_]+)`").FindAllStringSubmatch(cells[0], -1) {
			row.methods = append(row.methods, m[1])
		}
		if strings.HasPrefix(cells[0], "any other") || strings.HasSuffix(cells[0], "any other") {
			row.methods = append(row.methods, map[bool]string{true: "notifications/no_such_thing", false: "no/such-method"}[strings.Contains(cells[0], "notifications/")])
		}
		if len(row.methods) == 0 {
			t.Fatalf("docs/mcp.md: the row %q names no method in backquotes", line)
		}
		current = append(current, row)
	}
	if len(tables) < 2 {
		t.Fatalf("docs/mcp.md's endpoint section has %d tables; want the requests table and the notifications table first", len(tables))
	}
	return tables[0], tables[1]
}

// rawMCPSession is a client of /mcp in revision rev: with a session opened
// (initialize, then notifications/initialized) in the era with sessions.
func (s *suite) rawMCPSession(t *testing.T, rev string) *rawMCPClient {
	return s.rawMCPSessionAs(t, rev, "alice")
}

// rawMCPSessionAs is rawMCPSession for the driver name.
func (s *suite) rawMCPSessionAs(t *testing.T, rev, name string) *rawMCPClient {
	c := &rawMCPClient{url: s.URL + "/mcp", rev: rev, h: as(name, identity.Driver)}
	if rev < "2026-07-28" {
		if r := c.send(t, "initialize", methodParams(t, "initialize", rev), false); r.code != 0 || c.session == "" {
			t.Fatalf("initialize: HTTP %d, error %d %q, session %q", r.status, r.code, r.msg, c.session)
		}
		if r := c.send(t, "notifications/initialized", nil, true); r.status != http.StatusAccepted {
			t.Fatalf("notifications/initialized: HTTP %d %q", r.status, r.msg)
		}
	}
	return c
}

// methodParams is a valid params object for each method the tables name.
func methodParams(t *testing.T, method, rev string) map[string]any {
	t.Helper()
	task := map[string]any{"taskId": "task-1"}
	uri := map[string]any{"uri": "test://static-text"}
	switch method {
	case "initialize":
		return map[string]any{"protocolVersion": rev, "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "switchboard-test", "version": "1"}}
	case "tools/call":
		return map[string]any{"name": "laptop_cat", "arguments": map[string]any{"text": "x"}}
	case "subscriptions/listen":
		return map[string]any{"notifications": map[string]any{"toolsListChanged": true}}
	case "prompts/get":
		return map[string]any{"name": "conf_test_simple_prompt"}
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		return uri
	case "completion/complete":
		return map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "conf_test_prompt_with_arguments"},
			"argument": map[string]any{"name": "lang", "value": "g"}}
	case "logging/setLevel":
		return map[string]any{"level": "info"}
	case "tasks/get", "tasks/update", "tasks/cancel", "tasks/result", "notifications/tasks/status":
		return task
	case "notifications/cancelled":
		return map[string]any{"requestId": 12345, "reason": "test"}
	case "notifications/progress":
		return map[string]any{"progressToken": "p-1", "progress": 1}
	case "server/discover", "ping", "tools/list", "prompts/list", "resources/list", "resources/templates/list",
		"tasks/list", "no/such-method", "notifications/initialized", "notifications/roots/list_changed", "notifications/no_such_thing":
		return nil
	}
	t.Fatalf("docs/mcp.md names %q, for which this test has no params: add them to methodParams", method)
	return nil
}

// A listing goes only to callers who may see the workspace: no shared cache
// may keep it (cacheScope "private", MCP 2026-07-28). A session's client
// speaks an older revision, whose listings have no cache fields.
func TestListingsAreForTheCallerAlone(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{laptop: true})
	c := s.rawMCPSession(t, "2026-07-28")
	for _, method := range []string{"tools/list", "server/discover"} {
		r := c.send(t, method, nil, false)
		var res struct {
			CacheScope *string `json:"cacheScope"`
		}
		if r.code != 0 || json.Unmarshal(r.result, &res) != nil || res.CacheScope == nil || *res.CacheScope != "private" {
			t.Errorf("%s: error %d %q, result %.200s; want cacheScope private", method, r.code, r.msg, r.result)
		}
	}
	old := s.rawMCPSession(t, "2025-11-25")
	r := old.send(t, "tools/list", nil, false)
	var res map[string]json.RawMessage
	if r.code != 0 || json.Unmarshal(r.result, &res) != nil || res["tools"] == nil || res["ttlMs"] != nil || res["cacheScope"] != nil {
		t.Errorf("tools/list in a 2025-11-25 session: error %d %q, result %.300s; want the tools, without ttlMs or cacheScope", r.code, r.msg, r.result)
	}
}
