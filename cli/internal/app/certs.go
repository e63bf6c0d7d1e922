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

	"github.com/switchboard-run/switchboard/kit/certs"
	"github.com/switchboard-run/switchboard/kit/envflag"
	"github.com/switchboard-run/switchboard/kit/identity"
)

// runCerts: switchboard certs init|leaf|suite --dir DIR ...
func runCerts(ctx context.Context, args []string, std IO) int {
	if len(args) == 0 {
		return fail(std, "certs", usagef("usage: switchboard certs init|leaf|suite --dir DIR (see -h of each)"))
	}
	sub, args := args[0], args[1:]
	fset := envflag.NewFlagSet("certs "+sub, std.Stderr)
	dir := fset.String("dir", "certs", "directory holding ca.pem, ca-key.pem and the leaves")
	validity := fset.Duration("validity", 365*24*time.Hour, "how long the certificates are valid")
	var err error
	switch sub {
	case "init":
		if _, err = parse(fset, args); err == nil {
			err = initCA(*dir, *validity, std)
		}
	case "leaf":
		name := fset.String("name", "", "the identity: the certificate's CN")
		grade := fset.String("grade", "driver", "host, driver, admin or service: the certificate's OU")
		hosts := fset.String("hosts", "localhost,127.0.0.1", "comma-separated DNS names and IPs the leaf serves as")
		if _, err = parse(fset, args); err == nil {
			err = mintLeaf(*dir, *name, *grade, split(*hosts), *validity, std)
		}
	case "suite":
		admin := fset.String("admin", "admin", "name of the admin certificate to mint (written as <name>.pem)")
		hosts := fset.String("hosts", "localhost,127.0.0.1", "extra DNS names and IPs every service leaf serves as")
		if _, err = parse(fset, args); err == nil {
			err = mintSuite(*dir, *admin, split(*hosts), *validity, std)
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

func mintLeaf(dir, name, grade string, hosts []string, validity time.Duration, std IO) error {
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
	file := fileName(name)
	if err := leaf.Write(dir, file); err != nil {
		return err
	}
	fmt.Fprintf(std.Stdout, "wrote %s (CN=%s, OU=%s)\n", filepath.Join(dir, file+".pem"), name, grade)
	return nil
}

// mintSuite mints what the compose deployment needs: a CA (kept if there is
// one), a service leaf per service, an admin and an example host.
func mintSuite(dir, admin string, hosts []string, validity time.Duration, std IO) error {
	if _, err := os.Stat(filepath.Join(dir, "ca.pem")); errors.Is(err, fs.ErrNotExist) {
		if err := initCA(dir, validity, std); err != nil {
			return err
		}
	}
	for _, svc := range []string{"registry", "mailbox", "bridge", "gateway", "nats"} {
		if err := mintLeaf(dir, svc, "service", append([]string{svc}, hosts...), validity, std); err != nil {
			return err
		}
	}
	if err := mintLeaf(dir, admin, "admin", nil, validity, std); err != nil {
		return err
	}
	return mintLeaf(dir, "example-host", "host", nil, validity, std)
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

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
