package deploy

import (
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/switchboard-run/switchboard/kit/suite/ports"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// observability is the compose profile of Prometheus, Grafana and Jaeger.
const observability = "observability"

// observers are the profile's services, each from an image of its own.
var observers = []string{"prometheus", "grafana", "jaeger"}

// otlpEndpoint is the variable the services pass through to the SDK.
const otlpEndpoint = "OTEL_EXPORTER_OTLP_ENDPOINT"

// versionTag is a tag that names a release: v3.5.0, 12.0.2, 1.76.0.
var versionTag = regexp.MustCompile(`^v?[0-9]+(\.[0-9]+)+$`)

func TestObservabilityProfileIsOptIn(t *testing.T) {
	t.Parallel()
	plain := loadCompose(t, nil)
	for _, name := range observers {
		if _, ok := plain.Services[name]; ok {
			t.Errorf("%s starts with a plain `docker compose up`; it belongs to the %s profile only", name, observability)
		}
	}
	p := loadCompose(t, nil, observability)
	for _, name := range observers {
		s, ok := p.Services[name]
		if !ok {
			t.Errorf("the %s profile has no %s service", observability, name)
			continue
		}
		if !slices.Equal(s.Profiles, []string{observability}) {
			t.Errorf("%s is in profiles %v; want [%s]", name, s.Profiles, observability)
		}
		if s.Build != nil {
			t.Errorf("%s builds %+v; it runs a published image", name, s.Build)
		}
		if got := slices.Sorted(maps.Keys(s.Networks)); !slices.Equal(got, slices.Sorted(maps.Keys(p.Networks))) {
			t.Errorf("%s is on networks %v; want the suite's network", name, got)
		}
		// Each shows what the suite does: this machine's eyes only.
		for _, pc := range s.Ports {
			if pc.HostIP != "127.0.0.1" {
				t.Errorf("%s publishes %s:%s→%d; want 127.0.0.1 only", name, pc.HostIP, pc.Published, pc.Target)
			}
		}
	}
	if j, ok := p.Services["jaeger"]; ok {
		var targets []uint32
		for _, pc := range j.Ports {
			targets = append(targets, pc.Target)
		}
		// The UI, and OTLP over gRPC and HTTP for a suite run outside compose.
		if slices.Sort(targets); !slices.Equal(targets, []uint32{4317, 4318, 16686}) {
			t.Errorf("jaeger publishes %v; want 4317, 4318 (OTLP) and 16686 (its UI)", targets)
		}
		if v := j.Environment["COLLECTOR_OTLP_ENABLED"]; v == nil || *v != "true" {
			t.Errorf("jaeger's COLLECTOR_OTLP_ENABLED is %v; want true, so it takes OTLP", v)
		}
	}
}

// Users pull these images: a moving tag would run whatever it names that
// day, not what the dashboard and the scrape file were checked against.
func TestComposeImagesArePinned(t *testing.T) {
	t.Parallel()
	p := loadCompose(t, nil, observability)
	for name, s := range p.Services {
		repo, tag := splitImage(s.Image)
		switch {
		case tag == "" || tag == "latest":
			t.Errorf("%s runs %q: name a tag, and not latest", name, s.Image)
		case s.Build == nil && !versionTag.MatchString(tag):
			t.Errorf("%s runs %s at tag %q; want a release version", name, repo, tag)
		}
	}
}

// splitImage splits an image reference into its repository and tag; a
// registry's port is no tag.
func splitImage(image string) (string, string) {
	image, _, _ = strings.Cut(image, "@")
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return image, ""
	}
	return image[:i], image[i+1:]
}

func TestSplitImageFindsTheTag(t *testing.T) {
	t.Parallel()
	for image, want := range map[string][2]string{
		"prom/prometheus:v3.5.0":            {"prom/prometheus", "v3.5.0"},
		"prom/prometheus":                   {"prom/prometheus", ""},
		"registry.example:5000/switchboard": {"registry.example:5000/switchboard", ""},
		"registry.example:5000/sb:1.0":      {"registry.example:5000/sb", "1.0"},
	} {
		if repo, tag := splitImage(image); repo != want[0] || tag != want[1] {
			t.Errorf("splitImage(%q) = %q, %q; want %q, %q", image, repo, tag, want[0], want[1])
		}
	}
}

// Traces go where the caller's environment says, and nowhere when it says
// nothing: an unset variable reaches the services empty.
func TestComposePassesTheOTLPEndpointThrough(t *testing.T) {
	t.Parallel()
	for _, want := range []string{"", "http://jaeger:4318"} {
		env := map[string]string{}
		if want != "" {
			env[otlpEndpoint] = want
		}
		for name, s := range services(t, loadCompose(t, env)) {
			if name == "certs" {
				continue
			}
			if got, ok := s.env[otlpEndpoint]; !ok || got != want {
				t.Errorf("with %s=%q, %s gets %q (set: %v)", otlpEndpoint, want, name, got, ok)
			}
		}
	}
}

// observed is the compose project with the observability profile: its
// Switchboard services, the certs step among them, and Prometheus, which
// runs no switchboard command and so is read for its mounts alone.
type observed struct {
	p           *types.Project
	svcs        map[string]*service
	certs, prom *service
}

func loadObserved(t *testing.T) observed {
	t.Helper()
	p := loadCompose(t, nil, observability)
	svcs := services(t, p)
	return observed{p: p, svcs: svcs, certs: svcs["certs"], prom: &service{name: "prometheus", cfg: p.Services["prometheus"]}}
}

// metricsServices are the compose services that serve /metrics: every
// Switchboard process but the certs step (it serves nothing) and NATS (a
// server of its own, with no Switchboard metrics).
func metricsServices(t *testing.T, svcs map[string]*service) map[string]*service {
	t.Helper()
	out := map[string]*service{}
	for name, s := range svcs {
		if name == "certs" || s.sub[0] == "nats" {
			continue
		}
		out[name] = s
	}
	return out
}

func TestComposeServesMetricsOnTheMetricsPort(t *testing.T) {
	t.Parallel()
	svcs := services(t, loadCompose(t, nil))
	for name, s := range metricsServices(t, svcs) {
		host, port, err := net.SplitHostPort(s.flags["metrics-addr"])
		if err != nil || host != "0.0.0.0" || port != ports.Metrics {
			t.Errorf("%s --metrics-addr=%q; want 0.0.0.0:%s, where Prometheus scrapes it", name, s.flags["metrics-addr"], ports.Metrics)
		}
	}
	for _, name := range []string{"certs", "nats"} {
		if v := svcs[name].flags["metrics-addr"]; v != "" {
			t.Errorf("%s --metrics-addr=%s; it has no Switchboard metrics", name, v)
		}
	}
}

// Prometheus reads its own certs directory and no other, read-only, and
// nobody else reads it.
func TestPrometheusMountsOnlyItsOwnCerts(t *testing.T) {
	t.Parallel()
	o := loadObserved(t)
	p, certs, prom := o.p, o.certs, o.prom
	own := filepath.Join(certs.flags["dir"], "prometheus")
	var written []types.ServiceVolumeConfig
	for _, m := range prom.cfg.Volumes {
		if cm, ok := certs.certsMount(m); ok {
			written = append(written, m)
			if cm.Target != own || !m.ReadOnly || m.Type != types.VolumeTypeVolume {
				t.Errorf("prometheus mounts %s, which the certs step writes at %s; want its own directory %s, read-only (mount: %+v)", m.Source, cm.Target, own, m)
			}
		}
	}
	if len(written) != 1 {
		t.Fatalf("prometheus mounts %d volumes of the certs step; want its own directory alone", len(written))
	}
	for name, s := range p.Services {
		if name == "prometheus" || name == "certs" {
			continue
		}
		for _, m := range s.Volumes {
			if m.Source == written[0].Source {
				t.Errorf("%s mounts %s, Prometheus's key", name, m.Source)
			}
		}
	}
	if got := certs.flags["prometheus-owner"]; got != prom.cfg.User {
		t.Errorf("the certs step gives Prometheus's directory to %q; Prometheus runs as %q", got, prom.cfg.User)
	}
}

// Prometheus, as the user its image runs as, reads its own key and no
// service's; the services' user cannot read Prometheus's.
func TestPrometheusKeyIsReadableByPrometheusAlone(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("reading as other users needs root; the suite's tests run as root")
	}
	o := loadObserved(t)
	vol := t.TempDir()
	// In a container the directory is the mount itself: nothing above it
	// may stand in the way here either.
	for _, d := range []string{filepath.Dir(vol), vol} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mintInto(t, testkit.Build(t, switchboardPkg), o.certs, vol)
	promKey := certsLocal(t, o.certs, o.prom, promConfig(t, o.prom).ScrapeConfigs[0].HTTPClientConfig.TLSConfig.KeyFile, vol)
	puid, pgid := ids(t, "prometheus", o.prom.cfg.User)
	if puid == 0 {
		t.Fatalf("prometheus runs as %s; it needs no root", o.prom.cfg.User)
	}
	if !canRead(puid, pgid, promKey) {
		t.Errorf("prometheus runs as %s and cannot read its own key", o.prom.cfg.User)
	}
	suid, sgid := ids(t, "registry", imageUser(t))
	if canRead(suid, sgid, promKey) {
		t.Errorf("the services' user %s can read Prometheus's key", imageUser(t))
	}
	for name, s := range o.svcs {
		if name == "certs" {
			continue
		}
		if key := certsLocal(t, o.certs, s, s.flags["tls-key"], vol); canRead(puid, pgid, key) {
			t.Errorf("prometheus (%s) can read %s's key", o.prom.cfg.User, name)
		}
	}
}
