package deploy

import (
	"archive/tar"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

// prebuiltFile is the Dockerfile that makes the image from binaries built
// on this machine, pulling nothing (`make images-prebuilt`).
const prebuiltFile = "Dockerfile.prebuilt"

// entry is one path of an image's tree, as the layout tests compare them.
type entry struct {
	dir      bool
	uid, gid int
	perm     fs.FileMode // permission and sticky bits
}

// fromBase is what the suite uses of the Dockerfile's base image,
// distroless's static nonroot: its users, its CA bundle, a /tmp for
// everyone and nonroot's home, with distroless's owners and modes.
// Dockerfile.prebuilt, FROM scratch, must bring the same.
var fromBase = map[string]entry{
	"/etc/passwd":                        {perm: 0o644},
	"/etc/group":                         {perm: 0o644},
	"/etc/ssl/certs/ca-certificates.crt": {perm: 0o644},
	"/tmp":                               {dir: true, perm: 0o777 | fs.ModeSticky},
	"/home/nonroot":                      {dir: true, uid: 65532, gid: 65532, perm: 0o700},
}

// imageLayout is the tree the Dockerfile's image has and both images must
// have alike: fromBase, what the final stage copies from the build stage
// (a program is a file, anything else a directory the build stage made;
// mode 0755 from the build, owner from --chown), and the directories above
// them, root's.
func imageLayout(t testing.TB) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	for p, e := range fromBase {
		out[p] = e
	}
	bins := imageBinaries(t)
	for dest, cp := range finalStage(t).copies() {
		_, program := bins[dest]
		uid, gid := chownIDs(t, cp.chown)
		out[dest] = entry{dir: !program, uid: uid, gid: gid, perm: 0o755}
	}
	for p := range out {
		for dir := path.Dir(p); dir != "/"; dir = path.Dir(dir) {
			if _, ok := out[dir]; !ok {
				out[dir] = entry{dir: true, perm: 0o755}
			}
		}
	}
	return out
}

// chownIDs reads a COPY's --chown=UID:GID; none is root's.
func chownIDs(t testing.TB, chown string) (int, int) {
	t.Helper()
	if chown == "" {
		return 0, 0
	}
	return ids(t, "COPY --chown", chown)
}

// last is the operand of the stage's last instr instruction, "" if none.
func (s stage) last(instr string) string {
	out := ""
	for _, in := range s.instrs {
		if in.cmd == instr {
			out = in.rest
		}
	}
	return out
}

// Dockerfile.prebuilt is one stage FROM scratch that copies, from its
// context, every path of the Dockerfile's image with the same owner, and
// runs as the same user with the same entrypoint, command and ports.
func TestDockerfilePrebuiltCopiesTheDockerfilesFiles(t *testing.T) {
	t.Parallel()
	stages := parseDockerfile(t, prebuiltFile)
	if len(stages) != 1 || stages[0].base != "scratch" {
		t.Fatalf("%s has %d stages; want one, FROM scratch, so that nothing is pulled", prebuiltFile, len(stages))
	}
	pre, final := stages[0], finalStage(t)
	for _, instr := range []string{"USER", "ENTRYPOINT", "CMD", "EXPOSE"} {
		if got, want := pre.last(instr), final.last(instr); got != want {
			t.Errorf("%s: %s %s; the Dockerfile says %s %s", prebuiltFile, instr, got, instr, want)
		}
	}
	copied := map[string]string{} // destination → --chown
	for _, in := range pre.instrs {
		if in.cmd != "COPY" {
			continue
		}
		if in.flags["from"] != "" {
			t.Errorf("%s: COPY --from=%s; it copies from its context only", prebuiltFile, in.flags["from"])
		}
		words := strings.Fields(in.rest)
		dest, srcs := words[len(words)-1], words[:len(words)-1]
		for _, src := range srcs {
			switch {
			case strings.HasSuffix(src, "/"):
				// A tree of the base's files staged by `make image-context`
				// (which the engine test reads back): those under dest with
				// its owner.
				uid, gid := chownIDs(t, in.flags["chown"])
				for p, e := range fromBase {
					if strings.HasPrefix(p, dest) && e.uid == uid && e.gid == gid {
						copied[p] = in.flags["chown"]
					}
				}
			case strings.HasSuffix(dest, "/"):
				copied[dest+path.Base(src)] = in.flags["chown"]
			default:
				copied[dest] = in.flags["chown"]
			}
		}
	}
	layout := imageLayout(t)
	for p, e := range layout {
		chown, ok := copied[p]
		uid, gid := chownIDs(t, chown)
		switch {
		case !ok && (e.uid != 0 || !e.dir || !hasBelow(layout, p)):
			t.Errorf("%s does not copy %s, which the Dockerfile's image has", prebuiltFile, p)
		case ok && (uid != e.uid || gid != e.gid):
			t.Errorf("%s copies %s owned by %d:%d; the Dockerfile's image has it owned by %d:%d", prebuiltFile, p, uid, gid, e.uid, e.gid)
		}
	}
	for p := range copied {
		if _, ok := layout[p]; !ok {
			t.Errorf("%s copies %s, which the Dockerfile's image does not have", prebuiltFile, p)
		}
	}
}

// hasBelow reports whether layout holds a path under dir: a directory the
// COPYs below it make (root's, 0755) needs no COPY of its own.
func hasBelow(layout map[string]entry, dir string) bool {
	for p := range layout {
		if strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

// The image `make images-prebuilt` built holds exactly the Dockerfile's
// tree: each path of the same kind, owner and mode, and nothing else but
// what the engine adds to every container. An image of the Dockerfile
// itself, named by SWITCHBOARD_PUBLISHED_IMAGE where a registry is
// reachable, holds the same tree among its base's other files.
func TestEnginePrebuiltImageHasTheDockerfilesTree(t *testing.T) {
	eng := testkit.ContainerEngine(t)
	layout := imageLayout(t)
	images := map[string]bool{eng.Image: true} // image → nothing else allowed
	if published := os.Getenv("SWITCHBOARD_PUBLISHED_IMAGE"); published != "" {
		images[published] = false
	}
	for image, exact := range images {
		tree := imageTree(t, eng.CLI, image)
		for p, want := range layout {
			if got, ok := tree[p]; !ok {
				t.Errorf("%s has no %s", image, p)
			} else if got != want {
				t.Errorf("%s: %s is %+v; want %+v", image, p, got, want)
			}
		}
		for p := range tree {
			if _, ok := layout[p]; !ok && exact && !engineMade(p) {
				t.Errorf("%s has %s, which the Dockerfile's image does not", image, p)
			}
		}
	}
}

// engineMade reports whether the engine puts p in every container it
// creates (mount points, the resolver's files): no image's own file.
func engineMade(p string) bool {
	top := strings.Split(p, "/")[1]
	return slices.Contains([]string{"dev", "proc", "sys", "run", ".dockerenv"}, top) ||
		slices.Contains([]string{"/etc/hosts", "/etc/hostname", "/etc/resolv.conf", "/etc/mtab"}, p)
}

// imageTree lists image's files through a container created (not run)
// from it and exported by the engine cli.
func imageTree(t *testing.T, cli, image string) map[string]entry {
	t.Helper()
	id := strings.TrimSpace(testkit.Run(t, cli, "create", image))
	t.Cleanup(func() { _ = exec.Command(cli, "rm", "-f", id).Run() })
	cmd := exec.Command(cli, "export", id)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tree := map[string]entry{}
	tr := tar.NewReader(out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s export %s: %v", cli, image, err)
		}
		p := "/" + strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")
		if p == "/" {
			continue
		}
		mode := h.FileInfo().Mode()
		tree[p] = entry{dir: mode.IsDir(), uid: h.Uid, gid: h.Gid, perm: mode & (fs.ModePerm | fs.ModeSticky)}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s export %s: %v", cli, image, err)
	}
	return tree
}
