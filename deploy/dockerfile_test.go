package deploy

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mattn/go-shellwords"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd   string            // FROM, RUN, COPY, ...
	flags map[string]string // its --name=value options (--from, --chown, --mount)
	rest  string            // what follows the options
}

// stage is one FROM and what follows it.
type stage struct {
	base, name string
	instrs     []instruction
}

// dockerfile reads the repository's Dockerfile, which has a build stage
// and a minimal final one.
func dockerfile(t testing.TB) []stage {
	t.Helper()
	stages := parseDockerfile(t, "Dockerfile")
	if len(stages) < 2 {
		t.Fatalf("Dockerfile has %d stages; want a build stage and a minimal final one", len(stages))
	}
	return stages
}

// parseDockerfile reads the repository's file name. It handles what our
// Dockerfiles use (comments, backslash continuations, instruction
// options); it is not a general Dockerfile parser.
func parseDockerfile(t testing.TB, name string) []stage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testkit.RepoRoot(t), name))
	if err != nil {
		t.Fatal(err)
	}
	var stages []stage
	var line string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		text := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(text, "#") || (text == "" && line == "") {
			continue
		}
		if cont, ok := strings.CutSuffix(text, "\\"); ok {
			line += cont + " "
			continue
		}
		line += text
		cmd, rest, _ := strings.Cut(line, " ")
		line = ""
		in := instruction{cmd: strings.ToUpper(cmd), flags: map[string]string{}}
		rest = strings.TrimSpace(rest)
		for strings.HasPrefix(rest, "--") {
			opt, after, _ := strings.Cut(rest, " ")
			k, v, _ := strings.Cut(strings.TrimPrefix(opt, "--"), "=")
			in.flags[k], rest = v, strings.TrimSpace(after)
		}
		in.rest = rest
		if in.cmd == "FROM" {
			words := strings.Fields(rest)
			st := stage{base: words[0]}
			if len(words) == 3 && strings.EqualFold(words[1], "AS") {
				st.name = words[2]
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			t.Fatalf("%s: %s before the first FROM", name, in.cmd)
		}
		stages[len(stages)-1].instrs = append(stages[len(stages)-1].instrs, in)
	}
	return stages
}

// finalStage is the stage the image is made of.
func finalStage(t testing.TB) stage {
	s := dockerfile(t)
	return s[len(s)-1]
}

// entrypoint is the final stage's ENTRYPOINT, which must be exec form.
func (s stage) entrypoint(t testing.TB) []string {
	t.Helper()
	var entry []string
	for _, in := range s.instrs {
		if in.cmd == "ENTRYPOINT" {
			if err := json.Unmarshal([]byte(in.rest), &entry); err != nil {
				t.Fatalf("ENTRYPOINT %s is not exec form (the image has no shell): %v", in.rest, err)
			}
		}
	}
	if len(entry) == 0 {
		t.Fatal("the final stage has no ENTRYPOINT")
	}
	return entry
}

// copied is one COPY --from of the final stage.
type copied struct {
	src   string // its path in the build stage
	chown string // its --chown, "" when none
}

// copies maps each path the final stage copies from the build stage to
// where it comes from.
func (s stage) copies() map[string]copied {
	out := map[string]copied{}
	for _, in := range s.instrs {
		if in.cmd == "COPY" && in.flags["from"] != "" {
			if f := strings.Fields(in.rest); len(f) == 2 {
				out[f[1]] = copied{src: f[0], chown: in.flags["chown"]}
			}
		}
	}
	return out
}

// goCommand is a `go build|install` the build stage runs.
type goCommand struct {
	env  []string // the NAME=value words before it
	args []string // after "go"
}

// goCommands reads the build stage's RUN lines that run the go command.
func goCommands(t testing.TB, s stage) []goCommand {
	t.Helper()
	var out []goCommand
	for _, in := range s.instrs {
		if in.cmd != "RUN" {
			continue
		}
		words, err := shellwords.Parse(in.rest)
		if err != nil {
			t.Fatalf("RUN %s: %v", in.rest, err)
		}
		var c goCommand
		for len(words) > 0 && envWord.MatchString(words[0]) {
			c.env, words = append(c.env, words[0]), words[1:]
		}
		if len(words) > 1 && words[0] == "go" {
			c.args = words[1:]
			out = append(out, c)
		}
	}
	return out
}

var envWord = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`)

// flagValue is the value of -name in a go command's args.
func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == "-"+name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, "-"+name+"="); ok {
			return v
		}
	}
	return ""
}

// makeImagesTag is the tag `make images` gives the image.
func makeImagesTag(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testkit.RepoRoot(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^images:.*\n\tdocker build -t (\S+) \.$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("the Makefile has no images target running `docker build -t TAG .`")
	}
	return string(m[1])
}
