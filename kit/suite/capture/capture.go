// Package capture builds the result of a routed call — the stdio tool
// contract {stdout, stderr, exit_code} — the same way in every component
// that makes one: the mailbox, the tool host and the bridge.
package capture

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
)

// Exit codes with a meaning across the suite, after the shell's.
const (
	// ExitError is a tool's failure (an MCP isError, a JSON-RPC error).
	ExitError = 1
	// ExitTimeout is a tool killed at its deadline.
	ExitTimeout = 124
	// ExitNotFound is an unknown tool or a program that would not start.
	ExitNotFound = 127
	// ExitCancelled is an invocation its poster cancelled.
	ExitCancelled = 130
)

// New returns a capture with every field set.
func New(stdout, stderr string, exitCode int32) *mailboxv1.Capture {
	return &mailboxv1.Capture{Stdout: proto.String(stdout), Stderr: proto.String(stderr), ExitCode: proto.Int32(exitCode)}
}

// Failed is a capture with nothing on stdout, the sentence on stderr, and
// the exit code.
func Failed(exitCode int32, format string, args ...any) *mailboxv1.Capture {
	return New("", fmt.Sprintf(format, args...), exitCode)
}

// Text turns a tool's output bytes into text once, at the edge: invalid
// UTF-8 becomes U+FFFD, so nothing downstream carries an encoding case.
func Text(b []byte) string {
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// Cap cuts s to at most limit characters (runes) and says so at the end;
// limit <= 0 leaves s whole.
func Cap(s string, limit int) string {
	if limit <= 0 || len(s) <= limit { // bytes >= runes: short strings are done
		return s
	}
	n := utf8.RuneCountInString(s)
	if n <= limit {
		return s
	}
	cut := 0
	for i := range s {
		if cut == limit {
			return s[:i] + fmt.Sprintf("\n[truncated: %d more characters not shown]", n-limit)
		}
		cut++
	}
	return s
}
