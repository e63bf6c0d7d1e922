package toolgroups

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"google.golang.org/protobuf/encoding/protojson"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/names"
)

// MaxFileBytes bounds a groups file: MaxGroups groups at their bounds fit
// many times over.
const MaxFileBytes = 4 << 20

// File is the groups file loaded at start with --groups (docs/mcp.md,
// "Tool groups"), each group decoded strictly and checked as SetGroup does:
//
//	{"groups": [{"workspace": "default", "name": "readonly",
//	  "patterns": ["*_get*", "*_list*", "!*_delete*"],
//	  "overrides": [{"tool": "gh_get_issue", "alias": "issue", "description": "…"}]}]}
type File struct {
	Groups []json.RawMessage `json:"groups"`
}

// LoadFile reads and checks a groups file.
func LoadFile(path string) ([]*registryv1.Group, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("the groups file: %w", err)
	}
	defer f.Close()
	body, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the groups file %s: %w", path, err)
	}
	if len(body) > MaxFileBytes {
		return nil, fmt.Errorf("the groups file %s is larger than %d bytes", path, MaxFileBytes)
	}
	groups, err := Parse(body)
	if err != nil {
		return nil, fmt.Errorf("the groups file %s: %w", path, err)
	}
	return groups, nil
}

// Parse reads the text of a groups file.
func Parse(body []byte) ([]*registryv1.Group, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var file File
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf(`it is not {"groups": [...]}: %v`, err)
	}
	seen := map[string]bool{}
	out := make([]*registryv1.Group, 0, len(file.Groups))
	for i, raw := range file.Groups {
		g := new(registryv1.Group)
		if err := (protojson.UnmarshalOptions{}).Unmarshal(raw, g); err != nil {
			return nil, fmt.Errorf("group %d: %v", i+1, err)
		}
		if g.Updated != nil {
			return nil, fmt.Errorf("group %d sets \"updated\", which the registry sets", i+1)
		}
		if err := names.CheckWorkspace(g.GetWorkspace()); err != nil {
			return nil, fmt.Errorf("group %d: %v", i+1, err)
		}
		if _, err := Compile(g); err != nil {
			return nil, fmt.Errorf("group %d: %v", i+1, err)
		}
		key := g.GetWorkspace() + "/" + g.GetName()
		if seen[key] {
			return nil, fmt.Errorf("group %q of workspace %q is defined twice", g.GetName(), g.GetWorkspace())
		}
		seen[key] = true
		out = append(out, g)
	}
	return out, nil
}
