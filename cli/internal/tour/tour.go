// Package tour reads the README's tour so a test can run it. Every
// ```console block is steps: each `$ ` line a command, and the lines after
// it the output the command must print.
package tour

import (
	"bufio"
	"regexp"
	"strings"
)

// Step is one command of the tour and what it must print.
type Step struct {
	Command string
	// Want are lines that must each appear in the output; "…" matches
	// anything (an invocation id, a timestamp).
	Want []string
}

// Background reports whether the step starts a process that keeps running.
func (s Step) Background() bool { return strings.HasSuffix(strings.TrimSpace(s.Command), "&") }

// Listens is the address a background step's command serves on (its
// `--listen HOST:PORT`), or "" when it names none.
func (s Step) Listens() string {
	f := strings.Fields(s.Command)
	for i, w := range f[:max(len(f)-1, 0)] {
		if w == "--listen" {
			return f[i+1]
		}
	}
	return ""
}

// Steps returns the tour's steps in order.
func Steps(readme string) []Step {
	var steps []Step
	in := false
	sc := bufio.NewScanner(strings.NewReader(readme))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```console"):
			in = true
		case strings.HasPrefix(line, "```"):
			in = false
		case !in:
		case strings.HasPrefix(line, "$ "):
			steps = append(steps, Step{Command: strings.TrimPrefix(line, "$ ")})
		case strings.TrimSpace(line) != "" && len(steps) > 0:
			steps[len(steps)-1].Want = append(steps[len(steps)-1].Want, strings.TrimSpace(line))
		}
	}
	return steps
}

// Matches reports whether want (a line of a step's Want) appears in out,
// with runs of spaces folded and "…" matching anything.
func Matches(want, out string) bool {
	parts := strings.Split(fold(want), "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(strings.Join(parts, ".*")).MatchString(fold(out))
}

var spaces = regexp.MustCompile(` {2,}`)

func fold(s string) string { return spaces.ReplaceAllString(s, " ") }
