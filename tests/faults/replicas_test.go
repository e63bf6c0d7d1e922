package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

// Two mailbox replicas serve one queue: a host follows on replica A, a
// driver calls through replica B and gets the capture, and a cancel through
// B reaches the run on A. Replica A is killed: the host is shown absent
// once its read's presence key times out (--presence-ttl 3s), and present
// again once it has redialed the restarted A by itself.
func TestReplicasShareTheQueueAndAKilledReplicasHostGoesAbsentAndComesBack(t *testing.T) {
	t.Parallel()
	s := procs.NewSplit(t, procs.Options{Replicas: 2, MailboxArgs: []string{"--presence-ttl", "3s"}})
	a, b := s.Mailboxes[0], s.Mailboxes[1]
	marks := t.TempDir()
	s.Host("laptop", fmt.Sprintf(`[{"name":"echo","description":"","input_schema":{"type":"object"},"command":["cat"]},
		{"name":"wait","description":"","input_schema":{"type":"object"},
		 "command":["sh","-c","trap 'touch %[1]s/$SWITCHBOARD_INVOCATION.stopped; exit 143' TERM; touch %[1]s/$SWITCHBOARD_INVOCATION.started; sleep 60 & wait"]}]`, marks), 0)
	s.WaitPresent("laptop", true, 20*time.Second)

	// Half the lease (30 s by default): a call to a host that has redialed
	// must not wait for the dead replica's lease to run out.
	call := func(input string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(procs.Driver(), 15*time.Second)
		defer cancel()
		res, err := b.MB.Call(ctx, &mailboxv1.CallRequest{Client: "laptop", Tool: "echo", Input: input})
		if err != nil || res.GetCapture().GetStdout() != input {
			t.Fatalf("a call through replica B to the host on A: %v, %v", res, err)
		}
	}
	call(`{"via":"b"}`)

	inv, err := b.MB.Invoke(procs.Driver(), &mailboxv1.InvokeRequest{Client: "laptop", Tool: "wait", Input: "{}"})
	if err != nil {
		t.Fatal(err)
	}
	id := inv.GetInvocation()
	waitFile(t, filepath.Join(marks, id+".started"), "the host on A to start "+id)
	res, err := b.MB.Cancel(procs.Driver(), &mailboxv1.CancelRequest{Invocation: id, Reason: proto.String("the test is done with it")})
	if err != nil || res.GetCapture().GetExitCode() != 130 {
		t.Fatalf("cancel through B: %v, %v; want the cancelled capture", res, err)
	}
	waitFile(t, filepath.Join(marks, id+".stopped"), "the cancel through B to stop the run on A")

	killed := time.Now()
	a.Proc.Kill()
	s.WaitPresent("laptop", false, 15*time.Second)
	t.Logf("the host was shown absent %v after its replica was killed (presence TTL 3s)", time.Since(killed).Round(time.Millisecond))

	s.StartMailbox(0)
	restarted := time.Now()
	s.WaitPresent("laptop", true, 40*time.Second)
	t.Logf("the host was present again %v after its replica restarted", time.Since(restarted).Round(time.Millisecond))
	call(`{"after":"restart"}`)
}

// waitFile waits until path exists.
func waitFile(t *testing.T, path, what string) {
	t.Helper()
	testkit.Eventually(t, what, 20*time.Second, func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
}
