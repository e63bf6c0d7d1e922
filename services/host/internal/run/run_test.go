package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/host/internal/toolsfile"
)

func tool(t *testing.T, subjectCwd bool, argv ...string) *toolsfile.Tool {
	t.Helper()
	file := `[{"name":"t","description":"","input_schema":{"type":"object"},"command":` + quote(argv) + `,"subject_cwd":` + map[bool]string{true: "true", false: "false"}[subjectCwd] + `}]`
	tools, err := toolsfile.Parse([]byte(file), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &tools[0]
}

func quote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = `"` + strings.ReplaceAll(strings.ReplaceAll(a, `\`, `\\`), `"`, `\"`) + `"`
	}
	return "[" + strings.Join(q, ",") + "]"
}

var lim = Limits{Deadline: 5 * time.Second, Grace: 200 * time.Millisecond, MaxOutput: 1 << 10}

func TestRun(t *testing.T) {
	t.Parallel()
	abs := t.TempDir()
	rel := "relative/dir"
	tests := []struct {
		name      string
		tool      *toolsfile.Tool
		inv       Invocation
		lim       Limits
		stdout    string
		stderrHas string
		code      int32
		stdoutHas string
	}{
		{name: "the input JSON arrives on stdin and stdout comes back", tool: tool(t, false, "cat"),
			inv: Invocation{Tool: "t", Input: `{"a":[1,null]}`}, stdout: `{"a":[1,null]}`},
		{name: "the exit code passes through", tool: tool(t, false, "sh", "-c", "echo oops >&2; exit 3"),
			stderrHas: "oops", code: 3},
		{name: "no shell interpolates the argv", tool: tool(t, false, "echo", "$HOME;", "`id`"),
			stdout: "$HOME; `id`\n"},
		{name: "the invocation id reaches the tool as its idempotency key", tool: tool(t, false, "sh", "-c", `printf %s "$SWITCHBOARD_INVOCATION"`),
			inv: Invocation{ID: "inv-123", Tool: "t"}, stdout: "inv-123"},
		{name: "a tool past its deadline is stopped with 124", tool: tool(t, false, "sleep", "30"),
			lim:  Limits{Deadline: 100 * time.Millisecond, Grace: 100 * time.Millisecond, MaxOutput: 1024},
			code: 124, stderrHas: "ran past its deadline of 100ms"},
		{name: "a tool that ignores SIGTERM is killed after the grace", tool: tool(t, false, "sh", "-c", "trap '' TERM; sleep 30"),
			lim:  Limits{Deadline: 100 * time.Millisecond, Grace: 100 * time.Millisecond, MaxOutput: 1024},
			code: 124, stderrHas: "ran past its deadline"},
		{name: "a program that cannot start is 127", tool: tool(t, false, "/no/such/program"),
			code: 127, stderrHas: "cannot start tool"},
		{name: "a cwd for a tool without subject_cwd is refused", tool: tool(t, false, "pwd"),
			inv: Invocation{Tool: "t", Cwd: &abs}, code: 1, stderrHas: "does not take a cwd"},
		{name: "a relative cwd is refused", tool: tool(t, true, "pwd"),
			inv: Invocation{Tool: "t", Cwd: &rel}, code: 1, stderrHas: "is not an absolute path"},
		{name: "a subject_cwd tool runs in the invocation's cwd", tool: tool(t, true, "pwd"),
			inv: Invocation{Tool: "t", Cwd: &abs}, stdout: resolve(abs) + "\n"},
		{name: "output past the bound is cut and counted", tool: tool(t, false, "head", "-c", "100000", "/dev/zero"),
			stdoutHas: "[truncated: 98976 more bytes not shown]"},
		{name: "invalid UTF-8 becomes U+FFFD", tool: tool(t, false, "printf", `ok\377`), stdout: "ok\uFFFD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := tt.lim
			if l.Deadline == 0 {
				l = lim
				l.Roots = Roots{resolve(abs)}
			}
			inv := tt.inv
			if inv.Tool == "" {
				inv.Tool = "t"
			}
			if inv.Input == "" {
				inv.Input = "{}"
			}
			start := time.Now()
			c := Run(context.Background(), tt.tool, inv, l)
			if c.GetExitCode() != tt.code {
				t.Fatalf("exit_code = %d, want %d (stderr %q)", c.GetExitCode(), tt.code, c.GetStderr())
			}
			if tt.stdout != "" && c.GetStdout() != tt.stdout {
				t.Fatalf("stdout = %q, want %q", c.GetStdout(), tt.stdout)
			}
			if !strings.Contains(c.GetStdout(), tt.stdoutHas) {
				t.Fatalf("stdout = %q, want it to hold %q", c.GetStdout(), tt.stdoutHas)
			}
			if !strings.Contains(c.GetStderr(), tt.stderrHas) {
				t.Fatalf("stderr = %q, want it to hold %q", c.GetStderr(), tt.stderrHas)
			}
			if tt.code == 124 && time.Since(start) > 5*time.Second {
				t.Fatalf("a stopped tool took %v to come back", time.Since(start))
			}
		})
	}
}

// A cwd runs a tool only under the host's roots, once cleaned and with its
// symlinks resolved: neither "..", nor a link out of a root, nor another
// absolute path (/root/.ssh) leaves them; a host without roots takes none.
func TestACwdMustLieUnderTheHostsRoots(t *testing.T) {
	t.Parallel()
	root, outside := resolve(t.TempDir()), resolve(t.TempDir())
	for _, d := range []string{filepath.Join(root, "work", "deep")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(root, "work", "out")); err != nil {
		t.Fatal(err)
	}
	l := lim
	l.Roots = Roots{root}
	for _, tc := range []struct{ cwd, stdout, stderr string }{
		{root + "/work/deep", root + "/work/deep\n", ""},
		{root + "/work/deep/../.", root + "/work\n", ""},
		{root + "/work/../../" + filepath.Base(outside), "", "outside the directories this host runs tools in (" + root + ": --cwd-roots)"},
		{root + "/work/out", "", `cwd "` + root + `/work/out" is ` + outside + ", outside the directories"},
		{"/root/.ssh", "", `cwd "/root/.ssh"`},
		{root + "/work/nothing", "", "no such file or directory"},
	} {
		c := Run(context.Background(), tool(t, true, "pwd"), Invocation{Tool: "t", Input: "{}", Cwd: &tc.cwd}, l)
		if c.GetStdout() != tc.stdout || !strings.Contains(c.GetStderr(), tc.stderr) || (tc.stderr != "" && c.GetExitCode() != 1) {
			t.Errorf("cwd %s: exit %d, stdout %q, stderr %q; want stdout %q, stderr holding %q", tc.cwd, c.GetExitCode(), c.GetStdout(), c.GetStderr(), tc.stdout, tc.stderr)
		}
	}
	c := Run(context.Background(), tool(t, true, "pwd"), Invocation{Tool: "t", Input: "{}", Cwd: &root}, lim)
	if !strings.Contains(c.GetStderr(), "this host takes no cwd: it runs in / and --cwd-roots names no directory") {
		t.Errorf("a host without roots ran a tool in %s: %v", root, c)
	}
}

// --cwd-roots is absolute directories, resolved; empty is the working
// directory.
func TestParseRoots(t *testing.T) {
	t.Parallel()
	wd, _ := os.Getwd()
	if r, err := ParseRoots(""); err != nil || len(r) != 1 || r[0] != resolve(wd) {
		t.Errorf("ParseRoots(\"\") = %v, %v; want the working directory %s", r, err, wd)
	}
	for _, bad := range []string{"relative", "/no/such/dir", "/etc/passwd"} {
		if _, err := ParseRoots(bad); err == nil || !strings.Contains(err.Error(), "--cwd-roots") {
			t.Errorf("ParseRoots(%q) = %v; want a refusal naming --cwd-roots", bad, err)
		}
	}
}

func TestCancelStopsTheTool(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := filepath.Join(t.TempDir(), "started")
	slow := tool(t, false, "/bin/sh", "-c", `: > "$0"; exec sleep 30`, started) // says when it runs
	done := make(chan *mailboxv1.Capture, 1)
	go func() { done <- Run(ctx, slow, Invocation{Tool: "t", Input: "{}"}, lim) }()
	testkit.Eventually(t, "the tool to start", 10*time.Second, func() bool {
		_, err := os.Stat(started)
		return err == nil
	})
	cancel()
	c := <-done
	if c.GetExitCode() != 124 || !strings.Contains(c.GetStderr(), "was stopped") {
		t.Fatalf("capture = %v", c)
	}
}
