package watch

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/kit/natsconn"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// logBuffer is a log's text, written from NATS's callback goroutine and
// read by the test.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// A NATS outage is told once per replica, by the mailbox's connection: the
// watch's own connection to the same servers notes it only at debug level.
func TestAnOutageIsLoggedOncePerReplica(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := testkit.NATSAt(t, dir, "127.0.0.1:0")
	url := srv.ClientURL()
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	nc, err := natsconn.Config{URLs: url}.Connect("mailbox", log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	tr, err := New(nc, time.Hour, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)

	srv.Shutdown()
	testkit.Eventually(t, "both connections to hear NATS go", 10*time.Second, func() bool {
		return logs.count("lost NATS") >= 2
	})
	testkit.NATSAt(t, dir, strings.TrimPrefix(url, "nats://"))
	testkit.Eventually(t, "both connections to be back", 30*time.Second, func() bool {
		// Once the watch's connection is back too, at whatever level.
		return logs.count("NATS is back") >= 2 || logs.count("NATS is back") == 1 && logs.count("the invocation watch is back on NATS") == 1
	})
	for _, line := range []string{"lost NATS; reconnecting", "NATS is back"} {
		if n := logs.count("level=WARN msg=\""+line) + logs.count("level=INFO msg=\""+line); n != 1 {
			t.Errorf("%q logged %d times, want once:\n%s", line, n, logs.b.String())
		}
	}
}
