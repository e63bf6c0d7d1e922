package deploy

import (
	"crypto/x509"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

// wantReplicas is how many of each kind (subcommand) the scale file runs.
var wantReplicas = map[string]int{"certs": 1, "nats": 3, "registry": 2, "mailbox": 2, "bridge": 2, "gateway": 2, "host": 1}

// kind is the service's subcommand: replicas share it.
func (s *service) kind() string { return s.sub[0] }

// replicasOf are the services of kind, by name.
func replicasOf(svcs map[string]*service, kind string) []string {
	var out []string
	for name, s := range svcs {
		if s.kind() == kind {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// aliases are the names s answers to on the suite's network besides its own.
func (s *service) aliases() []string {
	var out []string
	for _, n := range s.cfg.Networks {
		if n != nil {
			out = append(out, n.Aliases...)
		}
	}
	return out
}

// kindOf maps a base file's service name to its kind there.
func kindOf(base map[string]*service, name string) string { return base[name].kind() }

func TestScaleRunsReplicasOfEachService(t *testing.T) {
	t.Parallel()
	svcs := services(t, loadComposeFile(t, scaleFile, nil))
	for kind, n := range wantReplicas {
		if got := replicasOf(svcs, kind); len(got) != n {
			t.Errorf("%s runs %d of switchboard %s (%v); want %d", scaleFile, len(got), kind, got, n)
		}
	}
	for name, s := range svcs {
		if _, ok := wantReplicas[s.kind()]; !ok {
			t.Errorf("%s runs switchboard %s, which the scale deployment does not expect", name, s.kind())
		}
	}
}

// Replicas are the base file's services, only more of them: each runs the
// base service's command with only the NATS flags changed, and its depends_on
// is the base one with each service expanded to all its replicas.
func TestScaleReplicasFollowTheBaseFile(t *testing.T) {
	t.Parallel()
	base := services(t, loadCompose(t, nil))
	svcs := services(t, loadComposeFile(t, scaleFile, nil))
	// What scaling out changes: the NATS flags (a node advertises its route
	// by name), and the certs step's --replicas; and it has no observability
	// profile, so no Prometheus to give a directory to.
	scaleFlags := []string{"nats", "nats-replicas", "name", "cluster", "cluster-listen", "cluster-advertise", "routes", "replicas", "prometheus-owner"}
	for name, s := range svcs {
		b := base[replicasOf(base, s.kind())[0]]
		for f, v := range b.flags {
			if !slices.Contains(scaleFlags, f) && s.flags[f] != v {
				t.Errorf("%s --%s=%q; the base file's %s has %q", name, f, s.flags[f], b.name, v)
			}
		}
		want := map[string]string{}
		for dep, d := range b.cfg.DependsOn {
			for _, r := range replicasOf(svcs, kindOf(base, dep)) {
				want[r] = d.Condition
			}
		}
		// A later replica of a service that declares JetStream streams and
		// buckets waits for the one before it, which declares them: two
		// declaring one three-copy bucket at once both time out.
		if prev, ok := previousReplica(name); ok && s.flags["nats"] != "" {
			want[prev] = healthy
		}
		got := map[string]string{}
		for dep, d := range s.cfg.DependsOn {
			got[dep] = d.Condition
			if !d.Required {
				t.Errorf("%s depends on %s optionally", name, dep)
			}
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s depends on %v; want %v (the base file's, over every replica)", name, got, want)
		}
		if s.cfg.User != b.cfg.User || s.cfg.Image != b.cfg.Image {
			t.Errorf("%s runs %s as %q; the base file's %s runs %s as %q", name, s.cfg.Image, s.cfg.User, b.name, b.cfg.Image, b.cfg.User)
		}
	}
}

// Peers dial a service by its kind's name, an alias every replica of it
// answers to, and wait for every replica to be healthy.
func TestScalePeersReachEveryReplica(t *testing.T) {
	t.Parallel()
	svcs := services(t, loadComposeFile(t, scaleFile, nil))
	for name, s := range svcs {
		for _, f := range peerFlags {
			addr, ok := s.flags[f]
			if !ok {
				continue
			}
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				t.Fatalf("%s --%s=%s: %v", name, f, addr, err)
			}
			for _, r := range replicasOf(svcs, f) {
				if !slices.Contains(svcs[r].aliases(), host) {
					t.Errorf("%s dials %s, a name %s does not answer to (aliases %v)", name, addr, r, svcs[r].aliases())
				}
				if p, _ := svcs[r].listenPort(); p != port {
					t.Errorf("%s dials port %s; %s listens on %s", name, port, r, p)
				}
			}
		}
	}
}

// The NATS nodes form one cluster whose routes name each other, each
// advertising its route by name, and every client lists all three and
// asks for three copies.
func TestScaleNATSNodesRouteToEachOther(t *testing.T) {
	t.Parallel()
	p := loadComposeFile(t, scaleFile, nil)
	svcs := services(t, p)
	nodes := replicasOf(svcs, "nats")
	var clientURLs []string
	data := map[string]string{}
	for _, n := range nodes {
		s := svcs[n]
		if s.flags["name"] != n || s.flags["cluster"] == "" || s.flags["cluster"] != svcs[nodes[0]].flags["cluster"] {
			t.Errorf("%s runs as --name=%q in --cluster=%q; want its service name, in one cluster with every node", n, s.flags["name"], s.flags["cluster"])
		}
		var want []string
		for _, other := range nodes {
			if other != n {
				_, port, _ := net.SplitHostPort(svcs[other].flags["cluster-listen"])
				want = append(want, net.JoinHostPort(other, port))
			}
		}
		if got := split(s.flags["routes"]); !slices.Equal(slices.Sorted(slices.Values(got)), want) {
			t.Errorf("%s --routes=%s; want the other nodes' route addresses %v", n, s.flags["routes"], want)
		}
		// Told to the others as gossip: by name, as its certificate names it
		// (its IP would fail their TLS check on a rejoin).
		_, rport, _ := net.SplitHostPort(s.flags["cluster-listen"])
		if want := net.JoinHostPort(n, rport); s.flags["cluster-advertise"] != want {
			t.Errorf("%s --cluster-advertise=%q; want %q", n, s.flags["cluster-advertise"], want)
		}
		_, port, _ := net.SplitHostPort(s.flags["listen"])
		clientURLs = append(clientURLs, "tls://"+net.JoinHostPort(n, port))
		m, ok := s.mountAt(s.flags["data"])
		if v, named := p.Volumes[m.Source]; !ok || m.Type != types.VolumeTypeVolume || !named || bool(v.External) || m.ReadOnly {
			t.Errorf("%s keeps its storage in %s, mounted %+v; want a writable named volume of this file", n, s.flags["data"], m)
		}
		if other, dup := data[m.Source]; dup {
			t.Errorf("%s and %s share the storage volume %s", n, other, m.Source)
		}
		data[m.Source] = n
	}
	for name, s := range svcs {
		if _, ok := s.flags["nats"]; !ok {
			continue
		}
		if got := split(s.flags["nats"]); !slices.Equal(slices.Sorted(slices.Values(got)), clientURLs) {
			t.Errorf("%s --nats=%s; want every node: %v", name, s.flags["nats"], clientURLs)
		}
		if s.flags["nats-replicas"] != fmt.Sprint(len(nodes)) {
			t.Errorf("%s --nats-replicas=%s; want %d, a copy on each node", name, s.flags["nats-replicas"], len(nodes))
		}
	}
}

// Each replica is published on a host port of its own: the gateways on
// every interface, the rest on 127.0.0.1 only.
func TestScalePublishesEachReplicaOnItsOwnPort(t *testing.T) {
	t.Parallel()
	svcs := services(t, loadComposeFile(t, scaleFile, nil))
	taken := map[string]string{}
	for name, s := range svcs {
		port, _ := s.listenPort()
		for _, pc := range s.cfg.Ports {
			if formatPort(pc.Target) != port {
				t.Errorf("%s publishes container port %d; it listens on %s", name, pc.Target, port)
			}
			if want := map[bool]string{true: "", false: "127.0.0.1"}[s.kind() == "gateway"]; pc.HostIP != want {
				t.Errorf("%s publishes on %q; want %q", name, pc.HostIP, want)
			}
			if other, dup := taken[pc.Published]; dup {
				t.Errorf("%s and %s both publish host port %s", name, other, pc.Published)
			}
			taken[pc.Published] = name
		}
		if k := s.kind(); k == "gateway" && len(s.cfg.Ports) != 1 {
			t.Errorf("%s publishes %d ports; want its one HTTPS port", name, len(s.cfg.Ports))
		}
	}
}

// The certs step mints a leaf per replica: CN the service's identity, naming
// the replica (its healthcheck, the NATS routes and --nats dial it) and the
// alias peers dial.
func TestScaleCertificatesNameEveryReplica(t *testing.T) {
	t.Parallel()
	svcs := services(t, loadComposeFile(t, scaleFile, nil))
	certs, vol := svcs["certs"], t.TempDir()
	mintInto(t, testkit.Build(t, switchboardPkg), certs, vol)
	checkOwnCertDirs(t, svcs)
	leaf := func(s *service) (*x509.Certificate, *x509.CertPool) {
		local := func(path string) string { return certsLocal(t, certs, s, path, vol) }
		return loadLeaf(t, local(s.flags["tls-ca"]), local(s.flags["tls-cert"]), local(s.flags["tls-key"]))
	}
	for name, s := range svcs {
		if name == "certs" {
			continue
		}
		l, roots := leaf(s)
		if _, err := l.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
			t.Errorf("%s's certificate does not verify: %v", name, err)
		}
		wantCN := s.kind()
		if wantCN == "host" {
			wantCN = name // a tool host: its CN is the client it hosts as
		}
		if l.Subject.CommonName != wantCN {
			t.Errorf("%s presents CN=%s; want CN=%s, the identity its replicas share", name, l.Subject.CommonName, wantCN)
		}
		if _, listens := s.flags["listen"]; listens {
			for _, h := range append([]string{name}, s.aliases()...) {
				if err := l.VerifyHostname(h); err != nil {
					t.Errorf("%s is dialed as %s, which its certificate does not name: %v", name, h, err)
				}
			}
		}
		// Every node a NATS flag names presents a leaf naming it.
		for _, f := range []string{"nats", "routes"} {
			for _, addr := range split(s.flags[f]) {
				if u, err := url.Parse(addr); err == nil && u.Host != "" {
					addr = u.Host
				}
				host, _, _ := net.SplitHostPort(addr)
				peer, ok := svcs[host]
				if !ok {
					t.Errorf("%s --%s names %s, no service of this file", name, f, host)
					continue
				}
				if pl, _ := leaf(peer); pl.VerifyHostname(host) != nil {
					t.Errorf("%s dials %s, whose certificate does not name it", name, host)
				}
			}
		}
	}
}

// previousReplica is the replica before name-N (name-(N-1)), if N > 1.
func previousReplica(name string) (string, bool) {
	i := strings.LastIndex(name, "-")
	n, err := strconv.Atoi(name[i+1:])
	if i < 0 || err != nil || n < 2 {
		return "", false
	}
	return fmt.Sprintf("%s-%d", name[:i], n-1), true
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// The scale file takes the base file's variables, and one for the second
// gateway's port.
func TestScaleInterpolation(t *testing.T) {
	t.Parallel()
	p := loadComposeFile(t, scaleFile, map[string]string{
		"SWITCHBOARD_IMAGE": "registry.example/switchboard:1.0", "SWITCHBOARD_HTTP_PORT": "9443", "SWITCHBOARD_HTTP_PORT_2": "9444"})
	for name, s := range p.Services {
		if s.Image != "registry.example/switchboard:1.0" {
			t.Errorf("%s runs image %q; want the one SWITCHBOARD_IMAGE names", name, s.Image)
		}
	}
	for name, want := range map[string]string{"gateway-1": "9443", "gateway-2": "9444"} {
		if ports := p.Services[name].Ports; len(ports) != 1 || ports[0].Published != want {
			t.Errorf("%s publishes %+v; want host port %s", name, ports, want)
		}
	}
	for name, s := range loadComposeFile(t, scaleFile, nil).Services {
		if want := makeImagesTag(t); s.Image != want {
			t.Errorf("%s runs image %q by default; want %q, the tag make images builds", name, s.Image, want)
		}
	}
}
