package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/status"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

// targets are the clients every driver calls in turn: the tool host and
// the exclusive mount; each serves a tool "echo" answering its input.
var targets = []string{"laptop", "solo"}

// A driver is a user calling echo steadily through one way in, from two
// callers, retrying a refusal that says "try again" as a person would.
type driver struct {
	name string
	// call calls client's echo with text; it returns the answer and, where
	// the way in shows it, the invocation; or a refusal (its text is the
	// sentence the user read), errLost when no answer nor refusal came.
	call func(ctx context.Context, client, text string) (answer, id string, err error)

	done atomic.Bool
	wg   sync.WaitGroup

	mu    sync.Mutex
	calls []*callRecord
}

// errLost marks a call that was neither answered nor refused.
var errLost = errors.New("lost")

type callRecord struct {
	client, text string
	began, ended time.Time
	settled      bool
	answer, id   string
	refusal      error
	retries      int
}

func (d *driver) start() {
	for caller := range 2 {
		d.wg.Go(func() {
			for n := 0; !d.done.Load(); n++ {
				r := &callRecord{client: targets[(n+caller)%len(targets)], began: time.Now()}
				d.mu.Lock()
				r.text = fmt.Sprintf("%s.%06d.", d.name, len(d.calls))
				d.calls = append(d.calls, r)
				d.mu.Unlock()
				d.settle(r)
			}
		})
	}
}

// settle makes r's call, again while it is refused with "try again".
func (d *driver) settle(r *callRecord) {
	for {
		ctx, cancel := callCtx(context.Background())
		answer, id, err := d.call(ctx, r.client, r.text)
		cancel()
		if err != nil && strings.Contains(err.Error(), "try again") && !d.done.Load() && time.Since(r.began) < time.Minute {
			r.retries++
			time.Sleep(200 * time.Millisecond) // a person reading the sentence
			continue
		}
		d.mu.Lock()
		r.settled, r.ended, r.answer, r.id, r.refusal = true, time.Now(), answer, id, err
		d.mu.Unlock()
		return
	}
}

// stop ends the calls, waiting for those under way to settle.
func (d *driver) stop() { d.done.Store(true); d.wg.Wait() }

// answered is how many calls to client have been answered.
func (d *driver) answered(client string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, r := range d.calls {
		if r.settled && r.refusal == nil && r.client == client {
			n++
		}
	}
	return n
}

func (d *driver) waitAnswered(t *testing.T, client string, n int, when string) {
	t.Helper()
	testkit.Eventually(t, fmt.Sprintf("%s: %d calls to %s answered %s", d.name, n, client, when), 90*time.Second,
		func() bool { return d.answered(client) >= n })
}

// firstAnswerAfter waits for a call to client ("" for any) begun at or
// after since to be answered, and returns how long after since the first
// such answer came.
func (d *driver) firstAnswerAfter(t *testing.T, client string, since time.Time) time.Duration {
	t.Helper()
	var first time.Duration
	testkit.Eventually(t, d.name+": a call begun after the kill answered", 90*time.Second, func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, r := range d.calls {
			if r.settled && r.refusal == nil && !r.began.Before(since) && (client == "" || r.client == client) {
				if took := r.ended.Sub(since); first == 0 || took < first {
					first = took
				}
			}
		}
		return first != 0
	})
	return first.Round(time.Millisecond)
}

// tally checks every call of a stopped driver: answered with its own
// input, the host's invocations (where the way in shows them) run once
// (ran counts the runs by invocation), or refused with a sentence.
func (d *driver) tally(t *testing.T, ran map[string]int) {
	t.Helper()
	var answered, refused, retried int
	var slowest time.Duration
	for _, r := range d.calls {
		switch {
		case !r.settled:
			t.Errorf("%s: the call %s to %s never settled", d.name, r.text, r.client)
		case errors.Is(r.refusal, errLost):
			t.Errorf("%s: the call %s to %s was lost: %v", d.name, r.text, r.client, r.refusal)
		case r.refusal != nil && strings.TrimSpace(r.refusal.Error()) == "":
			t.Errorf("%s: the call %s to %s was refused with no sentence", d.name, r.text, r.client)
		case r.refusal != nil:
			refused++
			t.Logf("%s: the call %s to %s, begun %s, was refused: %v", d.name, r.text, r.client, r.began.Format("15:04:05.000"), r.refusal)
		case !strings.Contains(r.answer, r.text):
			t.Errorf("%s: the call %s to %s was answered %q, not with its own input", d.name, r.text, r.client, r.answer)
		case r.client == "laptop" && r.id != "" && ran[r.id] != 1:
			t.Errorf("%s: the call %s was answered by invocation %s, which the host ran %d times; want once", d.name, r.text, r.id, ran[r.id])
		default:
			answered++
			slowest = max(slowest, r.ended.Sub(r.began))
			if took := r.ended.Sub(r.began); took > 10*time.Second {
				t.Logf("%s: the call %s to %s (%s), begun %s, was answered after %v", d.name, r.text, r.client, r.id,
					r.began.Format("15:04:05.000"), took.Round(time.Millisecond))
			}
		}
		if r.retries > 0 {
			retried++
		}
	}
	t.Logf("%s: %d calls, %d answered with their own input (the slowest in %v), %d refused with a sentence, %d retried after \"try again\"",
		d.name, len(d.calls), answered, slowest.Round(time.Millisecond), refused, retried)
}

// grpcDriver calls through the mailbox replicas at addrs (one connection
// balanced over them), as a gRPC client does.
func grpcDriver(t *testing.T, addrs string) *driver {
	mb := mailboxv1.NewMailboxServiceClient(testkit.Dial(t, addrs))
	return &driver{name: "grpc", call: func(ctx context.Context, client, text string) (string, string, error) {
		ctx = identity.As(ctx, identity.Identity{Name: "driver", Grade: identity.Driver})
		res, err := mb.Call(ctx, &mailboxv1.CallRequest{Client: client, Tool: "echo", Input: echoInput(text)})
		if err != nil {
			return "", "", errors.New(status.Convert(err).Message())
		}
		return res.GetCapture().GetStdout(), res.GetInvocation(), nil
	}}
}

func echoInput(text string) string { return `{"text":"` + text + `"}` }

// actDriver posts an invoke to /v1/act at url and collects its capture,
// naming the collection with a retry key so that it may collect again
// through another gateway when the one waiting for it dies.
func actDriver(url string) *driver {
	hc := &http.Client{Timeout: time.Minute}
	post := func(ctx context.Context, body string) (int, []byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/act", strings.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("Switchboard-Identity", "driver")
		req.Header.Set("Switchboard-Grade", string(identity.Driver))
		res, err := hc.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer res.Body.Close()
		out, err := io.ReadAll(res.Body)
		return res.StatusCode, out, err
	}
	return &driver{name: "act", call: func(ctx context.Context, client, text string) (string, string, error) {
		code, out, err := post(ctx, `{"op":"invoke","client":"`+client+`","tool":"echo","input":`+echoInput(text)+`}`)
		if err != nil {
			return "", "", err
		}
		var inv struct {
			Invocation string
			Error      string
			Capture    *struct{ Stdout string }
		}
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
		return "", id, fmt.Errorf("%w: the capture of %s did not come: %v", errLost, id, ctx.Err())
	}}
}

// refusal is the sentence of a refused /v1/act request: the envelope's
// error, or the front's plain text.
func refusal(code int, body []byte) error {
	var env struct{ Error string }
	if json.Unmarshal(body, &env) == nil && env.Error != "" {
		return fmt.Errorf("%d %s", code, env.Error)
	}
	return fmt.Errorf("%d %s", code, bytes.TrimSpace(body))
}

// mcpDriver calls from one MCP session of protocol revision rev through
// the endpoint at url, the same session throughout.
func mcpDriver(t *testing.T, url, rev string) *driver {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := procs.MCPDriver(ctx, url+"/mcp", rev)
	if err != nil {
		t.Fatalf("an MCP session of %s through the front: %v", rev, err)
	}
	t.Cleanup(func() { cs.Close() })
	return &driver{name: "mcp-" + rev, call: func(ctx context.Context, client, text string) (string, string, error) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: client + "_echo", Arguments: map[string]any{"text": text}})
		if err != nil {
			return "", "", err
		}
		if res.IsError {
			return "", "", errors.New(procs.Texts(res))
		}
		return procs.Texts(res), "", nil
	}}
}
