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
	"google.golang.org/grpc/status"

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
		return res.GetCapture().GetStdout(), res.GetInvocation(), nil
	})
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
				var got struct{ Capture *struct{ Stdout string } }
				if err := json.Unmarshal(out, &got); err != nil {
					return "", id, fmt.Errorf("the capture of %s is not JSON: %s", id, out)
				}
				if got.Capture != nil {
					return got.Capture.Stdout, id, nil
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
