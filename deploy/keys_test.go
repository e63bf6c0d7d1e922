package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

// The certs step gives each process a directory of its own — the CA's
// certificate, its leaf, its key — and keeps the CA's key out of every one
// of them (docs/security.md).
func TestComposeGivesEachProcessItsOwnMaterialOnly(t *testing.T) {
	t.Parallel()
	eachFile(t, checkOwnMaterialOnly)
}

func checkOwnMaterialOnly(t *testing.T, p *types.Project) {
	svcs := services(t, p)
	certs, vol := svcs["certs"], t.TempDir()
	mintInto(t, testkit.Build(t, switchboardPkg), certs, vol)
	if _, err := os.Stat(filepath.Join(vol, "ca-key.pem")); err != nil {
		t.Errorf("the CA's key is not where the certs step keeps it: %v", err)
	}
	for name, s := range svcs {
		if name == "certs" {
			continue
		}
		dir := filepath.Dir(certsLocal(t, certs, s, s.flags["tls-key"], vol))
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var files []string
		for _, e := range entries {
			files = append(files, e.Name())
		}
		want := []string{"ca.pem", "cert.pem", "key.pem"}
		if s.flags["metrics-tls-cert"] != "" { // a host's serving leaf for its metrics
			want = append(want, "metrics-cert.pem", "metrics-key.pem")
		}
		if !slices.Equal(files, want) {
			t.Errorf("%s's certs directory holds %v; want %v only", name, files, want)
		}
	}
}

// Each process reads its key as the user its container runs as; a process
// that runs other people's programs (the bridge, a tool host) starts as
// root, reads a key only root can read, and runs them as --run-as, who
// cannot. The reads are real: cat, run as each user, on the files the
// certs step wrote.
func TestComposeKeysAreReadableByTheirProcessAlone(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("reading as other users needs root; the suite's tests run as root")
	}
	eachFile(t, checkKeysReadable)
}

func checkKeysReadable(t *testing.T, p *types.Project) {
	svcs := services(t, p)
	certs := svcs["certs"]
	vol := t.TempDir()
	// In a container the directory is the mount itself: nothing above it
	// stands in the way, so nothing above it may here either.
	for _, d := range []string{filepath.Dir(vol), vol} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mintInto(t, testkit.Build(t, switchboardPkg), certs, vol)
	image := imageUser(t)
	for name, s := range svcs {
		if name == "certs" {
			continue
		}
		key := certsLocal(t, certs, s, s.flags["tls-key"], vol)
		starts := image
		if s.cfg.User != "" {
			starts = s.cfg.User
		}
		uid, gid := ids(t, name, starts)
		if !canRead(uid, gid, key) {
			t.Errorf("%s runs as %s and cannot read its own key", name, starts)
		}
		runsChildren := s.sub[0] == "bridge" || s.sub[0] == "host"
		runAs := s.flags["run-as"]
		switch {
		case !runsChildren && runAs != "":
			t.Errorf("%s runs no programs of others, yet drops to --run-as %s", name, runAs)
		case !runsChildren:
		case uid != 0 || runAs == "":
			t.Errorf("%s runs other people's programs: it must start as root (it runs as %s) and drop with --run-as (it has %q)", name, starts, runAs)
		default:
			cuid, cgid := ids(t, name, runAs)
			if cuid == 0 {
				t.Errorf("%s --run-as %s keeps its children root", name, runAs)
			}
			if canRead(cuid, cgid, key) {
				t.Errorf("the programs %s runs (as %s) could read its key", name, runAs)
			}
		}
	}
}

// imageUser is the final stage's USER.
func imageUser(t *testing.T) string {
	t.Helper()
	user := ""
	for _, in := range finalStage(t).instrs {
		if in.cmd == "USER" {
			user = in.rest
		}
	}
	return user
}

// ids reads a numeric UID[:GID] (the image has no user database to look
// names up in).
func ids(t testing.TB, service, spec string) (int, int) {
	t.Helper()
	u, g, _ := strings.Cut(spec, ":")
	uid, uerr := strconv.Atoi(u)
	gid, gerr := strconv.Atoi(g)
	if uerr != nil || gerr != nil {
		t.Fatalf("%s runs as %q; want a numeric UID:GID", service, spec)
	}
	return uid, gid
}

// canRead reports whether uid:gid, with no other groups, can read path.
func canRead(uid, gid int, path string) bool {
	cmd := exec.Command("cat", path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
	return cmd.Run() == nil
}
