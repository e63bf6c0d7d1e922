// Package drill is the fault drill's load: drivers calling tools steadily,
// each through one way in (gRPC, /v1/act, an MCP session), while a test
// kills parts of the suite; then every call is tallied as answered with its
// own input, run once where its host records runs, or refused with a
// sentence. Anything else — lost, answered with another's output, run
// twice — fails the test. tests/faults runs it on processes, tests/compose
// on containers.
package drill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

// Target is a tool the drivers call in turn; its answer contains the text
// its input carries.
type Target struct {
	Client, Tool string
	// Input is the tool's input JSON carrying text.
	Input func(text string) string
	// Counted says its host records every run (Runs): an answered call of
	// it must have run exactly once.
	Counted bool
}

// Echo is a target whose tool "echo" answers its input, {"text":…}.
func Echo(client string, counted bool) Target {
	return Target{Client: client, Tool: "echo", Input: func(text string) string { return `{"text":"` + text + `"}` }, Counted: counted}
}

// CallFunc calls target with text and returns the answer and, where the
// way in shows it, the invocation; or a refusal (its text is the sentence
// the user read), wrapping ErrLost when neither answer nor refusal came.
type CallFunc func(ctx context.Context, target Target, text string) (answer, id string, err error)

// ErrLost marks a call that was neither answered nor refused.
var ErrLost = errors.New("lost")

// A Driver is a user calling the targets steadily through one way in, from
// two callers, retrying a refusal that says "try again" as a person would.
type Driver struct {
	Name    string
	targets []Target
	call    CallFunc

	done atomic.Bool
	wg   sync.WaitGroup

	mu    sync.Mutex
	calls []*record
}

type record struct {
	target       Target
	text         string
	began, ended time.Time
	settled      bool
	answer, id   string
	refusal      error
	retries      int
}

// New is a driver named name calling targets with call.
func New(name string, targets []Target, call CallFunc) *Driver {
	return &Driver{Name: name, targets: targets, call: call}
}

// Start starts the driver's two callers.
func (d *Driver) Start() {
	for caller := range 2 {
		d.wg.Go(func() {
			for n := 0; !d.done.Load(); n++ {
				r := &record{target: d.targets[(n+caller)%len(d.targets)], began: time.Now()}
				d.mu.Lock()
				r.text = fmt.Sprintf("%s.%06d.", d.Name, len(d.calls))
				d.calls = append(d.calls, r)
				d.mu.Unlock()
				d.settle(r)
			}
		})
	}
}

// CallTimeout bounds one call: long enough for a busy machine and a
// host moving to a surviving mailbox replica.
const CallTimeout = 45 * time.Second

// settle makes r's call, again while it is refused with "try again".
func (d *Driver) settle(r *record) {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
		answer, id, err := d.call(ctx, r.target, r.text)
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

// Stop ends the calls, waiting for those under way to settle.
func (d *Driver) Stop() { d.done.Store(true); d.wg.Wait() }

// Answered is how many calls to client have been answered.
func (d *Driver) Answered(client string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, r := range d.calls {
		if r.settled && r.refusal == nil && r.target.Client == client {
			n++
		}
	}
	return n
}

// GoOn waits until each target has answered n more calls than now, within
// timeout; when says what the calls went on after.
func (d *Driver) GoOn(t *testing.T, n int, when string, timeout time.Duration) {
	t.Helper()
	for _, target := range d.targets {
		want := d.Answered(target.Client) + n
		testkit.Eventually(t, fmt.Sprintf("%s: %d calls to %s answered %s", d.Name, want, target.Client, when), timeout,
			func() bool { return d.Answered(target.Client) >= want })
	}
}

// FirstAnswerAfter waits for a call to client ("" for any) begun at or
// after since to be answered, and returns how long after since the first
// such answer came.
func (d *Driver) FirstAnswerAfter(t *testing.T, client string, since time.Time, timeout time.Duration) time.Duration {
	t.Helper()
	var first time.Duration
	testkit.Eventually(t, d.Name+": a call begun after the fault answered", timeout, func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, r := range d.calls {
			if r.settled && r.refusal == nil && !r.began.Before(since) && (client == "" || r.target.Client == client) {
				if took := r.ended.Sub(since); first == 0 || took < first {
					first = took
				}
			}
		}
		return first != 0
	})
	return first.Round(time.Millisecond)
}

// Lost is the invocations of the calls lost with a handle (the way in
// showed one), for a test to ask after them once the load has stopped.
func (d *Driver) Lost() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, r := range d.calls {
		if r.settled && errors.Is(r.refusal, ErrLost) && r.id != "" {
			out = append(out, r.id)
		}
	}
	return out
}

// Tally checks every call of a stopped driver: answered with its own
// input, a counted target's invocations (where the way in shows them) run
// once (ran counts the runs by invocation), or refused with a sentence.
func (d *Driver) Tally(t *testing.T, ran map[string]int) {
	t.Helper()
	var answered, refused, retried int
	var slowest time.Duration
	for _, r := range d.calls {
		client := r.target.Client
		switch {
		case !r.settled:
			t.Errorf("%s: the call %s to %s never settled", d.Name, r.text, client)
		case errors.Is(r.refusal, ErrLost):
			t.Errorf("%s: the call %s to %s, begun %s, was lost: %v", d.Name, r.text, client, r.began.Format("15:04:05.000"), r.refusal)
		case r.refusal != nil && strings.TrimSpace(r.refusal.Error()) == "":
			t.Errorf("%s: the call %s to %s was refused with no sentence", d.Name, r.text, client)
		case r.refusal != nil:
			refused++
			t.Logf("%s: the call %s to %s, begun %s, was refused: %v", d.Name, r.text, client, r.began.Format("15:04:05.000"), r.refusal)
		case !strings.Contains(r.answer, r.text):
			t.Errorf("%s: the call %s to %s (%s), begun %s, was answered %q, not with its own input", d.Name, r.text, client, r.id,
				r.began.Format("15:04:05.000"), r.answer)
		case r.target.Counted && r.id != "" && ran[r.id] != 1:
			t.Errorf("%s: the call %s was answered by invocation %s, which the host ran %d times; want once", d.Name, r.text, r.id, ran[r.id])
		default:
			answered++
			slowest = max(slowest, r.ended.Sub(r.began))
			if took := r.ended.Sub(r.began); took > 10*time.Second {
				t.Logf("%s: the call %s to %s (%s), begun %s, was answered after %v", d.Name, r.text, client, r.id,
					r.began.Format("15:04:05.000"), took.Round(time.Millisecond))
			}
		}
		if r.retries > 0 {
			retried++
		}
	}
	t.Logf("%s: %d calls, %d answered with their own input (the slowest in %v), %d refused with a sentence, %d retried after \"try again\"",
		d.Name, len(d.calls), answered, slowest.Round(time.Millisecond), refused, retried)
}

// EchoTools is a tools file (`switchboard host --tools`) serving "echo",
// which answers its input and records each run — the invocation id, on a
// line of the file runs — for Runs to count.
func EchoTools(runs string) string {
	tools, err := json.Marshal([]map[string]any{{"name": "echo", "description": "", "input_schema": map[string]string{"type": "object"},
		"command": []string{"sh", "-c", `echo "$SWITCHBOARD_INVOCATION" >> "$0"; cat`, runs}}})
	if err != nil {
		panic(err) // a literal of maps and strings
	}
	return string(tools)
}

// Runs counts the runs a RecordRuns tool logged in path, by invocation id;
// every id run more than once fails the test.
func Runs(t *testing.T, path string) map[string]int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]int{}
	for _, id := range strings.Fields(string(data)) {
		ran[id]++
	}
	for id, n := range ran {
		if n > 1 {
			t.Errorf("the host ran invocation %s %d times; want at most once", id, n)
		}
	}
	return ran
}
