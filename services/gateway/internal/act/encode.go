package act

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/rawjson"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

// badBackend is a reply the gateway cannot write because a backend answered
// with something the shapes cannot carry.
func badBackend(format string, args ...any) *httperr.Error {
	return httperr.New(http.StatusBadGateway, format, args...)
}

// verbatim carries text as a JSON value, refusing text that is not JSON (it
// would break the reply). what names the field for the sentence.
func verbatim(what func() string, text string) (rawjson.Verbatim, error) {
	if !json.Valid([]byte(text)) {
		return "", badBackend("%s is not JSON", what())
	}
	return rawjson.Verbatim(text), nil
}

// optVerbatim is verbatim for an optional field: nil when absent.
func optVerbatim(what func() string, text *string) (*rawjson.Verbatim, error) {
	if text == nil {
		return nil, nil
	}
	v, err := verbatim(what, *text)
	return &v, err
}

// EncodeAdvertised is advertise's reply.
func EncodeAdvertised(res *registryv1.AdvertiseResponse) ([]byte, error) {
	return rawjson.Marshal(advertised{head: ok("advertised"), Wrote: res.GetWrote()})
}

// EncodeRouted is invoke's reply: the handle.
func EncodeRouted(invocation string) ([]byte, error) {
	return rawjson.Marshal(routed{head: ok("routed"), Invocation: invocation})
}

// EncodeReceipt is the reply of complete and capture: the handle, and the
// capture when there is one — absent, not null or {}, while running.
func EncodeReceipt(invocation string, c *mailboxv1.Capture) ([]byte, error) {
	reply := routed{head: ok("routed"), Invocation: invocation}
	if c != nil {
		switch {
		case c.Stdout == nil:
			return nil, badBackend("the mailbox answered invocation %q with a capture without stdout", invocation)
		case c.Stderr == nil:
			return nil, badBackend("the mailbox answered invocation %q with a capture without stderr", invocation)
		case c.ExitCode == nil:
			return nil, badBackend("the mailbox answered invocation %q with a capture without exit_code", invocation)
		}
		reply.Capture = &captureReply{Stdout: c.GetStdout(), Stderr: c.GetStderr(), ExitCode: c.GetExitCode()}
	}
	return rawjson.Marshal(reply)
}

// EncodeInvocations is invocations' reply: every row handed out, `[]` when
// the hold ended with none.
func EncodeInvocations(res *mailboxv1.InvocationsResponse) ([]byte, error) {
	reply := invocationRows{head: ok("invocations"), Rows: make([]invocationRow, 0, len(res.GetRows()))}
	for _, row := range res.GetRows() {
		input, err := verbatim(func() string {
			return "the input of invocation " + strconv.Quote(row.GetInvocation())
		}, row.GetInput())
		if err != nil {
			return nil, err
		}
		reply.Rows = append(reply.Rows, invocationRow{Invocation: row.GetInvocation(), Tool: row.GetTool(), Input: input, Cwd: row.Cwd})
	}
	return rawjson.Marshal(reply)
}

// EncodeClients is clients' reply: rows with tools as advertised and
// last_seen in RFC 3339 (UTC), omitted for a client never seen.
func EncodeClients(res *registryv1.ListClientsResponse) ([]byte, error) {
	return encodeClients(res, nil)
}

// encodeClients is clients' reply through a group: a tool the group shows
// under an alias carries it ("alias", after "name").
func encodeClients(res *registryv1.ListClientsResponse, aliases map[toolKey]string) ([]byte, error) {
	reply := clientRows{head: ok("clients"), Rows: make([]clientRow, 0, len(res.GetRows()))}
	for _, row := range res.GetRows() {
		r := clientRow{Client: row.GetClient(), Present: row.GetPresent(), Tools: make([]toolReply, 0, len(row.GetTools()))}
		for _, t := range row.GetTools() {
			tool, err := toolOf(row.GetClient(), t)
			if err != nil {
				return nil, err
			}
			tool.Alias = aliases[toolKey{row.GetClient(), t.GetName()}]
			r.Tools = append(r.Tools, tool)
		}
		if ls := row.GetLastSeen(); ls != nil {
			if err := ls.CheckValid(); err != nil {
				return nil, badBackend("the registry gave client %q a last_seen that is not a time: %v", row.GetClient(), err)
			}
			r.LastSeen = ls.AsTime().UTC().Format(time.RFC3339Nano)
		}
		reply.Rows = append(reply.Rows, r)
	}
	return rawjson.Marshal(reply)
}

// toolOf is one tool as advertised: the optional fields only when present.
func toolOf(client string, t *registryv1.Tool) (toolReply, error) {
	what := func(field string) func() string {
		return func() string {
			return "the " + field + " of tool " + strconv.Quote(t.GetName()) + " of client " + strconv.Quote(client)
		}
	}
	reply := toolReply{Name: t.GetName(), Description: t.GetDescription(), SubjectCwd: t.SubjectCwd, Title: t.Title}
	var err error
	if reply.InputSchema, err = verbatim(what("input_schema"), t.GetInputSchema()); err != nil {
		return toolReply{}, err
	}
	if reply.OutputSchema, err = optVerbatim(what("output_schema"), t.OutputSchema); err != nil {
		return toolReply{}, err
	}
	if reply.Annotations, err = optVerbatim(what("annotations"), t.Annotations); err != nil {
		return toolReply{}, err
	}
	return reply, nil
}
