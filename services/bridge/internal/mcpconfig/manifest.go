package mcpconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"google.golang.org/protobuf/proto"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

// A plugin manifest (docs/design.md §7) says how to run a JSON-lines
// backend and which tools it serves, decoded as strictly as the mcpServers
// file (an unknown, duplicate, null or mistyped field is refused by name):
//
//	{"command": ["bin/notebook", "-v"], "env": {"K": "v"}, "cwd": "/srv",
//	 "tools": [{"name", "description", "input_schema": {…}, "title"?, "output_schema"?, "annotations"?}],
//	 "startAtMount": false, "maxLineBytes": 1048576}

// manifestKinds names every accepted top-level field with what its value
// must be.
var manifestKinds = map[string]string{
	"command": "an array of strings", "env": "an object of strings", "cwd": "a string",
	"tools": "an array of tool objects", "startAtMount": "true or false", "maxLineBytes": "a whole number",
	"callTimeout": durationKind,
}

// toolKinds names every accepted field of a manifest's tool.
var toolKinds = map[string]string{
	"name": "a string", "description": "a string", "input_schema": "a JSON object",
	"title": "a string", "output_schema": "a JSON object", "annotations": "a JSON object",
}

// LoadManifest reads and parses the plugin manifest file at path.
func LoadManifest(path string) (*bridgev1.PluginManifest, error) {
	data, err := readFile("plugin manifest", path)
	if err != nil {
		return nil, err
	}
	m, err := ParseManifest(data)
	if err != nil {
		return nil, fmt.Errorf("plugin manifest %s: %w", path, err)
	}
	return m, nil
}

// ParseManifest reads a plugin manifest document. What it returns passes
// Check as a plugin transport.
func ParseManifest(data []byte) (*bridgev1.PluginManifest, error) {
	fields, err := object(data, "the manifest")
	if err != nil {
		return nil, err
	}
	m := &bridgev1.PluginManifest{}
	present := map[string]bool{}
	for _, f := range fields {
		kind, ok := manifestKinds[f.key]
		if !ok {
			return nil, fmt.Errorf("unknown field %q", f.key)
		}
		if bytes.Equal(f.value, []byte("null")) {
			return nil, fmt.Errorf("field %q is null; want %s, or leave it out", f.key, kind)
		}
		present[f.key] = true
		if err := manifestField(m, f); err != nil {
			return nil, err
		}
	}
	for _, k := range []string{"command", "tools"} {
		if !present[k] {
			return nil, fmt.Errorf("missing field %q", k)
		}
	}
	if err := checkManifest(m); err != nil {
		return nil, err
	}
	return m, nil
}

// manifestField decodes one top-level field into m.
func manifestField(m *bridgev1.PluginManifest, f field) error {
	mistyped := fmt.Errorf("field %q must be %s", f.key, manifestKinds[f.key])
	var err error
	switch f.key {
	case "command":
		err = json.Unmarshal(f.value, &m.Command)
	case "env":
		err = json.Unmarshal(f.value, &m.Env)
	case "cwd":
		err = json.Unmarshal(f.value, &m.Cwd)
	case "startAtMount":
		err = json.Unmarshal(f.value, &m.StartAtMount)
	case "maxLineBytes":
		if !isNumberLiteral(f.value) {
			return mistyped
		}
		if m.MaxLineBytes, err = wholeNumber(json.Number(f.value)); err != nil {
			return fmt.Errorf("field %q %w", f.key, err)
		}
	case "callTimeout":
		var s string
		if json.Unmarshal(f.value, &s) != nil {
			return mistyped
		}
		m.CallTimeout, err = fileDuration(f.key, s)
		return err
	case "tools":
		var raws []json.RawMessage
		if json.Unmarshal(f.value, &raws) != nil {
			return mistyped
		}
		for i, raw := range raws {
			t, err := manifestTool(raw, i)
			if err != nil {
				return err
			}
			m.Tools = append(m.Tools, t)
		}
	}
	if err != nil {
		return mistyped
	}
	return nil
}

// manifestTool decodes the i-th entry of "tools".
func manifestTool(raw json.RawMessage, i int) (*registryv1.Tool, error) {
	label := fmt.Sprintf("tools[%d]", i)
	fields, err := object(raw, label)
	if err != nil {
		return nil, err
	}
	for _, f := range fields {
		var name string
		if f.key == "name" && json.Unmarshal(f.value, &name) == nil {
			label = fmt.Sprintf("tool %q", name)
		}
	}
	t := &registryv1.Tool{}
	present := map[string]bool{}
	for _, f := range fields {
		if f.key == "subject_cwd" {
			return nil, fmt.Errorf(`%s: field "subject_cwd" is not supported: a plugin backend is not told a working directory`, label)
		}
		kind, ok := toolKinds[f.key]
		if !ok {
			return nil, fmt.Errorf("%s: unknown field %q", label, f.key)
		}
		s, ok := toolText(f.value, kind == "a JSON object")
		if !ok {
			return nil, fmt.Errorf("%s: field %q must be %s", label, f.key, kind)
		}
		present[f.key] = true
		switch f.key {
		case "name":
			t.Name = s
		case "description":
			t.Description = s
		case "input_schema":
			t.InputSchema = s
		case "title":
			t.Title = proto.String(s)
		case "output_schema":
			t.OutputSchema = proto.String(s)
		case "annotations":
			t.Annotations = proto.String(s)
		}
	}
	for _, k := range []string{"name", "description", "input_schema"} {
		if !present[k] {
			return nil, fmt.Errorf("%s: missing field %q", label, k)
		}
	}
	return t, nil
}

// toolText is a tool field's text: a string's value, or a JSON object's
// compact text (schemas travel as JSON text, without the file's layout).
func toolText(raw json.RawMessage, isObject bool) (string, bool) {
	if !isObject {
		var s string
		return s, json.Unmarshal(raw, &s) == nil
	}
	var b bytes.Buffer
	if !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) || json.Compact(&b, raw) != nil {
		return "", false
	}
	return b.String(), true
}

// pluginEntry is an mcpServers entry naming a plugin manifest: the manifest
// is read now, from a path relative to the config file's directory.
func pluginEntry(e *entry, present map[string]bool, dir string, cfg *bridgev1.ServerConfig) error {
	if k := firstPresent(present, []string{"args", "env", "cwd"}); k != "" {
		return fmt.Errorf(`field %q applies to "command" servers; a plugin backend's is in its manifest`, k)
	}
	if present["headers"] {
		return errors.New(`field "headers" applies to "url" servers, not plugin backends`)
	}
	if e.Manifest == "" {
		return errors.New(`field "manifest" is empty: give the path of the plugin's manifest file`)
	}
	if n, _ := wholeNumber(e.MaxInFlight); n > 1 {
		return fmt.Errorf(`field "maxInFlight" is %d, but a plugin backend takes one call at a time`, n)
	}
	path := e.Manifest
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	m, err := LoadManifest(path)
	if err != nil {
		return err
	}
	cfg.Transport = &bridgev1.ServerConfig_Plugin{Plugin: m}
	return nil
}
