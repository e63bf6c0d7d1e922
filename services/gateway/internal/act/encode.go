package act

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
	"github.com/switchboard-run/switchboard/services/gateway/internal/jsonstr"
)

// The replies are written by hand, key by key in the shapes' order ("ok",
// "kind", then the shape), so the bytes are the shapes' bytes: exit_code a
// number, capture absent while running, cwd only when set, and JSON-valued
// fields (input, schemas, annotations) spliced as the backends hold them,
// never re-encoded.

// badBackend is a reply the gateway cannot write because a backend answered
// with something the shapes cannot carry.
func badBackend(format string, args ...any) *httperr.Error {
	return httperr.New(http.StatusBadGateway, format, args...)
}

func begin(kind string) []byte {
	b := append(make([]byte, 0, 256), `{"ok":true,"kind":`...)
	return jsonstr.Append(b, kind)
}

// key appends ,"name": — every key but "ok" follows another.
func key(b []byte, name string) []byte {
	b = append(b, ',')
	b = jsonstr.Append(b, name)
	return append(b, ':')
}

// raw splices JSON text, refusing text that is not JSON (it would break the
// reply). what names the field for the sentence.
func raw(b []byte, what func() string, text string) ([]byte, error) {
	if !json.Valid([]byte(text)) {
		return nil, badBackend("%s is not JSON", what())
	}
	return append(b, text...), nil
}

// EncodeAdvertised is advertise's reply.
func EncodeAdvertised(res *registryv1.AdvertiseResponse) []byte {
	b := key(begin("advertised"), "wrote")
	return append(strconv.AppendBool(b, res.GetWrote()), '}')
}

// EncodeRouted is invoke's reply: the handle.
func EncodeRouted(invocation string) []byte {
	b := jsonstr.Append(key(begin("routed"), "invocation"), invocation)
	return append(b, '}')
}

// EncodeReceipt is the reply of complete and capture: the handle, and the
// capture when there is one — absent, not null or {}, while running.
func EncodeReceipt(invocation string, c *mailboxv1.Capture) ([]byte, error) {
	b := jsonstr.Append(key(begin("routed"), "invocation"), invocation)
	if c != nil {
		var err error
		if b, err = appendCapture(key(b, "capture"), invocation, c); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

func appendCapture(b []byte, invocation string, c *mailboxv1.Capture) ([]byte, error) {
	switch {
	case c.Stdout == nil:
		return nil, badBackend("the mailbox answered invocation %q with a capture without stdout", invocation)
	case c.Stderr == nil:
		return nil, badBackend("the mailbox answered invocation %q with a capture without stderr", invocation)
	case c.ExitCode == nil:
		return nil, badBackend("the mailbox answered invocation %q with a capture without exit_code", invocation)
	}
	b = jsonstr.Append(append(b, `{"stdout":`...), c.GetStdout())
	b = jsonstr.Append(append(b, `,"stderr":`...), c.GetStderr())
	b = strconv.AppendInt(append(b, `,"exit_code":`...), int64(c.GetExitCode()), 10)
	return append(b, '}'), nil
}

// EncodeInvocations is invocations' reply: every row handed out, `[]` when
// the hold ended with none.
func EncodeInvocations(res *mailboxv1.InvocationsResponse) ([]byte, error) {
	b := append(key(begin("invocations"), "rows"), '[')
	for i, row := range res.GetRows() {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonstr.Append(append(b, `{"invocation":`...), row.GetInvocation())
		b = jsonstr.Append(key(b, "tool"), row.GetTool())
		var err error
		b, err = raw(key(b, "input"), func() string {
			return "the input of invocation " + strconv.Quote(row.GetInvocation())
		}, row.GetInput())
		if err != nil {
			return nil, err
		}
		if row.Cwd != nil {
			b = jsonstr.Append(key(b, "cwd"), row.GetCwd())
		}
		b = append(b, '}')
	}
	return append(b, "]}"...), nil
}

// EncodeClients is clients' reply: rows with tools as advertised and
// last_seen in RFC 3339 (UTC), omitted for a client never seen.
func EncodeClients(res *registryv1.ListClientsResponse) ([]byte, error) {
	b := append(key(begin("clients"), "rows"), '[')
	for i, row := range res.GetRows() {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonstr.Append(append(b, `{"client":`...), row.GetClient())
		b = strconv.AppendBool(key(b, "present"), row.GetPresent())
		b = append(key(b, "tools"), '[')
		for j, t := range row.GetTools() {
			if j > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendTool(b, row.GetClient(), t); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
		if ls := row.GetLastSeen(); ls != nil {
			if err := ls.CheckValid(); err != nil {
				return nil, badBackend("the registry gave client %q a last_seen that is not a time: %v", row.GetClient(), err)
			}
			b = jsonstr.Append(key(b, "last_seen"), ls.AsTime().UTC().Format(time.RFC3339Nano))
		}
		b = append(b, '}')
	}
	return append(b, "]}"...), nil
}

// appendTool writes one tool as advertised: the optional fields only when
// present.
func appendTool(b []byte, client string, t *registryv1.Tool) ([]byte, error) {
	what := func(field string) func() string {
		return func() string {
			return "the " + field + " of tool " + strconv.Quote(t.GetName()) + " of client " + strconv.Quote(client)
		}
	}
	b = jsonstr.Append(append(b, `{"name":`...), t.GetName())
	b = jsonstr.Append(key(b, "description"), t.GetDescription())
	b, err := raw(key(b, "input_schema"), what("input_schema"), t.GetInputSchema())
	if err != nil {
		return nil, err
	}
	if t.SubjectCwd != nil {
		b = strconv.AppendBool(key(b, "subject_cwd"), t.GetSubjectCwd())
	}
	if t.Title != nil {
		b = jsonstr.Append(key(b, "title"), t.GetTitle())
	}
	if t.OutputSchema != nil {
		if b, err = raw(key(b, "output_schema"), what("output_schema"), t.GetOutputSchema()); err != nil {
			return nil, err
		}
	}
	if t.Annotations != nil {
		if b, err = raw(key(b, "annotations"), what("annotations"), t.GetAnnotations()); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}
