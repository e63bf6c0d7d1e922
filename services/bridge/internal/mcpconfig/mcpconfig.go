// Package mcpconfig reads the ecosystem's `mcpServers` JSON file (the shape
// desktop agents use) into the bridge's per-server configs. Its shape:
//
//	{"mcpServers": {"<client>": {"command", "args", "env", "cwd"} | {"url", "headers"} | {"manifest"}}}
//
// with an optional "type" ("stdio", "http", "streamable-http" or "plugin") and the
// bridge's own options in the ecosystem's camelCase: "trust", "allowTools",
// "denyTools", "maxInFlight", "maxTools", "crashLimit", "maxResultChars",
// "exclusive".
//
// Decoding is strict: an unknown or duplicate key, a mistyped value or a
// missing transport is refused with a sentence naming the server and the
// field, because a server silently mounted differently from what its file
// says is worse than one not mounted at all.
//
// A "manifest" entry is a JSON-lines plugin backend (docs/design.md §7): the path of
// its manifest file (see ParseManifest), relative to the config file's
// directory; the manifest is read when the config is.
package mcpconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"google.golang.org/protobuf/types/known/durationpb"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/suite/names"
)

// MaxFileBytes bounds a config file; a larger one is refused unread.
const MaxFileBytes = 1 << 20

// Load reads and parses the file at path.
func Load(path string) (map[string]*bridgev1.ServerConfig, error) {
	data, err := readFile("mcp config", path)
	if err != nil {
		return nil, err
	}
	servers, err := Parse(data, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("mcp config %s: %w", path, err)
	}
	return servers, nil
}

// readFile reads a config file of at most MaxFileBytes; what names it in
// the sentences.
func readFile(what, path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%s %s is larger than %d bytes", what, path, MaxFileBytes)
	}
	return data, nil
}

// Parse reads an mcpServers document. The result maps each client name to
// its config; a plugin entry's relative manifest path starts at dir.
func Parse(data []byte, dir string) (map[string]*bridgev1.ServerConfig, error) {
	top, err := object(data, "the file")
	if err != nil {
		return nil, err
	}
	for _, f := range top {
		if f.key != "mcpServers" {
			return nil, fmt.Errorf("unknown top-level field %q: the file holds only \"mcpServers\"", f.key)
		}
	}
	if len(top) == 0 {
		return nil, errors.New(`missing field "mcpServers"`)
	}
	entries, err := object(top[0].value, `"mcpServers"`)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*bridgev1.ServerConfig, len(entries))
	for _, e := range entries {
		if err := names.CheckClient(e.key); err != nil {
			return nil, fmt.Errorf("server %q: %w", e.key, err)
		}
		cfg, err := server(e.value, dir)
		if err != nil {
			return nil, fmt.Errorf("server %q: %w", e.key, err)
		}
		out[e.key] = cfg
	}
	return out, nil
}

// entry is one server as written in the file.
type entry struct {
	Type            string            `json:"type"`
	Command         string            `json:"command"`
	Args            []string          `json:"args"`
	Env             map[string]string `json:"env"`
	Cwd             string            `json:"cwd"`
	URL             string            `json:"url"`
	Headers         map[string]string `json:"headers"`
	Manifest        string            `json:"manifest"`
	Trust           bool              `json:"trust"`
	Exclusive       bool              `json:"exclusive"`
	AllowTools      []string          `json:"allowTools"`
	DenyTools       []string          `json:"denyTools"`
	MaxInFlight     json.Number       `json:"maxInFlight"`
	MaxTools        json.Number       `json:"maxTools"`
	CrashLimit      json.Number       `json:"crashLimit"`
	MaxResultChars  json.Number       `json:"maxResultChars"`
	CallTimeout     string            `json:"callTimeout"`
	PingInterval    string            `json:"pingInterval"`
	PingTimeout     string            `json:"pingTimeout"`
	ProtocolVersion string            `json:"protocolVersion"`
}

// fieldKinds names every accepted field with what its value must be, for
// the sentences refusing a mistyped one.
var fieldKinds = map[string]string{
	"type": "a string", "command": "a string", "args": "an array of strings",
	"env": "an object of strings", "cwd": "a string", "url": "a string",
	"headers": "an object of strings", "manifest": "a string", "trust": "true or false",
	"exclusive":  "true or false",
	"allowTools": "an array of strings", "denyTools": "an array of strings",
	"maxInFlight": "a whole number", "maxTools": "a whole number",
	"crashLimit": "a whole number", "maxResultChars": "a whole number",
	"callTimeout": durationKind, "pingInterval": durationKind, "pingTimeout": durationKind,
	"protocolVersion": `an MCP revision such as "2025-11-25"`,
}

var (
	stdioOnly = []string{"command", "args", "env", "cwd"}
	httpOnly  = []string{"url", "headers"}
)

func server(raw json.RawMessage, dir string) (*bridgev1.ServerConfig, error) {
	fields, err := object(raw, "the server's value")
	if err != nil {
		return nil, err
	}
	present := map[string]bool{}
	for _, f := range fields {
		kind, ok := fieldKinds[f.key]
		if !ok {
			return nil, fmt.Errorf("unknown field %q", f.key)
		}
		if bytes.Equal(f.value, []byte("null")) {
			return nil, fmt.Errorf("field %q is null; want %s, or leave it out", f.key, kind)
		}
		// json.Number would also take a quoted number; the file must not.
		if kind == "a whole number" && !isNumberLiteral(f.value) {
			return nil, fmt.Errorf("field %q must be %s", f.key, kind)
		}
		present[f.key] = true
	}
	var e entry
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&e); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			top, _, _ := strings.Cut(te.Field, ".")
			return nil, fmt.Errorf("field %q must be %s", top, fieldKinds[top])
		}
		return nil, fmt.Errorf("not a valid server object: %v", err)
	}
	for _, n := range []struct {
		key string
		val json.Number
	}{{"maxInFlight", e.MaxInFlight}, {"maxTools", e.MaxTools}, {"crashLimit", e.CrashLimit}, {"maxResultChars", e.MaxResultChars}} {
		if !present[n.key] {
			continue
		}
		if _, err := wholeNumber(n.val); err != nil {
			return nil, fmt.Errorf("field %q %w", n.key, err)
		}
	}
	cfg := &bridgev1.ServerConfig{Trust: e.Trust, Exclusive: e.Exclusive, AllowTools: e.AllowTools, DenyTools: e.DenyTools,
		ProtocolVersion: e.ProtocolVersion}
	cfg.MaxInFlight, _ = wholeNumber(e.MaxInFlight)
	cfg.MaxTools, _ = wholeNumber(e.MaxTools)
	cfg.CrashLimit, _ = wholeNumber(e.CrashLimit)
	cfg.MaxResultChars, _ = wholeNumber(e.MaxResultChars)
	for _, d := range []struct {
		key string
		val string
		to  **durationpb.Duration
	}{{"callTimeout", e.CallTimeout, &cfg.CallTimeout}, {"pingInterval", e.PingInterval, &cfg.PingInterval}, {"pingTimeout", e.PingTimeout, &cfg.PingTimeout}} {
		if present[d.key] {
			if *d.to, err = fileDuration(d.key, d.val); err != nil {
				return nil, err
			}
		}
	}
	if err := transport(&e, present, dir, cfg); err != nil {
		return nil, err
	}
	if err := Check(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// transport picks stdio, Streamable HTTP or a plugin backend, refusing
// fields of the others.
func transport(e *entry, present map[string]bool, dir string, cfg *bridgev1.ServerConfig) error {
	if err := typeMatches(e.Type, present); err != nil {
		return err
	}
	isStdio, isHTTP, isPlugin := present["command"], present["url"], present["manifest"]
	switch {
	case isPlugin && isStdio:
		return errors.New(`both "manifest" and "command" are set: a plugin backend's command is in its manifest`)
	case isPlugin && isHTTP:
		return errors.New(`both "manifest" and "url" are set: a server is either a plugin backend or a URL to reach`)
	case isStdio && isHTTP:
		return errors.New(`both "command" and "url" are set: a server is either a command to run or a URL to reach`)
	case !isStdio && !isHTTP && !isPlugin:
		return errors.New(`neither "command" nor "url" is set: say how to reach the server`)
	case isPlugin:
		return pluginEntry(e, present, dir, cfg)
	case isStdio:
		if k := firstPresent(present, httpOnly); k != "" {
			return fmt.Errorf(`field %q applies to "url" servers, not "command" servers`, k)
		}
		cfg.Transport = &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{
			Command: e.Command, Args: e.Args, Env: e.Env, Cwd: e.Cwd}}
	default:
		if k := firstPresent(present, stdioOnly); k != "" {
			return fmt.Errorf(`field %q applies to "command" servers, not "url" servers`, k)
		}
		cfg.Transport = &bridgev1.ServerConfig_Http{Http: &bridgev1.HttpTransport{Url: e.URL, Headers: e.Headers}}
	}
	return nil
}

// typeMatches checks an explicit "type" against the fields that say how to
// reach the server.
func typeMatches(typ string, present map[string]bool) error {
	switch typ {
	case "":
	case "stdio":
		if !present["command"] {
			return errors.New(`type "stdio" needs a "command"`)
		}
	case "http", "streamable-http":
		if !present["url"] {
			return fmt.Errorf(`type %q needs a "url"`, typ)
		}
	case "plugin":
		if !present["manifest"] {
			return errors.New(`type "plugin" needs a "manifest"`)
		}
	case "sse":
		return errors.New(`type "sse" is not supported: the bridge speaks stdio and Streamable HTTP ("http")`)
	default:
		return fmt.Errorf(`unknown type %q: want "stdio", "http", "streamable-http" or "plugin"`, typ)
	}
	return nil
}

func firstPresent(present map[string]bool, keys []string) string {
	for _, k := range keys {
		if present[k] {
			return k
		}
	}
	return ""
}
