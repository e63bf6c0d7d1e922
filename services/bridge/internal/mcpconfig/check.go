package mcpconfig

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"golang.org/x/net/http/httpguts"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
)

// Check refuses a server config the bridge cannot run as given, whether it
// came from a file or from a Mount call: no transport, an empty command, an
// unusable URL, environment or header, or a negative bound.
func Check(cfg *bridgev1.ServerConfig) error {
	if cfg == nil {
		return errors.New("no config: say how to reach the server")
	}
	switch t := cfg.Transport.(type) {
	case *bridgev1.ServerConfig_Stdio:
		if t.Stdio == nil || strings.TrimSpace(t.Stdio.Command) == "" {
			return errors.New("the command is empty: name the program that runs the server")
		}
		for k := range t.Stdio.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				return fmt.Errorf("environment variable name %q is not usable: it is empty or holds '=' or NUL", k)
			}
		}
		for k, v := range t.Stdio.Env {
			if strings.ContainsRune(v, 0) {
				return fmt.Errorf("environment variable %q holds a NUL byte", k)
			}
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
	case *bridgev1.ServerConfig_Plugin:
		return errors.New("plugin backends are not served by this bridge yet: mount an MCP server (stdio or http)")
	default:
		return errors.New("no transport: give a command (stdio) or a url (Streamable HTTP)")
	}
	for _, n := range []struct {
		name string
		v    int32
	}{{"max_in_flight", cfg.MaxInFlight}, {"max_tools", cfg.MaxTools}, {"crash_limit", cfg.CrashLimit}, {"max_result_chars", cfg.MaxResultChars}} {
		if n.v < 0 {
			return fmt.Errorf("%s is %d; want 0 (the default) or more", n.name, n.v)
		}
	}
	return nil
}

// CheckURL refuses an MCP endpoint that is not an absolute http(s) URL.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("url %q is not an http:// or https:// URL with a host", raw)
	}
	return nil
}
