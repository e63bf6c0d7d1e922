package watch

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/kit/suite/natsconn"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// A NATS outage is told once per replica, by the mailbox's connection: the
// watch's own connection to the same servers notes it only at debug level.
func TestAnOutageIsLoggedOncePerReplica(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := testkit.NATSAt(t, dir, "127.0.0.1:0")
	url := srv.ClientURL()
	logs := &testkit.SyncBuffer{}
	count := func(s string) int { return strings.Count(logs.String(), s) }
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	nc, err := natsconn.Config{URLs: url}.Connect("mailbox", log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	tr, err := New(nc, time.Hour, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)

	srv.Shutdown()
	testkit.Eventually(t, "both connections to hear NATS go", 10*time.Second, func() bool {
		return count("lost NATS") >= 2
	})
	testkit.NATSAt(t, dir, strings.TrimPrefix(url, "nats://"))
	testkit.Eventually(t, "both connections to be back", 30*time.Second, func() bool {
		// Once the watch's connection is back too, at whatever level.
		return count("NATS is back") >= 2 || count("NATS is back") == 1 && count("the invocation watch is back on NATS") == 1
	})
	for _, line := range []string{"lost NATS; reconnecting", "NATS is back"} {
		if n := count("level=WARN msg=\""+line) + count("level=INFO msg=\""+line); n != 1 {
			t.Errorf("%q logged %d times, want once:\n%s", line, n, logs.String())
		}
	}
}
