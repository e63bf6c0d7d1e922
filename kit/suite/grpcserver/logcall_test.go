package grpcserver_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/switchboard-run/switchboard/kit/suite/grpcserver"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// finishedCalls is every "finished call" line the JSON log holds.
func finishedCalls(t *testing.T, log string) []map[string]any {
	var out []map[string]any
	for _, ln := range strings.Split(strings.TrimSpace(log), "\n") {
		if ln == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(ln), &m); err != nil {
			t.Fatalf("log line %q: %v", ln, err)
		}
		if m["msg"] == "finished call" {
			out = append(out, m)
		}
	}
	return out
}

func TestFinishedCallsAreLoggedAtTheirLevel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		level slog.Level
		ask   string
		want  string // the grpc.code logged; empty: no line
	}{
		{"a success is not logged above debug", slog.LevelInfo, "", ""},
		{"a success is logged at debug", slog.LevelDebug, "", "OK"},
		{"a server failure is logged at any level", slog.LevelWarn, "fail", "Internal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var sink testkit.SyncBuffer
			srv := grpcserver.New(grpcserver.Options{
				Logger: slog.New(slog.NewJSONHandler(&sink, &slog.HandlerOptions{Level: tc.level})),
				Guard:  identity.Guard{Auth: identity.Authenticator{Dev: true}, Policy: policy},
			})
			srv.RegisterService(&whoamiDesc, struct{}{})
			cc := dial(t, serveServer(t, srv, true), nil)
			ctx := identity.As(context.Background(), identity.Identity{Name: "me", Grade: identity.Admin})
			_, _ = who(ctx, cc, tc.ask) // the line is written before the answer is sent
			got := finishedCalls(t, sink.String())
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("logged %v, want no line", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("logged %v, want one finished call", got)
			}
			for k, v := range map[string]any{"grpc.code": tc.want, "grpc.service": "test.Whoami", "grpc.method": "Who",
				"grpc.method_type": "unary", "grpc.component": "server", "protocol": "grpc"} {
				if got[0][k] != v {
					t.Errorf("%s = %v, want %v (line %v)", k, got[0][k], v, got[0])
				}
			}
			for _, k := range []string{"grpc.start_time", "grpc.time_ms", "peer.address"} {
				if _, ok := got[0][k]; !ok {
					t.Errorf("no %s in %v", k, got[0])
				}
			}
		})
	}
}
