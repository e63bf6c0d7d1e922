package mcpserve

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

// Keys of a presented tool's _meta: which client serves it and its own
// name there, so an agent (or a person reading its log) can tell machines
// apart.
const (
	MetaClient = "run.switchboard/client"
	MetaTool   = "run.switchboard/tool"
	// MetaChanged lists the fields of a tool changed since its pin, in a
	// workspace whose pin policy is warn (docs/security.md, "Tool pins").
	MetaChanged = "run.switchboard/changed"
)

// entry is one presented name in the mirror.
type entry struct {
	client  string
	def     *registryv1.Tool
	skipped error // why the definition cannot be offered over MCP (logged once)
}

// present turns a registry listing row into an MCP tool. The schemas are
// JSON text carried as json.RawMessage: never decoded and re-encoded, so
// the model sees them as the host advertised them.
func present(p *registryv1.PresentedTool) (*mcp.Tool, error) {
	def := p.GetTool()
	schema, err := objectSchema(def.GetInputSchema())
	if err != nil {
		return nil, err
	}
	t := &mcp.Tool{
		Name:        p.GetPresentedName(),
		Title:       def.GetTitle(),
		Description: def.GetDescription(),
		InputSchema: schema,
		Meta:        mcp.Meta{MetaClient: p.GetClient(), MetaTool: def.GetName()},
	}
	if len(p.GetChanged()) > 0 {
		t.Meta[MetaChanged] = p.GetChanged() // served under a warn pin policy
	}
	if def.OutputSchema != nil {
		t.OutputSchema = json.RawMessage(def.GetOutputSchema())
	}
	if def.Annotations != nil {
		var a mcp.ToolAnnotations
		if err := json.Unmarshal([]byte(def.GetAnnotations()), &a); err != nil {
			return nil, fmt.Errorf("its annotations do not fit MCP's tool annotations: %v", err)
		}
		t.Annotations = &a
	}
	return t, nil
}

// objectSchema returns an input schema MCP accepts. MCP passes a tool's
// arguments as a JSON object, so its inputSchema must say "type": "object".
// A schema that says nothing about the type (such as {}) accepts an object
// already: the key is added in front and every other byte is kept. A schema
// of another type cannot be called over MCP at all, and is refused.
func objectSchema(text string) (json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &top); err != nil || top == nil {
		return nil, fmt.Errorf("its input_schema is not a JSON object")
	}
	raw, ok := top["type"]
	if !ok {
		body := bytes.TrimLeft([]byte(text), " \t\r\n")[1:] // after the '{'
		sep := ","
		if len(top) == 0 {
			sep = ""
		}
		return json.RawMessage(`{"type":"object"` + sep + string(body)), nil
	}
	var typ string
	if err := json.Unmarshal(raw, &typ); err != nil || typ != "object" {
		return nil, fmt.Errorf(`its input_schema has "type": %s, and MCP passes a tool's arguments as an object`, raw)
	}
	return json.RawMessage(text), nil
}
