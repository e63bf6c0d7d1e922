package drill

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

// GRPC calls through mb (one connection, balanced over the mailbox
// replicas it was dialed with) with the mailbox's Call, each call's
// context made by as (the identity it asserts, or as it is under TLS).
func GRPC(mb mailboxv1.MailboxServiceClient, as func(context.Context) context.Context, targets []Target) *Driver {
	return New("grpc", targets, func(ctx context.Context, target Target, text string) (string, string, error) {
		res, err := mb.Call(as(ctx), &mailboxv1.CallRequest{Client: target.Client, Tool: target.Tool, Input: target.Input(text)})
		if err != nil {
			return "", "", errors.New(status.Convert(err).Message())
		}
		c, id := res.GetCapture(), res.GetInvocation()
		if c == nil { // still running at the call's deadline: collect it by its handle, as its user would
			if c, err = collect(as(context.WithoutCancel(ctx)), mb, id, "k"+text); err != nil {
				return "", id, err
			}
		}
		return answer(c.GetStdout(), c.GetStderr(), c.GetExitCode(), id)
	})
}

// collect collects invocation id for up to another CallTimeout, under the
// retry key key; a capture that does not come by then is lost.
func collect(ctx context.Context, mb mailboxv1.MailboxServiceClient, id, key string) (*mailboxv1.Capture, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	for ctx.Err() == nil {
		res, err := mb.Capture(ctx, &mailboxv1.CaptureRequest{Invocation: id, Wait: durationpb.New(20 * time.Second), RetryKey: &key})
		switch {
		case err == nil && res.GetCapture() != nil:
			return res.GetCapture(), nil
		case err != nil && status.Code(err) != codes.Unavailable && ctx.Err() == nil:
			return nil, fmt.Errorf("collecting %s, still running at the call's deadline: %s", id, status.Convert(err).Message())
		case err != nil:
			time.Sleep(200 * time.Millisecond) // its replica is going or gone: another answers
		}
	}
	return nil, fmt.Errorf("%w: %s, still running at the call's deadline, was not answered %v later", ErrLost, id, CallTimeout)
}

// answer is a capture as the drill reads it: a failed run is a refusal
// whose sentence is its stderr, as the MCP endpoint's isError result is.
func answer(stdout, stderr string, exitCode int32, id string) (string, string, error) {
	if exitCode != 0 {
		return "", id, fmt.Errorf("%s exited %d: %s", id, exitCode, stderr)
	}
	return stdout, id, nil
}

// Act posts an invoke to /v1/act at url with hc, each request carrying
// header, and collects its capture, naming the collection with a retry key
// so that it may collect again through another gateway when the one
// waiting for it dies.
func Act(url string, hc *http.Client, header http.Header, targets []Target) *Driver {
	post := func(ctx context.Context, body string) (int, []byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/act", strings.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		for k, v := range header {
			req.Header[k] = v
		}
		res, err := hc.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer res.Body.Close()
		out, err := io.ReadAll(res.Body)
		return res.StatusCode, out, err
	}
	return New("act", targets, func(ctx context.Context, target Target, text string) (string, string, error) {
		invoke, err := json.Marshal(map[string]any{"op": "invoke", "client": target.Client, "tool": target.Tool, "input": json.RawMessage(target.Input(text))})
		if err != nil {
			return "", "", err
		}
		code, out, err := post(ctx, string(invoke))
		if err != nil {
			return "", "", err
		}
		var inv struct{ Invocation string }
		if code != http.StatusOK || json.Unmarshal(out, &inv) != nil || inv.Invocation == "" {
			return "", "", refusal(code, out)
		}
		id := inv.Invocation
		for ctx.Err() == nil {
			code, out, err := post(ctx, `{"op":"capture","invocation":"`+id+`","wait":"20s","retry_key":"k`+text+`"}`)
			switch {
			case err == nil && code == http.StatusOK:
				var got struct {
					Capture *struct {
						Stdout, Stderr string
						ExitCode       int32 `json:"exit_code"`
					}
				}
				if err := json.Unmarshal(out, &got); err != nil {
					return "", id, fmt.Errorf("the capture of %s is not JSON: %s", id, out)
				}
				if got.Capture != nil {
					return answer(got.Capture.Stdout, got.Capture.Stderr, got.Capture.ExitCode, id)
				}
			case err == nil && code != http.StatusBadGateway && code != http.StatusServiceUnavailable:
				return "", id, refusal(code, out)
			default: // the gateway waiting for it died, or lost its mailbox
				time.Sleep(200 * time.Millisecond)
			}
		}
		return "", id, fmt.Errorf("%w: the capture of %s did not come: %v", ErrLost, id, ctx.Err())
	})
}

// refusal is the sentence of a refused /v1/act request: the envelope's
// error, or a front's plain text.
func refusal(code int, body []byte) error {
	var env struct{ Error string }
	if json.Unmarshal(body, &env) == nil && env.Error != "" {
		return fmt.Errorf("%d %s", code, env.Error)
	}
	return fmt.Errorf("%d %s", code, bytes.TrimSpace(body))
}

// MCP calls from the one MCP session cs, named name, the same session
// throughout; a target's tool is its presented name, <client>_<tool>.
func MCP(name string, cs *mcp.ClientSession, targets []Target) *Driver {
	return New(name, targets, func(ctx context.Context, target Target, text string) (string, string, error) {
		var args map[string]any
		if err := json.Unmarshal([]byte(target.Input(text)), &args); err != nil {
			return "", "", err
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: target.Client + "_" + target.Tool, Arguments: args})
		if err != nil {
			return "", "", err
		}
		if res.IsError {
			return "", "", errors.New(procs.Texts(res))
		}
		return procs.Texts(res), "", nil
	})
}
