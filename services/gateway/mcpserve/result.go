package mcpserve

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/jsontext"
)

// fromCapture maps a capture (the stdio tool contract) to a tools/call
// result:
//
//   - exit code 0: stdout as text content; a non-empty stderr follows as a
//     second block, because the mailbox writes there what a model must read
//     (a capture that may reflect more than one run);
//   - any other exit code: isError, with "exit code N" and stderr first,
//     then stdout when there is any;
//   - a tool that declares an output schema and printed a JSON object on
//     success also gets that object as structuredContent (its text stays in
//     the content, as MCP asks for clients that predate structured results).
func fromCapture(c *mailboxv1.Capture, hasOutputSchema bool) *mcp.CallToolResult {
	stdout, stderr, code := c.GetStdout(), c.GetStderr(), c.GetExitCode()
	res := &mcp.CallToolResult{Content: []mcp.Content{}}
	if code != 0 {
		res.IsError = true
		head := fmt.Sprintf("exit code %d", code)
		if stderr != "" {
			head += "\n" + stderr
		}
		res.Content = append(res.Content, &mcp.TextContent{Text: head})
		if stdout != "" {
			res.Content = append(res.Content, &mcp.TextContent{Text: stdout})
		}
		return res
	}
	if stdout != "" {
		res.Content = append(res.Content, &mcp.TextContent{Text: stdout})
		if hasOutputSchema && jsontext.CheckObject("stdout", stdout) == nil {
			res.StructuredContent = json.RawMessage(stdout)
		}
	}
	if stderr != "" {
		res.Content = append(res.Content, &mcp.TextContent{Text: "stderr:\n" + stderr})
	}
	return res
}

// refusal is a call that produced no capture: isError with the sentence.
func refusal(sentence string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: sentence}}}
}
