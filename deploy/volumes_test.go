package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

// fileFlags are the flags naming a file the repository provides.
var fileFlags = []string{"tools", "mcp-config"}

func TestComposeVolumes(t *testing.T) {
	t.Parallel()
	p := loadCompose(t, nil)
	svcs := services(t, p)
	root := testkit.RepoRoot(t)
	certs := svcs["certs"]
	certsMount, _ := certs.mountAt(certs.flags["dir"])

	t.Run("NATS keeps the suite's state on a named volume", func(t *testing.T) {
		t.Parallel()
		ns := svcs["nats"]
		dir := ns.flags["data"]
		m, ok := ns.mountAt(dir)
		if dir == "" || !ok || m.Target != dir {
			t.Fatalf("NATS keeps its storage in %q, which is no mount point", dir)
		}
		if v, named := p.Volumes[m.Source]; m.Type != types.VolumeTypeVolume || !named || bool(v.External) || m.ReadOnly {
			t.Errorf("NATS's %s is mounted %+v; want a writable named volume of this file", dir, m)
		}
		if m.Source == certsMount.Source {
			t.Errorf("NATS's data shares the certs volume %q", m.Source)
		}
	})

	t.Run("each service mounts its own certs directory, read-only, and never the CA's", func(t *testing.T) {
		t.Parallel()
		checkOwnCertDirs(t, svcs)
	})

	t.Run("every file a command names is mounted from the repository", func(t *testing.T) {
		t.Parallel()
		named := 0
		for name, s := range svcs {
			for _, f := range fileFlags {
				path := s.flags[f]
				if path == "" {
					continue
				}
				named++
				m, ok := s.mountAt(path)
				if !ok {
					t.Errorf("%s --%s=%s names a file no mount provides", name, f, path)
					continue
				}
				if m.Type != types.VolumeTypeBind || m.Target != path || !m.ReadOnly {
					t.Errorf("%s --%s=%s is not a read-only bind mount of one file (mount: %+v)", name, f, path, m)
					continue
				}
				rel, err := filepath.Rel(root, m.Source)
				if err != nil || strings.HasPrefix(rel, "..") {
					t.Errorf("%s mounts %s from %s, outside the repository", name, path, m.Source)
					continue
				}
				if fi, err := os.Stat(m.Source); err != nil || !fi.Mode().IsRegular() {
					t.Errorf("%s mounts %s from %s, which is no file of the repository: %v", name, path, rel, err)
				}
			}
		}
		// The example host's tools file and the bridge's mcpServers file.
		if named < 2 {
			t.Errorf("commands name %d repository files; want the tools file and the mcpServers file", named)
		}
	})
}

// checkOwnCertDirs: each service reads its key material from its own
// directory (the volume the certs step writes at <dir>/<service>), mounted
// read-only, mounted by no other service, and never the CA's volume.
func checkOwnCertDirs(t *testing.T, svcs map[string]*service) {
	certs := svcs["certs"]
	certsMount, _ := certs.mountAt(certs.flags["dir"])
	if certsMount.Type != types.VolumeTypeVolume || certsMount.Source == "" {
		t.Fatalf("certs writes to %+v; want a named volume", certsMount)
	}
	mountedBy := map[string]string{} // a certs-written volume → the service mounting it
	for name, s := range svcs {
		if name == "certs" {
			continue
		}
		// Mutual TLS everywhere: no container runs in dev mode.
		if s.flags["dev"] != "false" || len(s.tlsFiles()) != 3 {
			t.Errorf("%s runs with dev=%s and TLS files %v; every container uses mutual TLS", name, s.flags["dev"], s.tlsFiles())
			continue
		}
		own := filepath.Join(certs.flags["dir"], name)
		for _, f := range s.certFiles() {
			m, ok := s.mountAt(f)
			cm, written := certs.certsMount(m)
			if !ok || m.Type != types.VolumeTypeVolume || !written || cm.Target != own || !m.ReadOnly {
				t.Errorf("%s reads %s, which is not on its own certs directory (the volume certs writes at %s) mounted read-only (mount: %+v)", name, f, own, m)
			}
		}
		for _, m := range s.cfg.Volumes {
			if m.Source == certsMount.Source {
				t.Errorf("%s mounts %s, the volume of the CA's key", name, m.Source)
			}
			if _, written := certs.certsMount(m); written {
				if other, ok := mountedBy[m.Source]; ok {
					t.Errorf("%s and %s both mount %s: each process's key is its own", name, other, m.Source)
				}
				mountedBy[m.Source] = name
			}
		}
	}
}
