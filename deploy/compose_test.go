package deploy

import (
	"maps"
	"net"
	"net/url"
	"slices"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

const (
	completed = types.ServiceConditionCompletedSuccessfully
	healthy   = types.ServiceConditionHealthy
)

// wantDependsOn is docs/design.md's graph as compose must start it: every service
// waits for the one-shot certs step and for the health of what it dials.
var wantDependsOn = map[string]map[string]string{
	"certs":        {},
	"nats":         {"certs": completed},
	"registry":     {"certs": completed, "nats": healthy},
	"mailbox":      {"certs": completed, "nats": healthy, "registry": healthy},
	"bridge":       {"certs": completed, "registry": healthy, "mailbox": healthy},
	"gateway":      {"certs": completed, "registry": healthy, "mailbox": healthy, "bridge": healthy},
	"example-host": {"certs": completed, "registry": healthy, "mailbox": healthy},
}

// peerFlags are the flags naming a peer to dial; each names the service.
var peerFlags = []string{"registry", "mailbox", "bridge"}

func TestComposeCommandsAreRealSwitchboardCommands(t *testing.T) {
	t.Parallel()
	if got, want := slices.Sorted(maps.Keys(loadCompose(t, nil).Services)), slices.Sorted(maps.Keys(wantDependsOn)); !slices.Equal(got, want) {
		t.Fatalf("services %v, want %v", got, want)
	}
	eachFile(t, checkCommands)
}

// eachFile runs check on every deployment file, in parallel.
func eachFile(t *testing.T, check func(t *testing.T, p *types.Project)) {
	for _, file := range composeFiles {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			check(t, loadComposeFile(t, file, nil))
		})
	}
}

// checkCommands runs each service's command, its environment passed as the
// flags it stands for, through the binary's own parser.
func checkCommands(t *testing.T, p *types.Project) {
	bin := testkit.Build(t, switchboardPkg)
	for name, s := range services(t, p) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// The environment stands for flags: pass it as those flags, so
			// the binary's own parser checks its values too.
			args := append(slices.Clone(s.sub), s.args...)
			for k, v := range s.env {
				flagName, ok := s.usage.env[k]
				if !ok && slices.Contains(sdkEnv, k) {
					continue
				}
				if !ok {
					t.Errorf("environment %s is no variable of switchboard %v (it reads %v)", k, s.sub, slices.Sorted(maps.Keys(s.usage.env)))
					continue
				}
				args = append(args, "--"+flagName+"="+v)
			}
			if _, err := help(bin, args...); err != nil {
				t.Error(err)
			}
		})
	}
}

// The -h trick must tell a bad command line from a good one, or the test
// above could not fail.
func TestTheHelpTrickRefusesBadCommandLines(t *testing.T) {
	t.Parallel()
	bin := testkit.Build(t, switchboardPkg)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"an unknown flag is refused", []string{"registry", "--no-such-flag=1"}},
		{"a value of the wrong type is refused", []string{"registry", "--max-tools=lots"}},
		{"a bool flag given a separate value is refused", []string{"registry", "--dev", "false"}},
		{"an unknown subcommand is refused", []string{"registar"}},
		{"an unknown health flag is refused", []string{"health", "--adress=127.0.0.1:7731"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := help(bin, tc.args...); err == nil {
				t.Fatalf("switchboard %v -h succeeded", tc.args)
			}
		})
	}
	if _, err := help(bin, "registry", "--listen=0.0.0.0:7731", "--max-tools=10"); err != nil {
		t.Fatalf("a good command line was refused: %v", err)
	}
}

func TestComposeHealthchecksRunTheHealthCommand(t *testing.T) {
	t.Parallel()
	eachFile(t, checkHealthchecks)
}

// checkHealthchecks: every service that listens checks its own port on
// loopback with the health command, by the name its leaf is minted for; a
// NATS node asks its own /healthz on loopback (streams current).
func checkHealthchecks(t *testing.T, p *types.Project) {
	bin := testkit.Build(t, switchboardPkg)
	entry := finalStage(t).entrypoint(t)
	for name, s := range services(t, p) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			port, err := s.listenPort()
			if err != nil {
				t.Fatal(err)
			}
			hc := s.cfg.HealthCheck
			if port == "" {
				if hc != nil && !hc.Disable {
					t.Fatalf("%s listens on nothing, yet has a healthcheck %q", name, hc.Test)
				}
				return
			}
			if hc == nil || hc.Disable || len(hc.Test) < 3 {
				t.Fatalf("%s listens on %s but has no healthcheck", name, s.flags["listen"])
			}
			// CMD, not CMD-SHELL: the image has no shell.
			if hc.Test[0] != "CMD" || hc.Test[1] != entry[0] || hc.Test[2] != "health" {
				t.Fatalf("healthcheck %q: want [CMD %s health ...]", hc.Test, entry[0])
			}
			hu, err := help(bin, hc.Test[2:]...)
			if err != nil {
				t.Fatal(err)
			}
			hv, err := hu.parse(hc.Test[3:], nil)
			if err != nil {
				t.Fatal(err)
			}
			host, hport := "", ""
			if raw := hv["http"]; s.sub[0] == "nats" && raw != "" {
				// A NATS node's /healthz: plain HTTP, on loopback only.
				if u, err := url.Parse(raw); err != nil || u.Scheme != "http" || u.Host != s.flags["health-addr"] {
					t.Fatalf("healthcheck --http=%s: want http://%s, the node's --health-addr", raw, s.flags["health-addr"])
				}
				return
			}
			if raw := hv["http"]; raw != "" {
				u, err := url.Parse(raw)
				if err != nil || u.Scheme != "https" {
					t.Fatalf("healthcheck --http=%s: want an https URL (the gateway serves TLS)", raw)
				}
				host, hport = u.Hostname(), u.Port()
			} else if raw := hv["nats"]; raw != "" {
				u, err := url.Parse(raw)
				if err != nil || u.Scheme != "tls" {
					t.Fatalf("healthcheck --nats=%s: want a tls:// URL (NATS serves mutual TLS)", raw)
				}
				host, hport = u.Hostname(), u.Port()
			} else if host, hport, err = net.SplitHostPort(hv["addr"]); err != nil {
				t.Fatal(err)
			}
			if ip := net.ParseIP(host); hport != port || (host != "localhost" && (ip == nil || !ip.IsLoopback())) {
				t.Errorf("healthcheck checks %s:%s; want the service's own port %s on loopback", host, hport, port)
			}
			if hv["tls-server-name"] != name {
				t.Errorf("healthcheck --tls-server-name=%q; want %q, the name the service's leaf is minted for", hv["tls-server-name"], name)
			}
			for _, f := range []string{"tls-ca", "tls-cert", "tls-key"} {
				if hv[f] != s.flags[f] {
					t.Errorf("healthcheck --%s=%q; the service itself uses %q", f, hv[f], s.flags[f])
				}
			}
		})
	}
}

func TestComposePortsAgreeWithListen(t *testing.T) {
	t.Parallel()
	p := loadCompose(t, nil)
	for name, s := range services(t, p) {
		port, err := s.listenPort()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if port == "" {
			if len(s.cfg.Ports) > 0 {
				t.Errorf("%s listens on nothing but publishes %v", name, s.cfg.Ports)
			}
			continue
		}
		// Peers reach it over the network: it must not listen on loopback.
		if host, _, _ := net.SplitHostPort(s.flags["listen"]); host != "0.0.0.0" && host != "" && host != "::" {
			t.Errorf("%s listens on %s; inside a container it must listen on 0.0.0.0", name, s.flags["listen"])
		}
		for _, pc := range s.cfg.Ports {
			if pc.Target == 0 || formatPort(pc.Target) != port {
				t.Errorf("%s publishes container port %d; it listens on %s", name, pc.Target, port)
			}
			switch {
			case s.sub[0] == "gateway":
				if pc.HostIP != "" || pc.Published != port {
					t.Errorf("the gateway publishes %s:%s; want port %s on every interface", pc.HostIP, pc.Published, port)
				}
			case pc.HostIP != "127.0.0.1":
				t.Errorf("%s publishes %s:%s: only the gateway may be published beyond 127.0.0.1", name, pc.HostIP, pc.Published)
			}
		}
		if s.sub[0] == "gateway" && len(s.cfg.Ports) != 1 {
			t.Errorf("the gateway publishes %d ports; want its one HTTPS port", len(s.cfg.Ports))
		}
	}
}

func TestComposeDependsOnFollowsTheDAG(t *testing.T) {
	t.Parallel()
	p := loadCompose(t, nil)
	svcs := services(t, p)
	for name, s := range svcs {
		got := map[string]string{}
		for dep, d := range s.cfg.DependsOn {
			got[dep] = d.Condition
			if !d.Required {
				t.Errorf("%s depends on %s optionally; the suite cannot start without it", name, dep)
			}
		}
		if !maps.Equal(got, wantDependsOn[name]) {
			t.Errorf("%s depends on %v; want %v", name, got, wantDependsOn[name])
		}
		// Every peer a command dials is a service of this file, at the
		// port it listens on, and is waited for.
		for _, f := range peerFlags {
			addr, ok := s.flags[f]
			if !ok {
				continue
			}
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				t.Fatalf("%s --%s=%s: %v", name, f, addr, err)
			}
			peer, ok := svcs[host]
			if !ok || peer.sub[0] != f {
				t.Errorf("%s --%s=%s names no %s service of this file", name, f, addr, f)
				continue
			}
			if pp, _ := peer.listenPort(); pp != port {
				t.Errorf("%s --%s=%s: %s listens on port %s", name, f, addr, host, pp)
			}
			if got[host] != healthy {
				t.Errorf("%s dials %s but does not wait for it to be healthy", name, host)
			}
		}
	}
}

func TestComposeCertsIsAOneShotStep(t *testing.T) {
	t.Parallel()
	s := services(t, loadCompose(t, nil))["certs"]
	if !slices.Equal(s.sub, []string{"certs", "suite"}) {
		t.Fatalf("certs runs %v; want `switchboard certs suite`", s.sub)
	}
	if s.cfg.Restart != "no" {
		t.Errorf("certs restarts %q; a one-shot step must not restart", s.cfg.Restart)
	}
	if len(s.cfg.Ports) > 0 || s.cfg.HealthCheck != nil {
		t.Errorf("certs publishes %v and checks health %v; it serves nothing", s.cfg.Ports, s.cfg.HealthCheck)
	}
	m, ok := s.mountAt(s.flags["dir"])
	if !ok || m.Type != types.VolumeTypeVolume || m.ReadOnly || m.Target != s.flags["dir"] {
		t.Errorf("certs writes to %s, which must be a writable named volume mounted there (mount: %+v)", s.flags["dir"], m)
	}
}

func TestComposeNetworks(t *testing.T) {
	t.Parallel()
	eachFile(t, checkNetworks)
}

func checkNetworks(t *testing.T, p *types.Project) {
	if len(p.Networks) != 1 {
		t.Fatalf("networks %v; want one private network", slices.Sorted(maps.Keys(p.Networks)))
	}
	for key, n := range p.Networks {
		if bool(n.External) || (n.Driver != "" && n.Driver != "bridge") {
			t.Errorf("network %s: external=%v driver=%q; want the project's own bridge network", key, n.External, n.Driver)
		}
	}
	for name, s := range p.Services {
		if name == "certs" {
			if s.NetworkMode != "none" {
				t.Errorf("certs has network mode %q; it needs no network", s.NetworkMode)
			}
			continue
		}
		if got := slices.Sorted(maps.Keys(s.Networks)); !slices.Equal(got, slices.Sorted(maps.Keys(p.Networks))) {
			t.Errorf("%s is on networks %v; want the suite's network", name, got)
		}
	}
}

func TestComposeInterpolation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		env              map[string]string
		wantImage, wantP string
	}{
		{"the defaults run the image make images builds on port 8080", nil, makeImagesTag(t), "8080"},
		{"the environment picks the image and the gateway's port", map[string]string{
			"SWITCHBOARD_IMAGE": "registry.example/switchboard:1.0", "SWITCHBOARD_HTTP_PORT": "9443"},
			"registry.example/switchboard:1.0", "9443"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := loadCompose(t, tc.env)
			for name, s := range p.Services {
				if s.Image != tc.wantImage {
					t.Errorf("%s runs image %q; want %q", name, s.Image, tc.wantImage)
				}
			}
			gw := p.Services["gateway"]
			if len(gw.Ports) != 1 || gw.Ports[0].Published != tc.wantP || gw.Ports[0].Target != 8080 {
				t.Errorf("gateway ports %+v; want %s→8080", gw.Ports, tc.wantP)
			}
		})
	}
}
