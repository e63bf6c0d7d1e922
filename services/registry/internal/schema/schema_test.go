package schema_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-run/switchboard/services/registry/internal/schema"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	secret := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(secret, []byte(`{"type":"object"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		schema string
		want   string // "" compiles; else a part of the reason
	}{
		{"an object schema compiles", `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`, ""},
		{"the empty schema compiles", `{}`, ""},
		{"a draft-07 schema compiles under its own draft", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`, ""},
		{"a local $ref compiles", `{"$defs":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/s"}}}`, ""},
		{"a number for type is refused at /type", `{"type":5}`, "at '/type'"},
		{"a misspelt nested type is refused at its path", `{"properties":{"a":{"type":"strin"}}}`, "at '/properties/a/type'"},
		{"a bad regex is refused", `{"pattern":"("}`, "is not valid regex"},
		{"a negative minLength is refused", `{"minLength":-1}`, "at '/minLength'"},
		{"a dangling local $ref is refused", `{"$ref":"#/$defs/missing"}`, "not found"},
		{"a $ref to a file is refused, never read", `{"$ref":"file://` + secret + `"}`, "self-contained"},
		{"a $ref to the network is refused", `{"$ref":"https://example.com/s.json"}`, "self-contained"},
		{"an unknown $schema is refused", `{"$schema":"https://example.com/meta"}`, "self-contained"},
		{"trailing data is refused", `{} {}`, "after top-level value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := schema.Check(tt.schema)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Check(%s) = %v, want nil", tt.schema, err)
			case tt.want != "" && err == nil:
				t.Fatalf("Check(%s) = nil, want a reason holding %q", tt.schema, tt.want)
			case err != nil && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("Check(%s) = %q, want a reason holding %q", tt.schema, err, tt.want)
			case err != nil && strings.Contains(err.Error(), "\n"):
				t.Fatalf("Check(%s) = %q spans lines; want one sentence", tt.schema, err)
			}
		})
	}
}
