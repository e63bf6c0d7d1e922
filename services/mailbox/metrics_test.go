package mailbox_test

import (
	"time"

	"testing"

	"google.golang.org/protobuf/types/known/durationpb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox"
	"github.com/switchboard-run/switchboard/services/mailbox/mailboxtest"
)

// Each outcome moves its counter by exactly what was done;
// the depth gauge shows what waits; the latency histogram has one sample
// per answer.
func TestMetricsCountWhatHappened(t *testing.T) {
	t.Parallel()
	func() {
		tel := telemetry.NewMetrics()
		s := mailboxtest.New(t, mailboxtest.Options{Telemetry: tel})
		su := &suite{reg: s.Registry, mb: s.Mailbox, svc: s.Service}
		su.advertise(t, "laptop", "echo")
		su.advertise(t, "idle", "echo")
		stream, cancel := su.follow(t, "laptop")
		defer cancel()

		for _, exit := range []int32{0, 0, 3} {
			id := su.invoke(t, "laptop", "echo", `{}`)
			ev, err := stream.Recv()
			if err != nil || ev.GetInvocation().GetInvocation() != id {
				t.Fatalf("recv %v, %v", ev, err)
			}
			if _, err := su.mb.Report(host("laptop"), &mailboxv1.ReportRequest{Invocation: id, Progress: 1}); err != nil {
				t.Fatal(err)
			}
			if _, err := su.mb.Complete(host("laptop"), &mailboxv1.CompleteRequest{Invocation: id, Capture: capture.New("", "", exit)}); err != nil {
				t.Fatal(err)
			}
		}
		for range 4 {
			su.invoke(t, "idle", "echo", `{}`)
		}
		gone := su.invoke(t, "idle", "echo", `{}`)
		if _, err := su.mb.Cancel(driver, &mailboxv1.CancelRequest{Invocation: gone}); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := su.mb.Invoke(driver, &mailboxv1.InvokeRequest{Client: "laptop", Tool: "nope", Input: `{}`}); err == nil {
				t.Fatal("an unadvertised tool was posted")
			}
		}
		// One whose timeout runs out in the queue is answered, unrun,
		// when its host's read reaches it.
		su.advertise(t, "late", "echo")
		posted := time.Now()
		if _, err := su.mb.Invoke(driver, &mailboxv1.InvokeRequest{Client: "late", Tool: "echo", Input: `{}`, Timeout: durationpb.New(time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, "the timeout to run out", time.Second, func() bool { return time.Since(posted) > 10*time.Millisecond })
		_, stopLate := su.follow(t, "late")
		defer stopLate()
		testkit.Eventually(t, "the timed-out invocation counted", 10*time.Second, func() bool {
			return testkit.ScrapeHandler(t, tel.MetricsHandler()).Value("switchboard_invocations_total", "client", "late", "outcome", mailbox.OutcomeTimedOut) == 1
		})

		m := testkit.ScrapeHandler(t, tel.MetricsHandler())
		for _, c := range []struct {
			client, outcome string
			want            float64
		}{
			{"laptop", mailbox.OutcomeCompleted, 2},
			{"laptop", mailbox.OutcomeFailed, 1},
			{"laptop", mailbox.OutcomeRefused, 2},
			{"idle", mailbox.OutcomeCancelled, 1},
			{"idle", mailbox.OutcomeCompleted, 0},
		} {
			got := m.Value("switchboard_invocations_total", "workspace", "default", "client", c.client, "outcome", c.outcome)
			if got != c.want {
				t.Errorf("invocations{client=%q,outcome=%q} = %v, want %v", c.client, c.outcome, got, c.want)
			}
		}
		if got := m.Value("switchboard_invocation_seconds", "workspace", "default"); got != 3 {
			t.Errorf("latency samples = %v, want 3 (one per answer)", got)
		}
		if got := m.Value("switchboard_mailbox_queue_depth", "client", "idle"); got != 4 {
			t.Errorf("queue depth of idle = %v, want 4 (five posted, one cancelled)", got)
		}
		if got := m.Value("switchboard_mailbox_queue_depth", "client", "laptop"); got != 0 {
			t.Errorf("queue depth of laptop = %v, want 0: everything was answered", got)
		}
		if got := m.Value("switchboard_progress_notes_total", "workspace", "default"); got != 3 {
			t.Errorf("progress notes = %v, want 3 (one per laptop invocation)", got)
		}
		if got := m.Value("switchboard_mailbox_reads_open"); got != 2 {
			t.Errorf("reads open = %v, want laptop's and late's", got)
		}
		testkit.Eventually(t, "laptop and late present", 10*time.Second, func() bool {
			return testkit.ScrapeHandler(t, tel.MetricsHandler()).Value("switchboard_registry_hosts_present") == 2
		})
		if got := m.Value("grpc_server_handled_total", "grpc_method", "Complete", "grpc_code", "OK"); got != 3 {
			t.Errorf("Complete calls counted = %v, want 3", got)
		}
	}()
}
