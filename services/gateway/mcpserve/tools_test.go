package mcpserve

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

func TestInputSchemasReachMCPAsAdvertised(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema, want, refused string
	}{
		{"an object schema is kept byte for byte",
			`{ "type": "object", "properties": {"n": {"type": "number"}} }`, `{ "type": "object", "properties": {"n": {"type": "number"}} }`, ""},
		{"the empty schema is told it takes an object", `{}`, `{"type":"object"}`, ""},
		{"the empty schema keeps its spacing", ` { } `, `{"type":"object" } `, ""},
		{"a schema without a type gets one in front and keeps the rest",
			`{"properties": {"a": {}}, "required": ["a"]}`, `{"type":"object","properties": {"a": {}}, "required": ["a"]}`, ""},
		{"an array schema cannot take MCP's arguments", `{"type": "array"}`, "", `its input_schema has "type": "array", and MCP passes a tool's arguments as an object`},
		{"a list of types is refused rather than guessed", `{"type": ["object", "null"]}`, "", `has "type": ["object", "null"]`},
		{"a schema that is not an object is refused", `true`, "", "its input_schema is not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := objectSchema(tt.schema)
			if tt.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tt.refused) {
					t.Fatalf("objectSchema(%s) = %s, %v; want a refusal containing %q", tt.schema, got, err, tt.refused)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("objectSchema(%s) = %s, %v; want %s", tt.schema, got, err, tt.want)
			}
			if !json.Valid(got) {
				t.Fatalf("objectSchema(%s) = %s is not JSON", tt.schema, got)
			}
		})
	}
}

func TestAPresentedToolCarriesEveryFieldOfItsDefinition(t *testing.T) {
	t.Parallel()
	p := &registryv1.PresentedTool{PresentedName: "laptop_grep", Client: "laptop", Tool: &registryv1.Tool{
		Name: "grep", Description: "Searches.", InputSchema: `{"type":"object",  "properties":{"z":{},"a":{}}}`,
		Title: proto.String("Grep"), OutputSchema: proto.String(`{"type": "object"}`),
		Annotations: proto.String(`{"readOnlyHint": true, "openWorldHint": false}`),
	}}
	tool, err := present(p)
	if err != nil {
		t.Fatal(err)
	}
	// The schemas are JSON text, not decoded maps: keys keep their order
	// (encoding/json only drops the insignificant spaces).
	got, err := json.Marshal(tool)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"_meta":{"run.switchboard/client":"laptop","run.switchboard/tool":"grep"},` +
		`"annotations":{"idempotentHint":false,"openWorldHint":false,"readOnlyHint":true},"description":"Searches.",` +
		`"inputSchema":{"type":"object","properties":{"z":{},"a":{}}},"name":"laptop_grep","outputSchema":{"type":"object"},"title":"Grep"}`
	if string(got) != want {
		t.Errorf("tool = %s\nwant   %s", got, want)
	}

	p.Tool.Annotations = proto.String(`{"readOnlyHint": "yes"}`)
	if _, err := present(p); err == nil || !strings.Contains(err.Error(), "its annotations do not fit MCP's tool annotations") {
		t.Errorf("mistyped annotations: %v", err)
	}
}

func TestTheCallTimeoutIsTheServersOrTheClientsShorterOne(t *testing.T) {
	t.Parallel()
	m := &Mirror{opts: Options{CallTimeout: 10 * time.Second}}
	tests := []struct {
		name    string
		meta    mcp.Meta
		want    time.Duration
		refused string
	}{
		{"no _meta is the server's bound", nil, 10 * time.Second, ""},
		{"a shorter client timeout wins", mcp.Meta{MetaTimeout: "1.5s"}, 1500 * time.Millisecond, ""},
		{"a longer client timeout is cut to the server's", mcp.Meta{MetaTimeout: "1h"}, 10 * time.Second, ""},
		{"a number is refused by name", mcp.Meta{MetaTimeout: 5.0}, 0, `_meta "run.switchboard/timeout" must be a positive duration such as "20s", not 5`},
		{"a negative duration is refused", mcp.Meta{MetaTimeout: "-1s"}, 0, `not "-1s"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := m.timeout(tt.meta)
			if tt.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tt.refused) {
					t.Fatalf("timeout(%v) = %v, %v; want a refusal containing %q", tt.meta, got, err, tt.refused)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("timeout(%v) = %v, %v; want %v", tt.meta, got, err, tt.want)
			}
		})
	}
}
