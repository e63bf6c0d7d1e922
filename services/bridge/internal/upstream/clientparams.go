package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/kit/suite/contract"
)

// statelessRevision is the first MCP revision whose requests each carry
// the client's capabilities, and whose servers ask for input in results
// (input_required) rather than in requests to the client.
const statelessRevision = "2026-07-28"

// ClientParams is what a driver's MCP client sent with tools/call beyond
// the tool's name and arguments (Invocation.mcp_params): its answers to an
// earlier input_required result, and what it can be asked. The bridge
// passes them to the server, and the server's input_required results back
// (docs/mcp.md, "Input requests").
type ClientParams struct {
	InputResponses mcp.InputResponseMap `json:"inputResponses,omitempty"`
	RequestState   string               `json:"requestState,omitempty"`
	Meta           struct {
		ClientCapabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities,omitempty"`
		// LogLevel asks for the server's log messages during the call, at
		// this level and above (hearLog).
		LogLevel mcp.LoggingLevel `json:"io.modelcontextprotocol/logLevel,omitempty"`
		// Answers says the driver's endpoint relays the server's questions
		// (elicitation, sampling) to its client while the call runs
		// (mcpserve's forwardedMeta); the bridge keeps it to itself.
		Answers bool `json:"run.switchboard/answers,omitempty"`
		// Resolve says the driver takes the server's input_required
		// results as questions during the run (a Task, resolve.go).
		Resolve bool `json:"run.switchboard/resolve,omitempty"`
	} `json:"_meta"`
}

// capabilities are what a stateless-era server may ask the driver's client
// for: what it declared, or nothing (never the bridge's own, asks.go).
func (p *ClientParams) capabilities() json.RawMessage {
	if p == nil || p.Meta.ClientCapabilities == nil {
		return json.RawMessage(`{}`)
	}
	return p.Meta.ClientCapabilities
}

// ParseClientParams decodes an invocation's mcp_params strictly: a member
// the bridge does not know is refused, not dropped, so nothing a driver
// meant for the server is lost unsaid.
func ParseClientParams(text string) (*ClientParams, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.DisallowUnknownFields()
	var p ClientParams
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("mcp_params: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("mcp_params: more than one JSON value")
	}
	if c := p.Meta.ClientCapabilities; c != nil && (len(c) == 0 || c[0] != '{') {
		return nil, fmt.Errorf("mcp_params: _meta %q is not an object", mcp.MetaKeyClientCapabilities)
	}
	if l := p.Meta.LogLevel; l != "" && !slices.Contains(contract.LogLevels, string(l)) {
		return nil, fmt.Errorf("mcp_params: _meta %q is %q, not one of MCP's log levels", mcp.MetaKeyLogLevel, l)
	}
	return &p, nil
}
