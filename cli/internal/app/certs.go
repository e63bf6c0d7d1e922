package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/switchboard-run/switchboard/kit/suite/certs"
	"github.com/switchboard-run/switchboard/kit/suite/envflag"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// runCerts: switchboard certs init|leaf|suite --dir DIR ...
func runCerts(ctx context.Context, args []string, std IO) int {
	if len(args) == 0 {
		return fail(std, "certs", usagef("usage: switchboard certs init|leaf|suite --dir DIR (see -h of each)"))
	}
	sub, args := args[0], args[1:]
	fset := envflag.NewFlagSet("certs "+sub, std.Stderr)
	dir := fset.String("dir", "certs", "directory holding the CA (ca.pem, ca-key.pem) and a directory per leaf (<name>/ca.pem, cert.pem, key.pem)")
	validity := fset.Duration("validity", 365*24*time.Hour, "how long the certificates are valid")
	var err error
	switch sub {
	case "init":
		if _, err = parse(fset, args); err == nil {
			err = initCA(*dir, *validity, std)
		}
	case "leaf":
		name := fset.String("name", "", "the identity: the certificate's CN")
		grade := fset.String("grade", "driver", "host, driver, admin, service or scrape: the certificate's OU")
		hosts := fset.String("hosts", "", "comma-separated DNS names and IPs a service's leaf serves as (default localhost,127.0.0.1); no other grade's leaf serves")
		metricsHosts := fset.String("metrics-hosts", "", "for a leaf that does not serve (a tool host's): also mint a serving leaf naming these DNS names and IPs, metrics-cert.pem and metrics-key.pem, for its --metrics-addr (--metrics-tls-cert, --metrics-tls-key)")
		owner := fset.String("owner", "", "UID:GID to give the leaf's directory to (default: whoever runs this)")
		if _, err = parse(fset, args); err == nil {
			var o *certs.Owner
			if o, err = parseOwner("owner", *owner); err == nil {
				names := envflag.List(*hosts)
				if len(names) == 0 && *grade == certs.ServiceGrade {
					names = []string{"localhost", "127.0.0.1"}
				}
				err = mintLeaf(*dir, *name, *grade, names, envflag.List(*metricsHosts), *validity, o, std)
			}
		}
	case "suite":
		admin := fset.String("admin", "admin", "name of the admin certificate to mint (written as <name>.pem)")
		hosts := fset.String("hosts", "localhost,127.0.0.1", "extra DNS names and IPs every service leaf serves as")
		owner := fset.String("owner", "", "UID:GID the services run as: the directories of those that run no programs (nats, registry, mailbox, gateway) are given to it; the bridge's and the example host's stay with whoever runs this (root), since they start as root, read their key and drop to it with --run-as")
		promOwner := fset.String("prometheus-owner", "", "UID:GID Prometheus runs as (its image's own user), given the directory of its scrape certificate (default: --owner)")
		replicas := fset.String("replicas", "", "comma-separated service=N (nats=3,mailbox=2): mint N leaves <service>-1..<service>-N instead of <service>, each its own key, CN=<service>, naming <service> and <service>-i (docker-compose.scale.yml)")
		if _, err = parse(fset, args); err == nil {
			var o, po *certs.Owner
			var counts map[string]int
			if o, err = parseOwner("owner", *owner); err == nil {
				if po, err = parseOwner("prometheus-owner", *promOwner); err == nil {
					if counts, err = parseReplicas(*replicas); err == nil {
						err = mintSuite(*dir, *admin, envflag.List(*hosts), counts, *validity, owners{services: o, prometheus: po}, std)
					}
				}
			}
		}
	default:
		return fail(std, "certs", usagef("unknown certs command %q: want init, leaf or suite", sub))
	}
	if err != nil {
		return fail(std, "certs "+sub, err)
	}
	return 0
}

func initCA(dir string, validity time.Duration, std IO) error {
	if _, err := os.Stat(filepath.Join(dir, "ca.pem")); err == nil {
		return fmt.Errorf("%s already holds a CA; remove it first to mint a new one (every leaf it signed stops working)", dir)
	}
	ca, err := certs.MintCA("switchboard CA", validity)
	if err != nil {
		return err
	}
	if err := ca.Write(dir); err != nil {
		return err
	}
	fmt.Fprintf(std.Stdout, "wrote %s and %s\n", filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem"))
	return nil
}

// mintLeaf mints the leaf name into dir/<name>; with metricsHosts, a
// serving leaf for its metrics listener beside it.
func mintLeaf(dir, name, grade string, hosts, metricsHosts []string, validity time.Duration, owner *certs.Owner, std IO) error {
	if err := mintLeafAt(dir, fileName(name), name, grade, hosts, validity, owner, std); err != nil || len(metricsHosts) == 0 {
		return err
	}
	if grade == certs.ServiceGrade {
		return fmt.Errorf("--metrics-hosts: the leaf of %q serves already (a service's does): name its names with --hosts", name)
	}
	ca, err := certs.LoadCA(dir)
	if err != nil {
		return err
	}
	leaf, err := ca.Mint(certs.LeafSpec{Name: name, Serving: true, Hosts: metricsHosts, Validity: validity})
	if err == nil {
		err = leaf.WriteMetrics(filepath.Join(dir, fileName(name)), owner)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(std.Stdout, "wrote %s and %s (a serving leaf for the metrics listener of %s)\n",
		filepath.Join(dir, fileName(name), certs.MetricsCertFile), certs.MetricsKeyFile, name)
	return nil
}

// mintLeafAt mints the leaf name into dir/file: a replica's directory is
// named for the replica, its certificate for the identity it shares.
func mintLeafAt(dir, file, name, grade string, hosts []string, validity time.Duration, owner *certs.Owner, std IO) error {
	if err := identity.CheckName(name); err != nil {
		return fmt.Errorf("--name: %w", err)
	}
	if _, err := identity.ParseGrade(grade); err != nil {
		return fmt.Errorf("--grade: %w", err)
	}
	ca, err := certs.LoadCA(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s holds no CA: run `switchboard certs init --dir %s` first", dir, dir)
	}
	if err != nil {
		return err
	}
	leaf, err := ca.Mint(certs.LeafSpec{Name: name, Grade: grade, Hosts: hosts, Validity: validity})
	if err != nil {
		return err
	}
	if file == "." || file == ".." {
		return fmt.Errorf("--name %q cannot be a directory of its own under %s", name, dir)
	}
	leafDir := filepath.Join(dir, file)
	if err := leaf.WriteDir(leafDir, ca, owner); err != nil {
		return err
	}
	fmt.Fprintf(std.Stdout, "wrote %s (CN=%s, OU=%s)\n", leafDir, name, grade)
	return nil
}

// suiteLeaf is one process of the compose deployment.
type suiteLeaf struct {
	name, grade string
	// serves: the leaf names the process's host name (peers dial it).
	serves bool
	// children: the process runs other people's programs, so it reads its
	// key as root and drops to the owner (--run-as); its directory stays
	// root's.
	children bool
	// prometheus: the scraper, which runs in an image of its own as that
	// image's user (--prometheus-owner).
	prometheus bool
}

// suiteLeaves are the processes docker-compose.yml runs, each given a
// directory of its own. A service's leaf serves and names its host name.
// The example host dials out for its work but serves /metrics
// (--metrics-addr): its own leaf, a host's, serves nothing, so a serving
// leaf naming it sits beside it. Prometheus (the observability profile)
// only dials: its leaf is a client's, of the one grade that reads metrics
// and nothing else — scrape (docs/security.md).
var suiteLeaves = []suiteLeaf{
	{name: "nats", grade: "service", serves: true},
	{name: "registry", grade: "service", serves: true},
	{name: "mailbox", grade: "service", serves: true},
	{name: "bridge", grade: "service", serves: true, children: true},
	{name: "gateway", grade: "service", serves: true},
	{name: "example-host", grade: "host", serves: true, children: true},
	{name: "prometheus", grade: "scrape", prometheus: true},
}

// owners are the users the suite's directories are given to: nil is
// whoever runs the certs step.
type owners struct{ services, prometheus *certs.Owner }

// of is the owner of l's directory.
func (o owners) of(l suiteLeaf) *certs.Owner {
	switch {
	case l.children:
		return nil
	case l.prometheus && o.prometheus != nil:
		return o.prometheus
	}
	return o.services
}

// mintSuite mints what the compose deployment needs: a CA (kept if there is
// one) whose key stays in dir, and a directory per process — a service
// leaf per service, the example host's, and an admin's for people —
// holding that process's material only.
func mintSuite(dir, admin string, hosts []string, replicas map[string]int, validity time.Duration, owner owners, std IO) error {
	if _, err := os.Stat(filepath.Join(dir, "ca.pem")); errors.Is(err, fs.ErrNotExist) {
		if err := initCA(dir, validity, std); err != nil {
			return err
		}
	}
	for _, l := range suiteLeaves {
		var names []string
		if l.serves {
			names = append([]string{l.name}, hosts...)
		}
		if n := replicas[l.name]; n > 0 {
			if err := mintReplicas(dir, l, n, names, validity, owner.of(l), std); err != nil {
				return err
			}
			continue
		}
		own, metrics := names, []string(nil)
		if l.grade != certs.ServiceGrade {
			own, metrics = nil, names
		}
		if err := mintLeaf(dir, l.name, l.grade, own, metrics, validity, owner.of(l), std); err != nil {
			return err
		}
	}
	return mintLeaf(dir, admin, "admin", nil, nil, validity, nil, std)
}

// parseOwner reads the owner flag named flagName; empty is nobody in
// particular.
func parseOwner(flagName, s string) (*certs.Owner, error) {
	if s == "" {
		return nil, nil
	}
	o, err := certs.ParseOwner(s)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", flagName, err)
	}
	return o, nil
}

// fileName keeps a leaf's file name to safe characters.
func fileName(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, name)
}
