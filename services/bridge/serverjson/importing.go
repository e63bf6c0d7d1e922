package serverjson

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
)

// Options shape an import.
type Options struct {
	// Client names the mount; empty: made from the entry's name.
	Client string
	// Values are what the user set, by the name of an environment
	// variable, header, argument (its valueHint or flag name) or variable.
	Values map[string]string
	// Prefer picks the way to run it: "remote", or a registry type ("npm",
	// "pypi", "oci"); empty: the first remote, else the first package that
	// can run here.
	Prefer string
}

// Mount is an entry made into a bridge mount.
type Mount struct {
	Client string
	Config *bridgev1.ServerConfig
	// Summary says how it runs, in one line, each secret value as "***".
	Summary string
	// Used names the values of Options.Values it took.
	Used []string
}

// Import makes s a mount: its first remote that speaks Streamable HTTP,
// else its first package the bridge can run as a stdio command (or the
// way opts.Prefer names). It refuses, with every reason, when there is
// none, and names a required value that is not set.
func Import(s *Server, opts Options) (*Mount, error) {
	client := opts.Client
	if client == "" {
		client = ClientName(s.Name)
	}
	var reasons []string
	try := func(what string, f func(r *resolver) (*bridgev1.ServerConfig, string, error)) (*Mount, error) {
		r := &resolver{server: s.Name, values: opts.Values, used: map[string]bool{}}
		cfg, summary, err := f(r)
		if err != nil {
			var missing *missingError
			if errors.As(err, &missing) {
				return nil, err // the way is right: a value is missing
			}
			reasons = append(reasons, what+": "+err.Error())
			return nil, nil
		}
		used := make([]string, 0, len(r.used))
		for n := range r.used {
			used = append(used, n)
		}
		sort.Strings(used)
		return &Mount{Client: client, Config: cfg, Summary: summary, Used: used}, nil
	}
	if opts.Prefer == "" || opts.Prefer == "remote" {
		for i, t := range s.Remotes {
			if m, err := try(fmt.Sprintf("remote %d (%s)", i+1, t.Type), func(r *resolver) (*bridgev1.ServerConfig, string, error) { return r.remote(t) }); m != nil || err != nil {
				return m, err
			}
		}
	}
	for i, p := range s.Packages {
		if opts.Prefer != "" && opts.Prefer != p.RegistryType {
			continue
		}
		if m, err := try(fmt.Sprintf("package %d (%s %s)", i+1, p.RegistryType, p.Identifier), func(r *resolver) (*bridgev1.ServerConfig, string, error) { return r.pkg(p) }); m != nil || err != nil {
			return m, err
		}
	}
	if len(reasons) == 0 {
		if opts.Prefer != "" {
			return nil, fmt.Errorf("server %q has no %s way to run", s.Name, opts.Prefer)
		}
		return nil, fmt.Errorf("server %q lists no remote and no package: there is nothing to run", s.Name)
	}
	return nil, fmt.Errorf("server %q cannot run here: %s", s.Name, strings.Join(reasons, "; "))
}

// ClientName makes a client name of an entry's name: the part after its
// slash, lower case, each other character "-", at most 32 characters.
func ClientName(name string) string {
	_, last, _ := strings.Cut(name, "/")
	var b strings.Builder
	for _, r := range strings.ToLower(last) {
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') {
			b.WriteRune(r)
		} else if b.Len() > 0 && !strings.HasSuffix(b.String(), "-") {
			b.WriteByte('-')
		}
	}
	out := strings.TrimRight(b.String(), "-")
	if len(out) > 32 {
		out = strings.TrimRight(out[:32], "-")
	}
	return out
}

// remote mounts a remote server: Streamable HTTP only.
func (r *resolver) remote(t Transport) (*bridgev1.ServerConfig, string, error) {
	if t.Type != "streamable-http" {
		return nil, "", fmt.Errorf("transport %q is not supported; the bridge speaks Streamable HTTP", t.Type)
	}
	url, urlShown, err := r.template(t.URL, t.Variables)
	if err != nil {
		return nil, "", err
	}
	headers, shown, err := r.keyValues("header", ": ", t.Headers)
	if err != nil {
		return nil, "", err
	}
	summary := "remote " + urlShown
	if len(shown) > 0 {
		summary += " (" + strings.Join(shown, ", ") + ")"
	}
	return &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Http{Http: &bridgev1.HttpTransport{Url: url, Headers: headers}}}, summary, nil
}

// pkg mounts a package as the stdio command its runtime runs.
func (r *resolver) pkg(p Package) (*bridgev1.ServerConfig, string, error) {
	if p.Transport.Type != "stdio" {
		return nil, "", fmt.Errorf("it serves %s on a port of its own once started; start it yourself and mount its URL", p.Transport.Type)
	}
	env, envShown, err := r.keyValues("environment variable", "=", p.EnvironmentVariables)
	if err != nil {
		return nil, "", err
	}
	runtimeArgs, rShown, err := r.args(p.RuntimeArguments)
	if err != nil {
		return nil, "", err
	}
	pkgArgs, pShown, err := r.args(p.PackageArguments)
	if err != nil {
		return nil, "", err
	}
	command, head, err := runtime(p, runtimeArgs, env)
	if err != nil {
		return nil, "", err
	}
	args := append(head, pkgArgs...)
	shown := append(append([]string{command}, headShown(head, runtimeArgs, rShown)...), pShown...)
	summary := strings.Join(shown, " ")
	if len(envShown) > 0 {
		sort.Strings(envShown)
		summary = strings.Join(envShown, " ") + " " + summary
	}
	return &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{Command: command, Args: args, Env: env}}}, summary, nil
}

// runtime is a package's command and the arguments before its own: the
// runtime's, the package, and (for a container) the variables it passes.
func runtime(p Package, runtimeArgs []string, env map[string]string) (string, []string, error) {
	if p.Identifier == "" {
		return "", nil, errors.New("the package has no identifier")
	}
	switch p.RegistryType {
	case "npm":
		command := or(p.RuntimeHint, "npx")
		spec := p.Identifier
		if p.Version != "" {
			spec += "@" + p.Version
		}
		head := runtimeArgs
		if command == "npx" && !hasAny(runtimeArgs, "-y", "--yes") {
			head = append([]string{"-y"}, head...) // never stop to ask
		}
		return command, append(head, spec), nil
	case "pypi":
		spec := p.Identifier
		if p.Version != "" {
			spec += "==" + p.Version
		}
		return or(p.RuntimeHint, "uvx"), append(runtimeArgs, spec), nil
	case "oci":
		image := p.Identifier
		if last := image[strings.LastIndex(image, "/")+1:]; p.Version != "" && !strings.ContainsAny(last, ":@") {
			image += ":" + p.Version
		}
		head := append([]string{"run", "--rm", "-i"}, runtimeArgs...)
		names := make([]string, 0, len(env))
		for n := range env {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			head = append(head, "-e", n) // the value stays in the environment, off the command line
		}
		return or(p.RuntimeHint, "docker"), append(head, image), nil
	case "mcpb":
		return "", nil, errors.New("an MCPB bundle must be downloaded and unpacked, which the bridge does not do")
	case "":
		return "", nil, errors.New("the package names no registryType")
	}
	return "", nil, fmt.Errorf("registry type %q is not one the bridge runs (npm, pypi, oci)", p.RegistryType)
}

// headShown is the head of a command as shown: the runtime arguments as
// shown (secrets masked), the rest as they are.
func headShown(head, runtimeArgs, shown []string) []string {
	out := make([]string, 0, len(head))
	i := 0
	for _, a := range head {
		if i < len(runtimeArgs) && a == runtimeArgs[i] {
			out = append(out, shown[i])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}

func hasAny(list []string, want ...string) bool {
	for _, a := range list {
		for _, w := range want {
			if a == w {
				return true
			}
		}
	}
	return false
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
