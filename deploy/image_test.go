package deploy

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

// modulePath is the repository's module prefix: ./x in the build stage is
// modulePath/x.
const modulePath = "github.com/switchboard-run/switchboard/"

// imageBinary is a program the image ships and how a test gets the same
// program here.
type imageBinary struct {
	built string // /out/... in the build stage
	local func(testing.TB) string
}

// imageBinaries maps every program the final stage copies in to how it is
// built: `go build -o /out/x ./pkg` (built here with testkit.Build) or
// `GOBIN=/out go install pkg@version` (the same pinned tool in bin/).
func imageBinaries(t testing.TB) map[string]imageBinary {
	t.Helper()
	stages := dockerfile(t)
	built := map[string]func(testing.TB) string{}
	for _, c := range goCommands(t, stages[0]) {
		pkg := c.args[len(c.args)-1]
		switch c.args[0] {
		case "build":
			full := modulePath + strings.TrimPrefix(pkg, "./")
			built[flagValue(c.args, "o")] = func(t testing.TB) string { return testkit.Build(t, full) }
		case "install":
			name := path.Base(strings.Split(pkg, "@")[0])
			built[path.Join(envValue(c.env, "GOBIN"), name)] = func(t testing.TB) string { return testkit.Tool(t, name) }
		}
	}
	out := map[string]imageBinary{}
	for dest, cp := range stages[len(stages)-1].copies() {
		if local, ok := built[cp.src]; ok {
			out[dest] = imageBinary{built: cp.src, local: local}
		}
	}
	return out
}

func envValue(env []string, name string) string {
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, name+"="); ok {
			return v
		}
	}
	return ""
}

func TestDockerfileEntrypointIsTheBinaryComposeRuns(t *testing.T) {
	t.Parallel()
	final := finalStage(t)
	if !strings.HasPrefix(final.base, "gcr.io/distroless/static") && final.base != "scratch" {
		t.Errorf("the final stage is FROM %s; want a minimal static base", final.base)
	}
	var user string
	for _, in := range final.instrs {
		if in.cmd == "USER" {
			user = in.rest
		}
	}
	if user == "" || slices.Contains([]string{"0", "root", "0:0", "root:root"}, user) {
		t.Errorf("the image runs as %q; want a non-root user", user)
	}
	entry := final.entrypoint(t)
	bins := imageBinaries(t)
	if want := "/" + path.Base(switchboardPkg); len(entry) != 1 || entry[0] != want {
		t.Fatalf("ENTRYPOINT %q; compose's commands are arguments of %s", entry, want)
	}
	if b, ok := bins[entry[0]]; !ok || !strings.HasSuffix(b.built, "/"+path.Base(switchboardPkg)) {
		t.Errorf("the entrypoint %s is not the switchboard binary the build stage builds (copies: %v)", entry[0], final.copies())
	}
	root := testkit.RepoRoot(t)
	for _, file := range composeFiles {
		for name, s := range loadComposeFile(t, file, nil).Services {
			if s.Entrypoint != nil {
				t.Errorf("%s: %s overrides the entrypoint with %q", file, name, s.Entrypoint)
			}
			if s.Build == nil || s.Build.Context != root || (s.Build.Dockerfile != "" && s.Build.Dockerfile != "Dockerfile") {
				t.Errorf("%s: %s builds %+v; want this Dockerfile, so `docker compose up` builds a missing image", file, name, s.Build)
			}
		}
	}
}

func TestDockerfileBuildsStaticBinaries(t *testing.T) {
	t.Parallel()
	stages := dockerfile(t)
	copies := stages[len(stages)-1].copies()
	shipped := map[string]bool{}
	for _, cp := range copies {
		shipped[cp.src] = true
	}
	root, tmp := testkit.RepoRoot(t), t.TempDir()
	cmds := goCommands(t, stages[0])
	if len(cmds) == 0 {
		t.Fatal("the build stage runs no go command")
	}
	for _, c := range cmds {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			if !slices.Contains(c.env, "CGO_ENABLED=0") {
				t.Errorf("env %v: want CGO_ENABLED=0 (the final image has no C library)", c.env)
			}
			switch c.args[0] {
			case "install":
				pkg := c.args[len(c.args)-1]
				name := path.Base(strings.Split(pkg, "@")[0])
				if !shipped[path.Join(envValue(c.env, "GOBIN"), name)] {
					t.Errorf("%s is installed but the final stage does not copy it", name)
				}
				checkPinned(t, root, pkg)
			case "build":
				out := flagValue(c.args, "o")
				if !shipped[out] {
					t.Errorf("%s is built but the final stage does not copy it", out)
				}
				// Run the Dockerfile's own command here, into a temp dir.
				args := slices.Clone(c.args)
				args[slices.Index(args, out)] = filepath.Join(tmp, path.Base(out))
				cmd := exec.Command("go", args...)
				cmd.Dir, cmd.Env = root, append(os.Environ(), c.env...)
				if b, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("go %v: %v\n%s", args, err, b)
				}
				if err := static(filepath.Join(tmp, path.Base(out))); err != nil {
					t.Error(err)
				}
			default:
				t.Errorf("go %s: the build stage only builds and installs", c.args[0])
			}
		})
	}
}

// static refuses an ELF file that needs a dynamic loader.
func static(file string) error {
	f, err := elf.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			return fmt.Errorf("%s has a %v program header: it is dynamically linked", filepath.Base(file), p.Type)
		}
	}
	return nil
}

// checkPinned refuses a `go install pkg@version` whose module version is
// not the one tools/go.mod pins for the tests, so the image runs the server
// the tests ran.
func checkPinned(t *testing.T, root, pkg string) {
	t.Helper()
	target, version, ok := strings.Cut(pkg, "@")
	b, err := os.ReadFile(filepath.Join(root, "tools", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^\s*(\S+) (v\S+)`).FindAllStringSubmatch(string(b), -1) {
		if strings.HasPrefix(target, m[1]+"/") {
			if !ok || version != m[2] {
				t.Errorf("the image installs %s; tools/go.mod pins %s %s", pkg, m[1], m[2])
			}
			return
		}
	}
	t.Errorf("the image installs %s, which tools/go.mod does not pin", pkg)
}

func TestDockerfileOwnsTheVolumeMountPoints(t *testing.T) {
	t.Parallel()
	final := finalStage(t)
	var user string
	for _, in := range final.instrs {
		if in.cmd == "USER" {
			user = in.rest
		}
	}
	copies := final.copies()
	for _, file := range composeFiles {
		for name, s := range loadComposeFile(t, file, nil).Services {
			if slices.Contains([]string{"0", "0:0", "root", "root:root"}, s.User) {
				continue // root writes anywhere, and the certs step gives away what it writes (--owner)
			}
			for _, m := range s.Volumes {
				if m.Type != "volume" {
					continue
				}
				// A new named volume takes the owner of the image's directory
				// it is mounted on; a missing directory would be root's.
				if cp, ok := copies[m.Target]; !ok || cp.chown != user {
					t.Errorf("%s: %s mounts volume %s at %s, which the image does not create owned by %s", file, name, m.Source, m.Target, user)
				}
			}
		}
	}
}

func TestDockerignoreKeepsLocalFilesOut(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(testkit.RepoRoot(t), ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for _, want := range []string{".git", "bin/", ".data/", "bench/results.json"} {
		if !slices.Contains(lines, want) {
			t.Errorf(".dockerignore does not leave out %s", want)
		}
	}
}
