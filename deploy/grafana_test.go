package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v2"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

// The parts of Grafana's provisioning files this deployment writes; they
// are decoded strictly, so a misspelt key fails here, not silently there.
type (
	datasourceFile struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			Name, UID, Type, Access, URL string
			IsDefault                    bool `yaml:"isDefault"`
			Editable                     bool
		}
	}
	providerFile struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Name, Folder, Type string
			DisableDeletion    bool `yaml:"disableDeletion"`
			AllowUIUpdates     bool `yaml:"allowUiUpdates"`
			Options            struct{ Path string }
		}
	}
)

// dashboard is the part of Grafana's dashboard JSON the file uses.
type dashboard struct {
	UID, Title, Description, Refresh string
	Tags                             []string
	Editable                         bool
	SchemaVersion, Version           int
	Time                             struct{ From, To string }
	Panels                           []struct {
		ID                       int
		Type, Title, Description string
		Datasource               datasourceRef
		GridPos                  struct{ H, W, X, Y int }
		FieldConfig              struct {
			Defaults  struct{ Unit string }
			Overrides []json.RawMessage
		}
		Targets []panelTarget
	}
}

// panelTarget is one query of a panel.
type panelTarget struct {
	RefID        string
	Datasource   datasourceRef
	Expr         string
	LegendFormat string
}

type datasourceRef struct{ Type, UID string }

// grafanaMount is where grafana mounts the repository's dir, read-only.
func grafanaMount(t *testing.T, grafana types.ServiceConfig, dir string) string {
	t.Helper()
	src := filepath.Join(testkit.RepoRoot(t), dir)
	for _, m := range grafana.Volumes {
		if m.Source == src {
			if m.Type != types.VolumeTypeBind || !m.ReadOnly {
				t.Errorf("grafana mounts %s as %+v; want a read-only bind mount", dir, m)
			}
			return m.Target
		}
	}
	t.Fatalf("grafana does not mount %s", dir)
	return ""
}

// strictYAML decodes the repository's file into v, refusing unknown keys.
func strictYAML(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testkit.RepoRoot(t), file))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// provisionedDatasource is the one datasource Grafana is given, checked
// against the compose service it names.
func provisionedDatasource(t *testing.T, p *types.Project) string {
	t.Helper()
	var ds datasourceFile
	strictYAML(t, "deploy/grafana/provisioning/datasources/prometheus.yml", &ds)
	if ds.APIVersion != 1 || len(ds.Datasources) != 1 {
		t.Fatalf("datasources: apiVersion %d, %d datasources; want 1 and one", ds.APIVersion, len(ds.Datasources))
	}
	d := ds.Datasources[0]
	u, err := url.Parse(d.URL)
	if err != nil || d.Type != "prometheus" || d.Access != "proxy" || d.UID == "" {
		t.Fatalf("datasource %+v: want a prometheus datasource with a uid, reached by Grafana's server (proxy): %v", d, err)
	}
	prom, ok := p.Services[u.Hostname()]
	if !ok || u.Hostname() != "prometheus" {
		t.Fatalf("the datasource's URL %s names no prometheus service of docker-compose.yml", d.URL)
	}
	var listens []string
	for _, pc := range prom.Ports {
		listens = append(listens, formatPort(pc.Target))
	}
	if !slices.Contains(listens, u.Port()) {
		t.Errorf("the datasource dials %s; prometheus listens on %v", net.JoinHostPort(u.Hostname(), u.Port()), listens)
	}
	return d.UID
}

func TestGrafanaIsProvisionedFromTheRepository(t *testing.T) {
	t.Parallel()
	p := loadCompose(t, nil, observability)
	grafana := p.Services["grafana"]
	for _, kind := range []string{"datasources", "dashboards"} {
		if got, want := grafanaMount(t, grafana, "deploy/grafana/provisioning/"+kind), "/etc/grafana/provisioning/"+kind; got != want {
			t.Errorf("grafana reads deploy/grafana/provisioning/%s at %s; Grafana provisions %s from %s", kind, got, kind, want)
		}
	}
	provisionedDatasource(t, p)
	var pf providerFile
	strictYAML(t, "deploy/grafana/provisioning/dashboards/switchboard.yml", &pf)
	if pf.APIVersion != 1 || len(pf.Providers) != 1 || pf.Providers[0].Type != "file" {
		t.Fatalf("dashboard providers %+v; want one file provider", pf)
	}
	if want := grafanaMount(t, grafana, "deploy/grafana/dashboards"); pf.Providers[0].Options.Path != want {
		t.Errorf("the provider loads %s; deploy/grafana/dashboards is mounted at %s", pf.Providers[0].Options.Path, want)
	}
}

// grafanaVariable is a Grafana variable in a query: $name or ${name}.
var grafanaVariable = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?`)

// Every query parses as PromQL, names its metrics and the labels it groups
// and filters by exactly as DashboardMetrics and DashboardLabels list them,
// and reads the provisioned datasource.
func TestDashboardQueriesUseTheListedMetrics(t *testing.T) {
	t.Parallel()
	uid := provisionedDatasource(t, loadCompose(t, nil, observability))
	files, err := filepath.Glob(filepath.Join(testkit.RepoRoot(t), "deploy", "grafana", "dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in deploy/grafana/dashboards: %v", err)
	}
	used := map[string]map[string]bool{} // metric → labels grouped or filtered by
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		var d dashboard
		if err := dec.Decode(&d); err != nil {
			t.Fatalf("%s: %v", filepath.Base(file), err)
		}
		ids := map[int]bool{}
		for _, pn := range d.Panels {
			if ids[pn.ID] {
				t.Errorf("%s: panel id %d twice", pn.Title, pn.ID)
			}
			ids[pn.ID] = true
			if pn.GridPos.X+pn.GridPos.W > 24 || pn.GridPos.W == 0 || pn.GridPos.H == 0 || len(pn.Targets) == 0 {
				t.Errorf("panel %q sits at %+v with %d queries; want a place in Grafana's 24 columns and a query", pn.Title, pn.GridPos, len(pn.Targets))
			}
			for _, ref := range append([]datasourceRef{pn.Datasource}, targetSources(pn.Targets)...) {
				if ref != (datasourceRef{Type: "prometheus", UID: uid}) {
					t.Errorf("panel %q reads datasource %+v; the provisioned one is prometheus %q", pn.Title, ref, uid)
				}
			}
			for _, tg := range pn.Targets {
				labels, err := queryLabels(tg.Expr)
				if err != nil {
					t.Errorf("panel %q: %v", pn.Title, err)
					continue
				}
				for metric, ls := range labels {
					if used[metric] == nil {
						used[metric] = map[string]bool{}
					}
					maps.Copy(used[metric], ls)
				}
				for _, m := range regexp.MustCompile(`\{\{\s*(\w+)\s*\}\}`).FindAllStringSubmatch(tg.LegendFormat, -1) {
					if !slices.ContainsFunc(slices.Collect(maps.Values(labels)), func(ls map[string]bool) bool { return ls[m[1]] }) && m[1] != "job" {
						t.Errorf("panel %q names {{%s}} in its legend; its query %q keeps no such label", pn.Title, m[1], tg.Expr)
					}
				}
			}
		}
	}
	if got := slices.Sorted(maps.Keys(used)); !slices.Equal(got, DashboardMetrics) {
		t.Errorf("the dashboard queries %v; DashboardMetrics lists %v", got, DashboardMetrics)
	}
	for metric, ls := range used {
		delete(ls, "job") // Prometheus's, from the scrape job
		if got, want := slices.Sorted(maps.Keys(ls)), slices.Sorted(slices.Values(DashboardLabels[metric])); !slices.Equal(got, want) {
			t.Errorf("the dashboard reads %s by %v; DashboardLabels lists %v", metric, got, want)
		}
	}
}

func targetSources(ts []panelTarget) []datasourceRef {
	out := make([]datasourceRef, 0, len(ts))
	for _, tg := range ts {
		out = append(out, tg.Datasource)
	}
	return out
}

// queryLabels parses a panel's query as Prometheus would once Grafana has
// put in $__rate_interval (the one variable the dashboard uses), and
// returns each metric it reads with the labels it filters or groups it by
// (le, a histogram's bucket label, left out).
func queryLabels(expr string) (map[string]map[string]bool, error) {
	q := strings.ReplaceAll(expr, "$__rate_interval", "1m")
	if m := grafanaVariable.FindString(q); m != "" {
		return nil, fmt.Errorf("query %q uses %s, a variable the dashboard does not define", expr, m)
	}
	ast, err := parser.NewParser(parser.Options{}).ParseExpr(q)
	if err != nil {
		return nil, fmt.Errorf("query %q is no PromQL: %v", expr, err)
	}
	out := map[string]map[string]bool{}
	var bad error
	parser.Inspect(ast, func(node parser.Node, path []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		if vs.Name == "" {
			bad = fmt.Errorf("query %q selects series by labels alone; name the metric", expr)
			return nil
		}
		ls := map[string]bool{}
		for _, m := range vs.LabelMatchers {
			if m.Name != "__name__" {
				ls[m.Name] = true
			}
		}
		for _, n := range path {
			if agg, ok := n.(*parser.AggregateExpr); ok && !agg.Without {
				for _, l := range agg.Grouping {
					ls[l] = true
				}
			}
		}
		if ls["le"] && !strings.HasSuffix(vs.Name, "_bucket") {
			bad = fmt.Errorf("query %q groups %s by le, which only a histogram's buckets have", expr, vs.Name)
		}
		delete(ls, "le")
		if out[vs.Name] == nil {
			out[vs.Name] = map[string]bool{}
		}
		maps.Copy(out[vs.Name], ls)
		return nil
	})
	return out, bad
}
