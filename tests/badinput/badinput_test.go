package badinput

import (
	"context"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// rows are the tests of docs/bad-input.md, by the row's id.
var rows = map[string]func(t *testing.T, s *suite){
	"malformed-json": func(t *testing.T, s *suite) {
		wantAct(t, s, "driver", `{"op":`, 400, `{"ok":false,"error":"request body is not valid JSON`)
	},
	"not-an-object": func(t *testing.T, s *suite) {
		wantAct(t, s, "driver", `[1,2]`, 400, `{"ok":false,"error":"request body is not a JSON object`)
	},
	"unknown-op": func(t *testing.T, s *suite) {
		wantAct(t, s, "driver", `{"op":"explode"}`, 400, `{"ok":false,"error":"unknown op \"explode\"`)
	},
	"unknown-field": func(t *testing.T, s *suite) {
		wantAct(t, s, "driver", `{"op":"clients","workspace":"default","color":"red"}`, 400, `{"ok":false,"error":"unknown field \"color\""}`)
	},
	"wrong-type": func(t *testing.T, s *suite) {
		wantAct(t, s, "driver", `{"op":"invoke","client":1,"tool":"echo","input":{}}`, 400, `{"ok":false,"error":"field \"client\" is not a string"}`)
	},
	"deep-nesting": func(t *testing.T, s *suite) {
		deep := strings.Repeat("[", 200) + strings.Repeat("]", 200)
		wantAct(t, s, "driver", `{"op":"invoke","client":"box","tool":"echo","input":`+deep+`}`, 400,
			`{"ok":false,"error":"input nests 200 levels deep; at most 128 are allowed"}`)
	},
	"huge-body": func(t *testing.T, s *suite) {
		body := `{"op":"invoke","client":"box","tool":"echo","input":"` + strings.Repeat("x", 17<<20) + `"}`
		wantAct(t, s, "driver", body, 413, `{"ok":false,"error":"request body is larger than 16 MiB"}`)
	},
	"huge-grpc-message": func(t *testing.T, s *suite) {
		_, err := s.mb.Invoke(testkit.As("driver", identity.Driver), &mailboxv1.InvokeRequest{Client: "box", Tool: "echo", Input: `"` + strings.Repeat("x", 17<<20) + `"`})
		if status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("a 17 MiB message: %v; want RESOURCE_EXHAUSTED", err)
		}
	},
	"bad-client-name": func(t *testing.T, s *suite) {
		wantAct(t, s, "driver", `{"op":"invoke","client":"Laptop_1","tool":"echo","input":{}}`, 400,
			`{"ok":false,"error":"invoke: client name \"Laptop_1\" is not 1–32 chars of [a-z0-9-] starting with a letter or digit"}`)
	},
	"no-identity": func(t *testing.T, s *suite) {
		wantAct(t, s, "", `{"op":"clients","workspace":"default"}`, 401, `{"ok":false,"error":"no identity: `)
	},
	"wrong-grade": func(t *testing.T, s *suite) {
		_, err := s.mb.Invoke(testkit.As("box", identity.Host), &mailboxv1.InvokeRequest{Client: "box", Tool: "echo", Input: "{}"})
		wantStatus(t, err, codes.PermissionDenied, `"box" is a host and may not call MailboxService.Invoke`)
	},
	"cross-identity": func(t *testing.T, s *suite) {
		code, body := s.act(t, "alice", `{"op":"invoke","client":"box","tool":"echo","input":{}}`)
		id := regexp.MustCompile(`inv-[0-9a-f]+`).FindString(body)
		if code != 200 || id == "" {
			t.Fatalf("invoke: %d %s", code, body)
		}
		wantAct(t, s, "mallory", `{"op":"capture","invocation":"`+id+`"}`, 404,
			`{"ok":false,"error":"no invocation \"`+id+`\" is in flight; it was answered already, it expired, or this engine restarted since it was posted`)
	},
	"invalid-presented-name": func(t *testing.T, s *suite) {
		_, err := s.reg.ResolveTool(testkit.As("driver", identity.Driver), &registryv1.ResolveToolRequest{PresentedName: "bad name!"})
		wantStatus(t, err, codes.NotFound, `no tool is presented as "bad name!" right now; list the workspace's tools for the names in force`)
	},
	"strict-capture": func(t *testing.T, s *suite) {
		wantAct(t, s, "box", `{"op":"complete","invocation":"inv-0","capture":{"stdout":"","exit_code":0}}`, 400,
			`{"ok":false,"error":"capture: missing field \"stderr\""}`)
	},
	"huge-capture": func(t *testing.T, s *suite) {
		res, err := s.mb.Invoke(testkit.As("driver", identity.Driver), &mailboxv1.InvokeRequest{Client: "box", Tool: "echo", Input: "{}"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.mb.Complete(testkit.As("box", identity.Host), &mailboxv1.CompleteRequest{Invocation: res.GetInvocation(),
			Capture: capture.New(strings.Repeat("x", 4<<20+1), "", 0)})
		wantStatus(t, err, codes.ResourceExhausted, "capture: stdout and stderr hold 4194305 bytes; this mailbox keeps at most 4194304 — cut the output and complete again")
	},
	"flood-of-output": func(t *testing.T, s *suite) {
		c := call(t, s, "flood")
		if len(c.GetStdout()) > 1<<20+100 || !strings.HasSuffix(c.GetStdout(), "[truncated: 208666624 more bytes not shown]") {
			t.Fatalf("200 MiB of output came back as %d bytes ending %q", len(c.GetStdout()), tail(c.GetStdout()))
		}
	},
	"invalid-utf8-output": func(t *testing.T, s *suite) {
		c := call(t, s, "binary")
		if c.GetStdout() != "ok\uFFFD!" || !utf8.ValidString(c.GetStdout()) {
			t.Fatalf("stdout = %q", c.GetStdout())
		}
	},
	"nats-unreachable": natsUnreachable,
	"nats-lost":        natsLost,
	"foreign-stream":   foreignStream,
	"foreign-bucket":   foreignBucket,
	"slowloris": func(t *testing.T, s *suite) {
		conn, err := net.Dial("tcp", strings.TrimPrefix(s.httpBase, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		closed := make(chan time.Duration, 1)
		start := time.Now()
		go func() {
			header := "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 100)
			for i := 0; i < len(header); i++ {
				if _, err := conn.Write([]byte{header[i]}); err != nil {
					closed <- time.Since(start)
					return
				}
				time.Sleep(200 * time.Millisecond)
			}
			closed <- -1
		}()
		s.healthy(t) // others are served while it dribbles
		select {
		case took := <-closed:
			if took < 0 || took > 15*time.Second {
				t.Fatalf("the slow client was not cut off (took %v)", took)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the slow client was not cut off within 20s")
		}
	},
}

func TestEveryRowOfTheBadInputTable(t *testing.T) {
	s := newSuite(t)
	rows := maps.Clone(rows)
	maps.Copy(rows, scopeRows)
	maps.Copy(rows, budgetRows)
	ids := docIDs(t)
	for _, id := range ids {
		if rows[id] == nil {
			t.Errorf("docs/bad-input.md has a row %q with no test", id)
		}
	}
	for id := range rows {
		if !contains(ids, id) {
			t.Errorf("a test %q has no row in docs/bad-input.md", id)
		}
	}
	for _, id := range ids {
		if f := rows[id]; f != nil {
			t.Run(id, func(t *testing.T) {
				f(t, s)
				s.healthy(t)
			})
		}
	}
}

// docIDs reads the ids of the rows of docs/bad-input.md.
func docIDs(t *testing.T) []string {
	b, err := os.ReadFile(filepath.Join(testkit.RepoRoot(t), "docs", "bad-input.md"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9-]+)` \\|").FindAllStringSubmatch(string(b), -1) {
		ids = append(ids, m[1])
	}
	if len(ids) == 0 {
		t.Fatal("docs/bad-input.md lists no rows")
	}
	sort.Strings(ids)
	return ids
}

func wantAct(t *testing.T, s *suite, who, body string, code int, prefix string) {
	t.Helper()
	got, reply := s.act(t, who, body)
	if got != code || !strings.HasPrefix(reply, prefix) {
		t.Fatalf("%d %s\nwant %d starting %s", got, reply, code, prefix)
	}
}

func wantStatus(t *testing.T, err error, code codes.Code, msg string) {
	t.Helper()
	if status.Code(err) != code || status.Convert(err).Message() != msg {
		t.Fatalf("%v\nwant %v %q", err, code, msg)
	}
}

func call(t *testing.T, s *suite, tool string) *mailboxv1.Capture {
	t.Helper()
	ctx, cancel := context.WithTimeout(testkit.As("driver", identity.Driver), 60*time.Second)
	defer cancel()
	res, err := s.mb.Call(ctx, &mailboxv1.CallRequest{Client: "box", Tool: tool, Input: "{}"})
	if err != nil || res.Capture == nil {
		t.Fatalf("call %s: %v %v", tool, res, err)
	}
	return res.GetCapture()
}

func tail(s string) string { return s[max(0, len(s)-60):] }

func contains(ids []string, id string) bool {
	return sort.SearchStrings(ids, id) < len(ids) && ids[sort.SearchStrings(ids, id)] == id
}
