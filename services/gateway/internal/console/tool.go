package console

import (
	"context"
	"github.com/switchboard-run/switchboard/kit/suite/audit"
	"net/http"
	"net/url"
	"time"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
	"google.golang.org/protobuf/types/known/durationpb"
)

// toolView is one tool, its schemas laid out, and its form.
type toolView struct {
	Presented    string
	Client       string
	Tool         *registryv1.Tool
	InputSchema  string
	OutputSchema string
	Annotations  string
	Form         inputForm
}

// tool shows a tool by its presented name: the registry resolves it as
// the caller, so a tool outside the caller's workspaces is absent.
func (c *Console) tool(ctx context.Context, r *http.Request) (any, error) {
	return c.resolve(ctx, r.PathValue("name"))
}

func (c *Console) resolve(ctx context.Context, name string) (toolView, error) {
	res, err := c.Registry.ResolveTool(ctx, &registryv1.ResolveToolRequest{PresentedName: name})
	if err != nil {
		return toolView{}, err
	}
	t := res.GetTool()
	return toolView{
		Presented:    name,
		Client:       res.GetClient(),
		Tool:         t,
		InputSchema:  pretty(t.GetInputSchema()),
		OutputSchema: pretty(t.GetOutputSchema()),
		Annotations:  pretty(t.GetAnnotations()),
		Form:         formFor(t.GetInputSchema()),
	}, nil
}

// posted is an invocation the form made.
type posted struct {
	Invocation string
	Presented  string
	Client     string
	Tool       string
	Input      string
}

// invoke builds the input from the form and invokes the tool as the
// caller, the way POST /v1/invocations does; the page then follows the
// capture.
func (c *Console) invoke(ctx context.Context, r *http.Request, form url.Values) (any, error) {
	v, err := c.resolve(ctx, r.PathValue("name"))
	if err != nil {
		return nil, err
	}
	input, err := v.Form.inputFrom(form)
	if err != nil {
		return nil, badForm("%v", err)
	}
	req := &mailboxv1.InvokeRequest{Client: v.Client, Tool: v.Tool.GetName(), Input: input}
	if cwd := form.Get("cwd"); cwd != "" {
		req.Cwd = &cwd
	}
	res, err := c.Mailbox.Invoke(audit.WithFront(ctx, "console"), req)
	if err != nil {
		return nil, err
	}
	return posted{Invocation: res.GetInvocation(), Presented: v.Presented, Client: v.Client, Tool: v.Tool.GetName(), Input: pretty(input)}, nil
}

// captureWait is how long each capture read holds: the mailbox answers as
// soon as the capture lands, so this only sets how often the page is told
// the invocation is still running.
const captureWait = 20 * time.Second

// captureView is the state of an invocation the caller posted.
type captureView struct {
	Invocation string
	Waited     string
	Capture    *mailboxv1.Capture
	Media      []medium // the images and audio of an MCP server's result
}

// captureLive follows one invocation the caller posted until its capture
// arrives, as held capture reads on the caller's behalf (only the poster
// may collect a capture: someone else's handle is absent). The capture is
// read once; the page shows it.
func (c *Console) captureLive(w http.ResponseWriter, r *http.Request) {
	ctx, _, ok := caller(w, r)
	if !ok {
		return
	}
	inv := r.PathValue("invocation")
	start := time.Now()
	res, err := c.Mailbox.Capture(ctx, &mailboxv1.CaptureRequest{Invocation: inv})
	if err != nil {
		refuseErr(w, err)
		return
	}
	ev := startEvents(w)
	for res.GetCapture() == nil {
		if ev.render("capture", "capture", captureView{Invocation: inv, Waited: waited(start)}) != nil {
			return
		}
		res, err = c.Mailbox.Capture(ctx, &mailboxv1.CaptureRequest{Invocation: inv, Wait: durationpb.New(captureWait)})
		if err != nil {
			if ctx.Err() == nil {
				_, sentence := httperr.From(err)
				ev.refusal("capture", sentence)
			}
			return
		}
	}
	_ = ev.render("capture", "capture", captureView{Invocation: inv, Waited: waited(start), Capture: res.GetCapture(), Media: mediaOf(res.GetCapture())})
}

// waited is the time since start, to the millisecond under a minute.
func waited(start time.Time) string {
	d := time.Since(start)
	if d >= time.Minute {
		return age(d)
	}
	return d.Round(time.Millisecond).String()
}
