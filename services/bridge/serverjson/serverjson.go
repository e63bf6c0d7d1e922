// Package serverjson reads and writes the MCP Registry's server.json
// entries (the 2025-09-29 schema, docs/connectors.md): Import turns an
// entry into a bridge mount — a remote Streamable HTTP server directly, an
// npm, PyPI or OCI package as the stdio command its runtime runs — and
// Export describes a mount as an entry. Values of secrets are never
// written into a sentence or an export.
package serverjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Schema is the server.json schema an export names.
const Schema = "https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json"

// MaxBytes bounds one server.json document.
const MaxBytes = 1 << 20

// Server is one entry: what it is, and the ways to run it.
type Server struct {
	Schema      string      `json:"$schema,omitempty"`
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Version     string      `json:"version"`
	Title       string      `json:"title,omitempty"`
	WebsiteURL  string      `json:"websiteUrl,omitempty"`
	Packages    []Package   `json:"packages,omitempty"`
	Remotes     []Transport `json:"remotes,omitempty"`
}

// Package is a way to run the server from a package registry.
type Package struct {
	RegistryType         string     `json:"registryType"`
	RegistryBaseURL      string     `json:"registryBaseUrl,omitempty"`
	Identifier           string     `json:"identifier"`
	Version              string     `json:"version,omitempty"`
	FileSHA256           string     `json:"fileSha256,omitempty"`
	RuntimeHint          string     `json:"runtimeHint,omitempty"`
	Transport            Transport  `json:"transport"`
	RuntimeArguments     []Argument `json:"runtimeArguments,omitempty"`
	PackageArguments     []Argument `json:"packageArguments,omitempty"`
	EnvironmentVariables []KeyValue `json:"environmentVariables,omitempty"`
}

// Transport is how a client talks to the server: stdio, or a URL.
type Transport struct {
	Type      string           `json:"type"`
	URL       string           `json:"url,omitempty"`
	Headers   []KeyValue       `json:"headers,omitempty"`
	Variables map[string]Input `json:"variables,omitempty"`
}

// Input is a value the user may have to give.
type Input struct {
	Description string   `json:"description,omitempty"`
	IsRequired  bool     `json:"isRequired,omitempty"`
	Format      string   `json:"format,omitempty"`
	Value       string   `json:"value,omitempty"`
	IsSecret    bool     `json:"isSecret,omitempty"`
	Default     string   `json:"default,omitempty"`
	Placeholder string   `json:"placeholder,omitempty"`
	Choices     []string `json:"choices,omitempty"`
}

// Argument is a positional or named (`--flag value`) command-line input.
type Argument struct {
	Input
	Type       string           `json:"type"`
	Name       string           `json:"name,omitempty"`
	ValueHint  string           `json:"valueHint,omitempty"`
	IsRepeated bool             `json:"isRepeated,omitempty"`
	Variables  map[string]Input `json:"variables,omitempty"`
}

// KeyValue is an environment variable or a header.
type KeyValue struct {
	Input
	Name      string           `json:"name"`
	Variables map[string]Input `json:"variables,omitempty"`
}

// Parse reads a document holding one entry, an entry wrapped as the
// registry's API serves it ({"server": {…}, "_meta": …}), or a list of
// either ({"servers": […]}). Fields that only describe the server
// (repository, icons, _meta…) are ignored.
func Parse(data []byte) ([]*Server, error) {
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("the document is larger than %d bytes", MaxBytes)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("the document is not a JSON object: %v", err)
	}
	if list, ok := top["servers"]; ok && top["name"] == nil {
		var items []json.RawMessage
		if err := json.Unmarshal(list, &items); err != nil {
			return nil, fmt.Errorf(`"servers" is not an array: %v`, err)
		}
		var out []*Server
		for i, item := range items {
			s, err := one(item)
			if err != nil {
				return nil, fmt.Errorf("servers[%d]: %w", i, err)
			}
			out = append(out, s)
		}
		if len(out) == 0 {
			return nil, errors.New(`"servers" lists no server`)
		}
		return out, nil
	}
	s, err := one(data)
	if err != nil {
		return nil, err
	}
	return []*Server{s}, nil
}

// one reads one entry, bare or wrapped.
func one(data []byte) (*Server, error) {
	var wrapped struct {
		Server json.RawMessage `json:"server"`
		Name   string          `json:"name"`
	}
	if err := json.Unmarshal(data, &wrapped); err != nil {
		return nil, fmt.Errorf("not a server.json entry: %v", err)
	}
	if len(wrapped.Server) > 0 && wrapped.Name == "" {
		data = wrapped.Server
	}
	var s Server
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("not a server.json entry: %v", err)
	}
	if s.Name == "" {
		return nil, errors.New(`the entry has no "name"`)
	}
	if strings.Count(s.Name, "/") != 1 {
		return nil, fmt.Errorf("server name %q is not in reverse-DNS form with one slash, such as io.github.user/weather", s.Name)
	}
	return &s, nil
}
