package plugin

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A backend's ask about the request in flight reaches the call's driver,
// and the driver's answer (or error) comes back under the ask's key; an
// ask about another request is only a notice; a driver that cannot be
// asked, or an ask that is not one, is answered at once with an error.
func TestABackendsQuestionReachesTheDriverAndItsAnswerComesBack(t *testing.T) {
	t.Parallel()
	b, r := start(t, nil, 0)
	run := func(method string, hear Hearing) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		args, _ := json.Marshal(map[string]string{"text": method})
		c, answer := b.Submit(ctx, "ask", string(args), hear).Wait()
		if !answer {
			t.Fatalf("ask %s was not answered", method)
		}
		return c.GetStdout()
	}
	var mu sync.Mutex // the driver is asked on a goroutine of the bridge's
	var asked []string
	driver := Hearing{Ask: func(_ context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, method+" "+string(params))
		if method == "sampling/createMessage" {
			return nil, &jsonrpc.Error{Code: -1, Message: "no model here"}
		}
		return json.RawMessage(`{"action":"accept","content":{"sure":true}}`), nil
	}}
	if got := run("", driver); got != `{"error":null,"result":{"action":"accept","content":{"sure":true}}}` {
		t.Errorf("an answered ask replied %s; want the driver's answer", got)
	}
	if got := run("sampling/createMessage", driver); got != `{"error":{"code":-1,"message":"no model here"},"result":null}` {
		t.Errorf("a refused ask replied %s; want the driver's error", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{`elicitation/create {"message":"Sure?"}`, `sampling/createMessage {"message":"Sure?"}`}; !slices.Equal(asked, want) {
		t.Errorf("the driver was asked %q; want %q (the ask about another request never)", asked, want)
	}
	for method, says := range map[string]string{
		"":           `"code":-32601,"message":"elicitation/create: the call's agent cannot be asked`,
		"tools/call": `"code":-32602,"message":"ask: method \"tools/call\" is not one a driver can be asked`,
	} {
		if got := run(method, Hearing{}); !strings.Contains(got, says) {
			t.Errorf("ask %q of a driver that cannot be asked replied %s; want an error saying %s", method, got, says)
		}
	}
	notices, _, _ := r.snapshot()
	if !slices.ContainsFunc(notices, func(n string) bool {
		return strings.Contains(n, "ignored an ask about request 1001, which is not in flight")
	}) {
		t.Errorf("notices %q; want the ask about another request ignored", notices)
	}
}
