package audit

import (
	"unicode/utf8"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

// MaxContentBytes bounds each field of a recorded input or output, so an
// event stays small beside a batch's bounds (docs/security.md, "Audit").
const MaxContentBytes = 32 << 10

// Content is an invocation's input and output as the trail keeps them,
// each field cut at MaxContentBytes (at a character's edge) and named in
// truncated when it was.
func Content(input string, cwd *string, stdout, stderr, mcpResult string) *registryv1.AuditContent {
	c := &registryv1.AuditContent{}
	var cut []string
	keep := func(name, s string) string {
		if len(s) <= MaxContentBytes {
			return s
		}
		cut = append(cut, name)
		n := MaxContentBytes
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		return s[:n]
	}
	c.Input = keep("input", input)
	if cwd != nil {
		d := keep("cwd", *cwd)
		c.Cwd = &d
	}
	c.Stdout, c.Stderr, c.McpResult = keep("stdout", stdout), keep("stderr", stderr), keep("mcp_result", mcpResult)
	c.Truncated = cut
	return c
}
