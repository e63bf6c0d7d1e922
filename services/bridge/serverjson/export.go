package serverjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
)

// Export describes a mount as an entry, named local.switchboard/<client>:
// a Streamable HTTP server as a remote, a stdio server run by npx, uvx or
// docker as its package. Headers and environment variables are exported by
// name, required and secret, never with their values. st (may be nil)
// gives the server's own name and version. A mount no entry can describe
// is refused with a sentence.
func Export(client string, cfg *bridgev1.ServerConfig, st *bridgev1.ServerStatus) (*Server, error) {
	s := &Server{Schema: Schema, Name: "local.switchboard/" + client, Version: or(st.GetServerVersion(), "0.0.0"),
		Description: describe(client, st)}
	switch t := cfg.GetTransport().(type) {
	case *bridgev1.ServerConfig_Http:
		s.Remotes = []Transport{{Type: "streamable-http", URL: t.Http.GetUrl(), Headers: names(t.Http.GetHeaders())}}
	case *bridgev1.ServerConfig_Stdio:
		p, err := packageOf(t.Stdio)
		if err != nil {
			return nil, err
		}
		p.EnvironmentVariables = names(t.Stdio.GetEnv())
		s.Packages = []Package{*p}
	case *bridgev1.ServerConfig_Plugin:
		return nil, errors.New("a plugin backend is no MCP server, so server.json cannot describe it")
	case *bridgev1.ServerConfig_Openapi:
		return nil, errors.New("an HTTP API mounted from its OpenAPI document is no MCP server, so server.json cannot describe it")
	default:
		return nil, errors.New("the mount names no transport")
	}
	return s, nil
}

// Encode is s as the JSON text of a server.json file.
func Encode(s *Server) (string, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return "", err
	}
	return string(b) + "\n", nil
}

func describe(client string, st *bridgev1.ServerStatus) string {
	d := fmt.Sprintf("The MCP server mounted on Switchboard as %s", client)
	if n := st.GetServerName(); n != "" {
		d = fmt.Sprintf("%s, mounted on Switchboard as %s", n, client)
	}
	for utf8.RuneCountInString(d) > 100 {
		_, size := utf8.DecodeLastRuneInString(d)
		d = d[:len(d)-size]
	}
	return d
}

// names lists a map's keys as required secret inputs without values.
func names(m map[string]string) []KeyValue {
	out := make([]KeyValue, 0, len(m))
	for k := range m {
		out = append(out, KeyValue{Name: k, Input: Input{IsRequired: true, IsSecret: true, Description: "set on the Switchboard mount; its value is not exported"}})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if len(out) == 0 {
		return nil
	}
	return out
}

// packageOf reads the package a runtime's command line runs: npx's
// name@version, uvx's name==version, docker run's image.
func packageOf(s *bridgev1.StdioTransport) (*Package, error) {
	runtime, args := filepath.Base(s.GetCommand()), s.GetArgs()
	p := &Package{RuntimeHint: runtime, Transport: Transport{Type: "stdio"}}
	rest := args
	switch runtime {
	case "npx", "uvx":
		i := firstOperand(args)
		if i < 0 {
			return nil, fmt.Errorf("%s's command line names no package", runtime)
		}
		p.RuntimeArguments = verbatim(args[:i], "-y", "--yes")
		p.RegistryType, p.Identifier, p.Version = "npm", args[i], ""
		if runtime == "uvx" {
			p.RegistryType = "pypi"
			p.Identifier, p.Version, _ = strings.Cut(args[i], "==")
		} else if at := strings.LastIndex(args[i], "@"); at > 0 {
			p.Identifier, p.Version = args[i][:at], args[i][at+1:]
		}
		rest = args[i+1:]
	case "docker":
		if len(args) == 0 || args[0] != "run" {
			return nil, errors.New("a docker command that is not `docker run` names no image")
		}
		i := 1 + firstOperand(args[1:])
		if i < 1 {
			return nil, errors.New("the docker run command names no image")
		}
		p.RegistryType, p.Identifier = "oci", args[i]
		p.RuntimeArguments = verbatim(dropEnv(args[1:i]), "--rm", "-i")
		rest = args[i+1:]
	default:
		return nil, fmt.Errorf("command %q is not a package runtime the MCP Registry knows (npx, uvx, docker), so server.json cannot describe it", s.GetCommand())
	}
	if p.Version == "" && p.RegistryType != "oci" {
		return nil, fmt.Errorf("package %q names no version, and a server.json package must", p.Identifier)
	}
	p.PackageArguments = verbatim(rest)
	return p, nil
}

// verbatim is args as positional arguments with their values, less those
// an import writes itself (skip).
func verbatim(args []string, skip ...string) []Argument {
	var out []Argument
	for _, a := range args {
		if !hasAny(skip, a) {
			out = append(out, Argument{Type: "positional", Input: Input{Value: a}})
		}
	}
	return out
}

// dropEnv leaves out docker's -e NAME pairs: the environment variables are
// exported as such, and an import passes each on again.
func dropEnv(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == "-e" || args[i] == "--env" {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// firstOperand is the index of the first argument that is no flag; -1 if
// none. A flag that takes a value (docker's -e NAME) keeps it.
func firstOperand(args []string) int {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-e" || a == "--env" || a == "-v" || a == "--volume" || a == "--network" || a == "--name":
			i++
		case !strings.HasPrefix(a, "-"):
			return i
		}
	}
	return -1
}
