// Package toolsfile reads a tool host's tools file (docs/design.md §6): a JSON array
// of {"name","description","input_schema","command":[argv…],"cwd"?,
// "env"?,"subject_cwd"?}. The advertisement is the file minus the local
// keys (command, cwd, env). Decoding is strict: a tools file is configuration a model
// will act through, so a typo is refused by name rather than ignored.
package toolsfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/childenv"
	"github.com/switchboard-run/switchboard/kit/lib/rawjson"
)

// MaxBytes bounds a tools file.
const MaxBytes = 4 << 20

// Tool is one entry: what is advertised, and how to run it here.
type Tool struct {
	// Advertised is the entry minus the local keys.
	Advertised *registryv1.Tool
	// Command is the argv, spawned directly: no shell, no interpolation.
	Command []string
	// Cwd is where the command runs when the invocation names no cwd.
	Cwd string
	// Env is the tool's own environment, on top of the few variables the
	// host passes on from its own (kit/lib/childenv).
	Env map[string]string
}

// entry is one element of the file, as written.
type entry struct {
	Name         *string           `json:"name"`
	Description  *string           `json:"description"`
	InputSchema  json.RawMessage   `json:"input_schema"`
	SubjectCwd   *bool             `json:"subject_cwd"`
	Title        *string           `json:"title"`
	OutputSchema json.RawMessage   `json:"output_schema"`
	Annotations  json.RawMessage   `json:"annotations"`
	Command      []string          `json:"command"`
	Cwd          *string           `json:"cwd"`
	Env          map[string]string `json:"env"`
}

// Load reads and checks the file at path. Relative cwd entries are taken
// from the file's directory.
func Load(path string) ([]Tool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxBytes {
		return nil, fmt.Errorf("%s is %d bytes; a tools file may hold at most %d", path, len(b), MaxBytes)
	}
	tools, err := Parse(b, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tools, nil
}

// Parse checks a tools file's bytes; dir resolves relative cwd entries.
func Parse(b []byte, dir string) ([]Tool, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var entries []entry
	if err := dec.Decode(&entries); err != nil {
		return nil, fmt.Errorf("not a JSON array of tools: %w", err)
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON array of tools")
	}
	if len(entries) == 0 {
		return nil, errors.New("holds no tools")
	}
	seen := map[string]bool{}
	tools := make([]Tool, 0, len(entries))
	for i, e := range entries {
		t, err := e.tool(dir)
		if err != nil {
			return nil, fmt.Errorf("tool %d: %w", i, err)
		}
		name := t.Advertised.GetName()
		if seen[name] {
			return nil, fmt.Errorf("tool %d: duplicate tool name %q", i, name)
		}
		seen[name] = true
		tools = append(tools, t)
	}
	return tools, nil
}

func (e *entry) tool(dir string) (Tool, error) {
	switch {
	case e.Name == nil || *e.Name == "":
		return Tool{}, errors.New(`missing field "name"`)
	case e.Description == nil:
		return Tool{}, fmt.Errorf("%q: missing field \"description\"", *e.Name)
	case len(e.InputSchema) == 0:
		return Tool{}, fmt.Errorf("%q: missing field \"input_schema\"", *e.Name)
	case len(e.Command) == 0 || e.Command[0] == "":
		return Tool{}, fmt.Errorf("%q: missing field \"command\" (an argv array, e.g. [\"/bin/echo\", \"hi\"])", *e.Name)
	}
	if err := rawjson.CheckObject("input_schema", string(e.InputSchema)); err != nil {
		return Tool{}, fmt.Errorf("%q: %w", *e.Name, err)
	}
	adv := &registryv1.Tool{Name: *e.Name, Description: *e.Description, InputSchema: string(e.InputSchema),
		SubjectCwd: e.SubjectCwd, Title: e.Title}
	if len(e.OutputSchema) > 0 {
		if err := rawjson.CheckObject("output_schema", string(e.OutputSchema)); err != nil {
			return Tool{}, fmt.Errorf("%q: %w", *e.Name, err)
		}
		adv.OutputSchema = proto.String(string(e.OutputSchema))
	}
	if len(e.Annotations) > 0 {
		if err := rawjson.CheckObject("annotations", string(e.Annotations)); err != nil {
			return Tool{}, fmt.Errorf("%q: %w", *e.Name, err)
		}
		adv.Annotations = proto.String(string(e.Annotations))
	}
	if err := childenv.Check(e.Env); err != nil {
		return Tool{}, fmt.Errorf("%q: %w", *e.Name, err)
	}
	t := Tool{Advertised: adv, Command: e.Command, Env: e.Env}
	if e.Cwd != nil {
		t.Cwd = *e.Cwd
		if !filepath.IsAbs(t.Cwd) {
			t.Cwd = filepath.Join(dir, t.Cwd)
		}
	}
	return t, nil
}

// Advertisement is the tool set to advertise: every entry minus its local
// keys, in file order.
func Advertisement(tools []Tool) []*registryv1.Tool {
	out := make([]*registryv1.Tool, len(tools))
	for i, t := range tools {
		out[i] = t.Advertised
	}
	return out
}
