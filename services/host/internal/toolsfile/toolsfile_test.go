package toolsfile

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file, err string
	}{
		{name: "a minimal tool loads", file: `[{"name":"echo","description":"d","input_schema":{"type":"object"},"command":["cat"]}]`},
		{name: "an unknown key is refused by name", file: `[{"name":"e","description":"","input_schema":{},"command":["x"],"comand":1}]`, err: `unknown field "comand"`},
		{name: "a missing name is refused", file: `[{"description":"","input_schema":{},"command":["x"]}]`, err: `tool 0: missing field "name"`},
		{name: "a missing description is refused", file: `[{"name":"e","input_schema":{},"command":["x"]}]`, err: `"e": missing field "description"`},
		{name: "a missing schema is refused", file: `[{"name":"e","description":"","command":["x"]}]`, err: `missing field "input_schema"`},
		{name: "a schema that is not an object is refused", file: `[{"name":"e","description":"","input_schema":[],"command":["x"]}]`, err: "input_schema is not a JSON object"},
		{name: "a string command is refused (no shell)", file: `[{"name":"e","description":"","input_schema":{},"command":"ls -l"}]`, err: "cannot unmarshal string"},
		{name: "an empty command is refused", file: `[{"name":"e","description":"","input_schema":{},"command":[]}]`, err: `missing field "command"`},
		{name: "a duplicate name is refused", file: `[{"name":"e","description":"","input_schema":{},"command":["x"]},{"name":"e","description":"","input_schema":{},"command":["y"]}]`, err: `tool 1: duplicate tool name "e"`},
		{name: "an env that is not an object of strings is refused", file: `[{"name":"e","description":"","input_schema":{},"command":["x"],"env":{"A":1}}]`, err: "cannot unmarshal number"},
		{name: "an env name exec cannot pass is refused", file: `[{"name":"e","description":"","input_schema":{},"command":["x"],"env":{"A=B":"1"}}]`, err: `"e": environment variable name "A=B" is not usable`},
		{name: "an empty array is refused", file: `[]`, err: "holds no tools"},
		{name: "an object is refused", file: `{}`, err: "not a JSON array"},
		{name: "trailing data is refused", file: `[{"name":"e","description":"","input_schema":{},"command":["x"]}] []`, err: "trailing data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.file), "/base")
			if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("err = %v, want %q", err, tt.err)
			}
		})
	}
}

func TestAdvertisementLeavesTheLocalKeysOut(t *testing.T) {
	t.Parallel()
	tools, err := Parse([]byte(`[{"name":"grep","description":"search","input_schema":{"type":"object"},"command":["grep"],"cwd":"sub","env":{"GREP_COLOR":"1"},"subject_cwd":true}]`), "/base")
	if err != nil {
		t.Fatal(err)
	}
	if tools[0].Cwd != "/base/sub" {
		t.Fatalf("cwd = %q, want it taken from the file's directory", tools[0].Cwd)
	}
	if tools[0].Env["GREP_COLOR"] != "1" {
		t.Fatalf("env = %v", tools[0].Env)
	}
	adv := Advertisement(tools)[0]
	if adv.GetName() != "grep" || adv.GetInputSchema() != `{"type":"object"}` || !adv.GetSubjectCwd() {
		t.Fatalf("advertisement = %v", adv)
	}
}

// FuzzParse: any bytes either load into tools that each have a name, an
// object schema and a command, or are refused with an error — never a panic.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`[{"name":"echo","description":"d","input_schema":{"type":"object"},"command":["cat"]}]`))
	f.Add([]byte(`[{"name":"e","description":"","input_schema":{},"command":["x"],"cwd":"/","subject_cwd":false,"title":"t","output_schema":{},"annotations":{}}]`))
	f.Add([]byte(`[{"name":"","description":null,"input_schema":"x","command":[""]}]`))
	f.Add([]byte(`[[[[`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tools, err := Parse(b, "/base")
		if err != nil {
			return
		}
		for _, tl := range tools {
			if tl.Advertised.GetName() == "" || len(tl.Command) == 0 || tl.Command[0] == "" || !strings.HasPrefix(strings.TrimSpace(tl.Advertised.GetInputSchema()), "{") {
				t.Fatalf("loaded a bad tool: %+v", tl)
			}
		}
	})
}
