package host_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// A real shell tool's '::ask::' line, run by a host process for a driver
// that answers, is a question its poster reads with Status; the poster's
// Answer reaches the tool on its answers descriptor, and the capture shows
// what the tool read.
func TestAToolsQuestionReachesThePosterAndItsAnswerTheTool(t *testing.T) {
	t.Parallel()
	h := startHosted(t, `[{"name":"confirm","description":"","input_schema":{"type":"object"},"command":["sh","-c",`+
		`"echo '::ask:: {\"key\":\"ok\",\"method\":\"elicitation/create\",\"params\":{\"message\":\"Proceed?\"}}' >&2; read -r a <&3; echo \"$a\""]}]`)
	inv, err := h.mb.Invoke(driver, &mailboxv1.InvokeRequest{Client: "box", Tool: "confirm", Input: "{}",
		McpParams: proto.String(`{"_meta":{"run.switchboard/answers":true}}`)})
	if err != nil {
		t.Fatal(err)
	}
	id := inv.GetInvocation()
	asked := func(ns []*mailboxv1.ProgressNote) bool { return len(ns) > 0 && ns[0].GetQuestion() != nil }
	notes, _ := testkit.Notes(driver, t, h.mb, id, asked)
	q := notes[0].GetQuestion()
	if q.GetMethod() != "elicitation/create" || q.GetParams() != `{"message":"Proceed?"}` || q.GetId() != "h1q1" {
		t.Fatalf("the question read: %v; want the tool's elicitation, named by its hand-off", q)
	}
	if _, err := h.mb.Answer(driver, &mailboxv1.AnswerRequest{Invocation: id, Question: q.GetId(), Result: `{"action":"accept"}`}); err != nil {
		t.Fatal(err)
	}
	var c *mailboxv1.Capture
	testkit.Eventually(t, "the capture", 30*time.Second, func() bool {
		res, err := h.mb.Capture(driver, &mailboxv1.CaptureRequest{Invocation: id})
		c = res.GetCapture()
		return err == nil && c != nil
	})
	if c.GetExitCode() != 0 || c.GetStdout() != `{"key":"ok","result":{"action":"accept"}}`+"\n" || c.GetStderr() != "" {
		t.Fatalf("the capture: %v; want the answer the tool read, and no ask line on stderr", c)
	}
}
