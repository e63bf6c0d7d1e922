package deploy

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

// switchboardPkg is the suite's one binary, the image's entrypoint.
const switchboardPkg = "github.com/switchboard-run/switchboard/cli/cmd/switchboard"

// The deployment files: the base one and the scaled-out one
// (docker-compose.scale.yml), each complete on its own.
const (
	baseFile  = "docker-compose.yml"
	scaleFile = "docker-compose.scale.yml"
)

// composeFiles are the files the checks that hold for any deployment run on.
var composeFiles = []string{baseFile, scaleFile}

// loadCompose loads docker-compose.yml the way `docker compose` does from
// the repository root, interpolating ${VAR:-default} from env alone (never
// from the environment of whoever runs the test), with the given profiles
// (`docker compose --profile P`) enabled.
func loadCompose(t testing.TB, env map[string]string, profiles ...string) *types.Project {
	t.Helper()
	return loadComposeFile(t, baseFile, env, profiles...)
}

// loadComposeFile is loadCompose of file (`docker compose -f file`).
func loadComposeFile(t testing.TB, file string, env map[string]string, profiles ...string) *types.Project {
	t.Helper()
	root := testkit.RepoRoot(t)
	var pairs []string
	for k, v := range env {
		pairs = append(pairs, k+"="+v)
	}
	opts, err := cli.NewProjectOptions([]string{filepath.Join(root, file)},
		cli.WithWorkingDirectory(root), cli.WithEnv(pairs), cli.WithInterpolation(true),
		cli.WithResolvedPaths(true), cli.WithProfiles(profiles))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("%s does not load: %v", file, err)
	}
	return p
}

// usage is what `switchboard <sub> -h` says a subcommand accepts.
type usage struct {
	flags map[string]string // flag name → default value
	env   map[string]string // SWITCHBOARD_* variable → flag name
}

// usageLine is how kit/suite/envflag prints a flag: `  --name (env SWITCHBOARD_NAME)`.
var (
	usageLine   = regexp.MustCompile(`^  --([a-z0-9][a-z0-9-]*) \(env (SWITCHBOARD_[A-Z0-9_]+)\)$`)
	defaultText = regexp.MustCompile(`\(default "(.*)"\)$`)
)

// help runs `bin args... -h`. Go's flag package parses (and checks) every
// flag before -h, so an unknown flag or a bad value exits non-zero; a good
// command line exits 0 and prints its usage, which is parsed.
func help(bin string, args ...string) (usage, error) {
	cmd := exec.Command(bin, append(slices.Clone(args), "-h")...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return usage{}, fmt.Errorf("switchboard %s -h: %v\n%s", strings.Join(args, " "), err, out)
	}
	u := usage{flags: map[string]string{}, env: map[string]string{}}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	last := ""
	for sc.Scan() {
		if m := usageLine.FindStringSubmatch(sc.Text()); m != nil {
			last = m[1]
			u.flags[last], u.env[m[2]] = "", last
			continue
		}
		if m := defaultText.FindStringSubmatch(sc.Text()); m != nil && last != "" {
			u.flags[last] = m[1]
		}
	}
	if len(u.flags) == 0 {
		return usage{}, fmt.Errorf("switchboard %s -h printed no flags:\n%s", strings.Join(args, " "), out)
	}
	return u, nil
}

// parse reads args with the flags usage lists (bool flags are those whose
// default is true or false) and returns every flag's value: the command
// line's, else env's, else the default — the order kit/suite/envflag applies.
func (u usage) parse(args []string, env map[string]string) (map[string]string, error) {
	fs := flag.NewFlagSet("compose", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	vals := map[string]*string{}
	for name, def := range u.flags {
		if def == "true" || def == "false" {
			fs.Bool(name, def == "true", "")
			continue
		}
		vals[name] = fs.String(name, def, "")
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for key, v := range env {
		if name, ok := u.env[key]; ok && !given[name] {
			if err := fs.Set(name, v); err != nil {
				return nil, fmt.Errorf("%s=%q: %w", key, v, err)
			}
		}
	}
	out := map[string]string{}
	fs.VisitAll(func(f *flag.Flag) { out[f.Name] = f.Value.String() })
	return out, nil
}

// service is one compose service read against the binary's own flags.
type service struct {
	name  string
	cfg   types.ServiceConfig
	sub   []string          // the subcommand words: [registry] or [certs suite]
	args  []string          // the flags after them
	env   map[string]string // the service's environment, resolved
	usage usage
	flags map[string]string // every flag's effective value
}

// sdkEnv are variables a service's environment may hold that no flag
// stands for: the OpenTelemetry SDK reads them itself (docs/design.md §9).
var sdkEnv = []string{"OTEL_EXPORTER_OTLP_ENDPOINT"}

// services reads every Switchboard service of p with its subcommand's
// usage. Services of other images (the observability profile's) run no
// switchboard command; they are recognised by building no image here.
func services(t testing.TB, p *types.Project) map[string]*service {
	t.Helper()
	bin := testkit.Build(t, switchboardPkg)
	out := map[string]*service{}
	for _, name := range slices.Sorted(maps.Keys(p.Services)) {
		s := &service{name: name, cfg: p.Services[name], env: map[string]string{}}
		if s.cfg.Build == nil {
			continue
		}
		cmd := s.cfg.Command
		i := slices.IndexFunc(cmd, func(w string) bool { return strings.HasPrefix(w, "-") })
		if i < 0 {
			i = len(cmd)
		}
		s.sub, s.args = cmd[:i], cmd[i:]
		if len(s.sub) == 0 {
			t.Fatalf("service %s: its command names no switchboard subcommand: %q", name, cmd)
		}
		for k, v := range s.cfg.Environment {
			if v == nil {
				t.Fatalf("service %s: environment %s has no value, so it would be taken from the host running compose", name, k)
			}
			s.env[k] = *v
		}
		u, err := help(bin, s.sub...)
		if err != nil {
			t.Fatalf("service %s: %v", name, err)
		}
		s.usage = u
		if s.flags, err = u.parse(s.args, s.env); err != nil {
			t.Fatalf("service %s: command %q: %v", name, cmd, err)
		}
		out[name] = s
	}
	return out
}

// listenPort is the port of the service's --listen address, "" when the
// service listens on nothing.
func (s *service) listenPort() (string, error) {
	addr, ok := s.flags["listen"]
	if !ok {
		return "", nil
	}
	_, port, err := net.SplitHostPort(addr)
	return port, err
}

// tlsFiles are the files of the service's --tls-* flags.
func (s *service) tlsFiles() []string {
	var files []string
	for _, f := range []string{"tls-ca", "tls-cert", "tls-key"} {
		if v := s.flags[f]; v != "" {
			files = append(files, v)
		}
	}
	return files
}

// mountAt is the mount whose target holds path, if any.
func (s *service) mountAt(path string) (types.ServiceVolumeConfig, bool) {
	for _, v := range s.cfg.Volumes {
		if path == v.Target || strings.HasPrefix(path, strings.TrimSuffix(v.Target, "/")+"/") {
			return v, true
		}
	}
	return types.ServiceVolumeConfig{}, false
}

// formatPort prints a container port as --listen spells it.
func formatPort(p uint32) string { return strconv.FormatUint(uint64(p), 10) }

// certFiles are the files of the service's --tls-*, --nats-tls-* and
// --metrics-tls-* flags:
// every piece of key material it reads.
func (s *service) certFiles() []string {
	var files []string
	for _, f := range []string{"tls-ca", "tls-cert", "tls-key", "nats-tls-ca", "nats-tls-cert", "nats-tls-key", "metrics-tls-cert", "metrics-tls-key"} {
		if v := s.flags[f]; v != "" {
			files = append(files, v)
		}
	}
	return files
}

// certsMount is the certs step's mount of the volume m, if it mounts it.
func (s *service) certsMount(m types.ServiceVolumeConfig) (types.ServiceVolumeConfig, bool) {
	for _, v := range s.cfg.Volumes {
		if v.Type == types.VolumeTypeVolume && v.Source == m.Source {
			return v, true
		}
	}
	return types.ServiceVolumeConfig{}, false
}

// certsLocal maps path, a file s reads in its container, to where the certs
// step, run into vol (mintInto), wrote it: s mounts a volume the certs step
// mounts at a directory under its --dir.
func certsLocal(t testing.TB, certs, s *service, path, vol string) string {
	t.Helper()
	m, ok := s.mountAt(path)
	if !ok {
		t.Fatalf("%s reads %s, which no mount provides", s.name, path)
	}
	cm, ok := certs.certsMount(m)
	if !ok {
		t.Fatalf("%s reads %s from volume %q, which the certs step does not write", s.name, path, m.Source)
	}
	dir, err := filepath.Rel(certs.flags["dir"], cm.Target)
	if err != nil || strings.HasPrefix(dir, "..") {
		t.Fatalf("the certs step mounts %s at %s, outside its --dir %s", m.Source, cm.Target, certs.flags["dir"])
	}
	rel, err := filepath.Rel(m.Target, path)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(vol, dir, rel)
}

// mintInto runs the certs step's command as compose runs it, with --dir
// vol. compose runs it as root, which may give directories away (--owner);
// a test run by someone else gives them to itself instead.
func mintInto(t testing.TB, bin string, certs *service, vol string) {
	t.Helper()
	args := append(slices.Clone(certs.cfg.Command), "--dir="+vol)
	if os.Geteuid() != 0 {
		args = append(args, fmt.Sprintf("--owner=%d:%d", os.Getuid(), os.Getgid()))
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("switchboard %v: %v\n%s", args, err, out)
	}
}
