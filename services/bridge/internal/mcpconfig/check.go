package mcpconfig

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/net/http/httpguts"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/childenv"
	"github.com/switchboard-run/switchboard/kit/lib/listen"
	"github.com/switchboard-run/switchboard/kit/lib/rawjson"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/services/bridge/internal/advertisement"
)

// Check refuses a server config the bridge cannot run as given, whether it
// came from a file or from a Mount call: no transport, an empty command, an
// unusable URL, environment or header, a plugin manifest that cannot run or
// be advertised, or a negative bound.
func Check(cfg *bridgev1.ServerConfig) error {
	if cfg == nil {
		return errors.New("no config: say how to reach the server")
	}
	switch t := cfg.Transport.(type) {
	case *bridgev1.ServerConfig_Stdio:
		if t.Stdio == nil || strings.TrimSpace(t.Stdio.Command) == "" {
			return errors.New("the command is empty: name the program that runs the server")
		}
		if err := childenv.Check(t.Stdio.Env); err != nil {
			return err
		}
	case *bridgev1.ServerConfig_Http:
		if t.Http == nil {
			return errors.New("the http transport is empty: give the server's url")
		}
		if err := CheckURL(t.Http.Url); err != nil {
			return err
		}
		for k, v := range t.Http.Headers {
			if !httpguts.ValidHeaderFieldName(k) {
				return fmt.Errorf("header name %q is not a valid HTTP header name", k)
			}
			if !httpguts.ValidHeaderFieldValue(v) {
				return fmt.Errorf("header %q has a value that is not a valid HTTP header value", k)
			}
			if l := strings.ToLower(k); strings.HasPrefix(l, "mcp-") || l == "last-event-id" {
				return fmt.Errorf("header %q belongs to the MCP transport, which sets it itself", k)
			}
		}
		if err := checkCleartext(t.Http); err != nil {
			return err
		}
	case *bridgev1.ServerConfig_Plugin:
		if err := checkManifest(t.Plugin); err != nil {
			return err
		}
		if cfg.MaxInFlight > 1 {
			return fmt.Errorf("max_in_flight is %d, but a plugin backend takes one call at a time: give 0 or 1", cfg.MaxInFlight)
		}
	case *bridgev1.ServerConfig_Openapi:
		if err := checkOpenAPI(t.Openapi); err != nil {
			return err
		}
	default:
		return errors.New("no transport: give a command (stdio), a url (Streamable HTTP), a plugin manifest or an OpenAPI document")
	}
	if err := checkProtocolVersion(cfg); err != nil {
		return err
	}
	for _, n := range []struct {
		name string
		v    int32
	}{{"max_in_flight", cfg.MaxInFlight}, {"max_tools", cfg.MaxTools}, {"crash_limit", cfg.CrashLimit}, {"max_result_chars", cfg.MaxResultChars}} {
		if n.v < 0 {
			return fmt.Errorf("%s is %d; want 0 (the default) or more", n.name, n.v)
		}
	}
	return checkDurations(cfg)
}

// checkManifest refuses a plugin manifest the bridge cannot run or
// advertise as given: no command, an unusable environment, no tools, a
// tool the registry would refuse, or a negative line bound.
func checkManifest(m *bridgev1.PluginManifest) error {
	if m == nil {
		return errors.New("the plugin manifest is empty: give the backend's command and tools")
	}
	if len(m.Command) == 0 || strings.TrimSpace(m.Command[0]) == "" {
		return errors.New("the manifest's command is empty: name the program that runs the backend")
	}
	for i, a := range m.Command {
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("command[%d] holds a NUL byte", i)
		}
	}
	if strings.ContainsRune(m.Cwd, 0) {
		return errors.New("the manifest's cwd holds a NUL byte")
	}
	if err := childenv.Check(m.Env); err != nil {
		return err
	}
	if m.MaxLineBytes < 0 {
		return fmt.Errorf("max_line_bytes is %d; want 0 (1 MiB) or more", m.MaxLineBytes)
	}
	if err := checkDuration("the manifest's call_timeout", m.GetCallTimeout(), MaxCallTimeout); err != nil {
		return err
	}
	if len(m.Tools) == 0 {
		return errors.New("the manifest lists no tools: a backend is mounted for the tools it serves")
	}
	seen := map[string]bool{}
	for _, t := range m.Tools {
		if err := checkTool(t); err != nil {
			return err
		}
		if seen[t.GetName()] {
			return fmt.Errorf("tool %q is listed twice in the manifest", t.GetName())
		}
		seen[t.GetName()] = true
	}
	return nil
}

// checkOpenAPI refuses an API mount that names no document or two; the
// document itself is checked when it is loaded (internal/openapi).
func checkOpenAPI(t *bridgev1.OpenApiTransport) error {
	switch {
	case t == nil || (t.Spec == "" && t.SpecUrl == ""):
		return errors.New("the OpenAPI mount names no document: give its text (spec) or a URL to read it from (spec_url)")
	case t.Spec != "" && t.SpecUrl != "":
		return errors.New("the OpenAPI mount gives both spec and spec_url: give one document")
	case t.SpecUrl != "":
		if err := CheckURL(t.SpecUrl); err != nil {
			return fmt.Errorf("spec_url: %w", err)
		}
	}
	if t.BaseUrl != "" {
		if err := CheckURL(t.BaseUrl); err != nil {
			return fmt.Errorf("base_url: %w", err)
		}
	}
	return nil
}

// checkTool refuses a manifest's tool the registry would refuse.
func checkTool(t *registryv1.Tool) error {
	if err := advertisement.CheckName(t.GetName()); err != nil {
		return fmt.Errorf("tool %q: %v", t.GetName(), err)
	}
	if t.GetSubjectCwd() {
		return fmt.Errorf("tool %q: subject_cwd is not supported: a plugin backend is not told a working directory", t.GetName())
	}
	if err := advertisement.CheckSchema("input schema", t.GetInputSchema()); err != nil {
		return fmt.Errorf("tool %q: its %v", t.GetName(), err)
	}
	if t.OutputSchema != nil {
		if err := advertisement.CheckSchema("output schema", t.GetOutputSchema()); err != nil {
			return fmt.Errorf("tool %q: its %v", t.GetName(), err)
		}
	}
	if t.Annotations != nil {
		if err := rawjson.CheckObject("annotations", t.GetAnnotations()); err != nil {
			return fmt.Errorf("tool %q: its %v", t.GetName(), err)
		}
	}
	return nil
}

// checkCleartext refuses credentials — the configured headers, or a user
// and password in the url — that plain http would carry across the
// network in the clear; to a loopback host they never leave the machine
// (docs/security.md).
func checkCleartext(h *bridgev1.HttpTransport) error {
	u, err := url.Parse(h.Url)
	if err != nil || u.Scheme != "http" || listen.IsLoopbackHost(u.Hostname()) {
		return nil
	}
	var what string
	switch {
	case len(h.Headers) > 0:
		what = "headers " + strings.Join(slices.Sorted(maps.Keys(h.Headers)), ", ")
	case u.User != nil:
		what = "a user and password in the url"
	default:
		return nil
	}
	return fmt.Errorf("url %q is plain http, so the server's credentials (%s) would cross the network in the clear: use https://, or a loopback host",
		u.Redacted(), what)
}

// CheckURL refuses an MCP endpoint that is not an absolute http(s) URL.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("url %q is not an http:// or https:// URL with a host", raw)
	}
	return nil
}

// checkProtocolVersion refuses a pinned MCP revision the SDK does not
// speak, and one for a server that is not an MCP server.
func checkProtocolVersion(cfg *bridgev1.ServerConfig) error {
	v := cfg.GetProtocolVersion()
	switch {
	case v == "":
		return nil
	case cfg.GetPlugin() != nil || cfg.GetOpenapi() != nil:
		return fmt.Errorf("protocol_version %q is for MCP servers; a plugin backend or an HTTP API speaks no MCP revision", v)
	case !slices.Contains(mcp.SupportedProtocolVersions(), v):
		return fmt.Errorf("protocol_version %q is not an MCP revision the bridge speaks (%s)", capture.Cap(v, 40), strings.Join(mcp.SupportedProtocolVersions(), ", "))
	}
	return nil
}
