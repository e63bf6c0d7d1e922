package process

import (
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/kit/suite/certs"
)

// parent is a process that runs children.
type parent struct {
	service
	Children
}

func (c *parent) Register(fs *flag.FlagSet) {
	c.service.Register(fs)
	c.Children.Register(fs)
}

// leafFiles mints a CA and a leaf into dir and returns the --tls-* flags
// naming them.
func leafFiles(t *testing.T, dir string) []string {
	t.Helper()
	ca, err := certs.MintCA("ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := ca.Write(dir); err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Mint(certs.LeafSpec{Name: "x", Grade: "host", Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := leaf.Write(dir, "x"); err != nil {
		t.Fatal(err)
	}
	return []string{"--tls-ca", filepath.Join(dir, "ca.pem"), "--tls-cert", filepath.Join(dir, "x.pem"), "--tls-key", filepath.Join(dir, "x-key.pem")}
}

// stat is a file's owner, group and mode, as readableBy sees them.
type stat struct {
	uid, gid uint32
	mode     fs.FileMode
}

func (s stat) Name() string       { return "key.pem" }
func (s stat) Size() int64        { return 0 }
func (s stat) Mode() fs.FileMode  { return s.mode }
func (s stat) ModTime() time.Time { return time.Time{} }
func (s stat) IsDir() bool        { return false }
func (s stat) Sys() any           { return &syscall.Stat_t{Uid: s.uid, Gid: s.gid} }

func TestReadableByFollowsTheOwnerGroupAndOtherBits(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		st   stat
		uid  int
		gids []int
		want bool
	}{
		{"root reads anything", stat{1, 1, 0o000}, 0, []int{0}, true},
		{"a root-only key hides from another user", stat{0, 0, 0o600}, 65532, []int{65532}, false},
		{"a 0400 key hides from another user", stat{0, 0, 0o400}, 65532, []int{65532}, false},
		{"the owner reads its own key", stat{1000, 1000, 0o600}, 1000, []int{1000}, true},
		{"the owner class decides for the owner", stat{1000, 1000, 0o044}, 1000, []int{1000}, false},
		{"a group-readable key is read by the group", stat{0, 50, 0o640}, 1000, []int{7, 50}, true},
		{"a group-readable key hides from others", stat{0, 50, 0o640}, 1000, []int{1000}, false},
		{"a world-readable key is read by anyone", stat{0, 0, 0o644}, 1000, []int{1000}, true},
	} {
		if got := readableBy(tt.st, tt.uid, tt.gids); got != tt.want {
			t.Errorf("%s: readableBy = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A process whose children would run as a user that can read its key
// refuses to start, saying why and how to go on.
func TestConfineRefusesAKeyItsChildrenCouldRead(t *testing.T) {
	t.Parallel()
	tlsArgs := leafFiles(t, t.TempDir())
	var cfg parent
	p, err := Start("bridge", &cfg, tlsArgs, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Confine(cfg.Children)
	want := "could read its private key " + tlsArgs[5]
	if os.Geteuid() == 0 {
		want = "the programs the bridge runs would run as root and could read its private key " + tlsArgs[5] + ": start it with --run-as USER"
	}
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--children-may-read-key") {
		t.Fatalf("Confine = %v\nwant a refusal containing %q and naming --children-may-read-key", err, want)
	}

	var accepting parent
	p, err = Start("bridge", &accepting, append(tlsArgs, "--children-may-read-key"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Confine(accepting.Children); err != nil {
		t.Fatalf("with --children-may-read-key: %v", err)
	}

	var dev parent // dev mode has no key to keep
	if p, err = Start("bridge", &dev, []string{"--dev"}, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := p.Confine(dev.Children); err != nil {
		t.Fatalf("dev mode: %v", err)
	}
}

func TestRunAsRefusesRootAndNeedsRoot(t *testing.T) {
	t.Parallel()
	tlsArgs := leafFiles(t, t.TempDir())
	for _, tt := range []struct{ runAs, want string }{
		{"root", "--run-as root: that is root (uid 0, gid 0), which could read every key: name an unprivileged user"},
		{"0:65534", "--run-as 0:65534: that is root"},
		{"no-such-user-here", `--run-as no-such-user-here: no user "no-such-user-here"`},
		{"4242", "--run-as 4242: no passwd entry names uid 4242, so its group is unknown: give it as 4242:GID"},
	} {
		var cfg parent
		p, err := Start("host", &cfg, append(tlsArgs, "--run-as", tt.runAs), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Confine(cfg.Children); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("--run-as %s: %v\nwant %q", tt.runAs, err, tt.want)
		}
	}
	if os.Geteuid() != 0 {
		var cfg parent
		p, err := Start("host", &cfg, append(tlsArgs, "--run-as", "4242:4242"), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Confine(cfg.Children); err == nil || !strings.Contains(err.Error(), "needs the host to start as root") {
			t.Errorf("--run-as without root: %v", err)
		}
	}
}

// confineHelper is set in the environment of the test binary re-run by
// TestRunAsDropsToTheUserAndKeepsTheTLSInMemory: the drop is for the whole
// process, so it happens in a process of its own.
const confineHelper = "SWITCHBOARD_TEST_CONFINE_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(confineHelper); args != "" {
		os.Exit(confineAndReport(strings.Split(args, "\x1f")))
	}
	os.Exit(m.Run())
}

// confineAndReport starts a process with args, confines it, and reports
// who it is now, whether it still holds its TLS, and whether it can read
// its key file.
func confineAndReport(args []string) int {
	var cfg parent
	p, err := Start("host", &cfg, args, os.Stderr)
	if err != nil {
		fmt.Println("start:", err)
		return 1
	}
	if err := p.Confine(cfg.Children); err != nil {
		fmt.Println("confine:", err)
		return 1
	}
	c, err := p.ClientTLS()
	fmt.Printf("uid=%d euid=%d gid=%d\n", os.Getuid(), os.Geteuid(), os.Getgid())
	fmt.Println("tls in memory:", err == nil && c != nil && len(c.Certificates) == 1)
	if _, err := os.ReadFile(cfg.Security.Files.Key); err != nil {
		fmt.Println("key:", err)
	} else {
		fmt.Println("key: READ")
	}
	fmt.Printf("HOME=%s\n", os.Getenv("HOME"))
	return 0
}

// Started as root with --run-as, the process reads its TLS material, then
// becomes the user: it keeps its TLS in memory and can no longer read its
// key, nor become root again.
func TestRunAsDropsToTheUserAndKeepsTheTLSInMemory(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("dropping to another user needs root; the suite's tests run as root")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil { // the key's own mode is what must hide it
		t.Fatal(err)
	}
	tlsArgs := leafFiles(t, dir)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), confineHelper+"="+strings.Join(append(tlsArgs, "--run-as", "nobody"), "\x1f"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the confined process: %v\n%s", err, out)
	}
	for _, want := range []string{"uid=65534 euid=65534 gid=65534", "tls in memory: true", "key: open " + tlsArgs[5] + ": permission denied", "HOME=/nonexistent"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the confined process said:\n%s\nwant a line containing %q", out, want)
		}
	}
}
