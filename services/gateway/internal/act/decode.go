package act

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/contract"
)

var opField = field{"op", kindString, true}

// The request shapes of docs/design.md §2, field by field.
var (
	advertiseShape = []field{opField, {"tools", kindArray, true}}
	invokeShape    = []field{opField, {"client", kindString, true}, {"tool", kindString, true}, {"input", kindAny, true}, {"cwd", kindString, false}, {"group", kindString, false},
		{"idempotency_key", kindString, false}}
	invocationsShape = []field{opField}
	completeShape    = []field{opField, {"invocation", kindString, true}, {"capture", kindObject, true}}
	captureShape     = []field{opField, {"invocation", kindString, true}, {"wait", kindString, false}, {"retry_key", kindString, false}, {"progress", kindBool, false}}
	clientsShape     = []field{opField, {"workspace", kindString, true}, {"group", kindString, false}}
	toolShape        = []field{
		{"name", kindString, true}, {"description", kindString, true}, {"input_schema", kindObject, true},
		{"subject_cwd", kindBool, false}, {"title", kindString, false},
		{"output_schema", kindObject, false}, {"annotations", kindObject, false},
	}
	captureFields = []field{{"stdout", kindString, true}, {"stderr", kindString, true}, {"exit_code", kindNumber, true}}
)

// Decode reads one act request strictly. A refusal is an *httperr.Error
// (400) whose sentence names what was wrong; nothing defaults silently.
func Decode(body []byte) (*Request, error) {
	top, err := oneObject(body)
	if err != nil {
		return nil, err
	}
	ms, err := members(top, "")
	if err != nil {
		return nil, err
	}
	op, err := opOf(ms)
	if err != nil {
		return nil, err
	}
	switch op {
	case OpAdvertise:
		return decodeAdvertise(ms)
	case OpInvoke:
		return decodeInvoke(ms)
	case OpInvocations:
		if _, err := fields(ms, "", invocationsShape); err != nil {
			return nil, err
		}
		return &Request{Op: op, Invocations: &mailboxv1.InvocationsRequest{}}, nil
	case OpComplete:
		return decodeComplete(ms)
	case OpCapture:
		return decodeCapture(ms)
	case OpClients:
		return decodeClients(ms)
	}
	return nil, refuse("unknown op %s: want advertise, invoke, invocations, complete, capture or clients", quote(string(op)))
}

// oneObject returns the body's one JSON value, refusing anything but
// exactly one object.
func oneObject(body []byte) (json.RawMessage, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, refuse(`request body is empty: send one JSON object with an "op" field`)
	}
	if !utf8.Valid(body) {
		return nil, refuse("request body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var top json.RawMessage
	if err := dec.Decode(&top); err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return nil, refuse("request body is not valid JSON: %v (at byte %d)", se, se.Offset)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, refuse("request body is not valid JSON: it ends inside a value")
		}
		return nil, refuse("request body is not valid JSON: %v", err)
	}
	if top[0] != '{' {
		return nil, refuse(`request body is not a JSON object: send one object with an "op" field`)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, refuse("request body has data after the JSON object: send exactly one object")
	}
	return top, nil
}

// opOf finds the op among the top-level members.
func opOf(ms []member) (Op, error) {
	for _, m := range ms {
		if m.key != "op" {
			continue
		}
		if !kindString.is(m.raw) {
			return "", refuse(`field "op" is not a string`)
		}
		return Op(str(m.raw)), nil
	}
	return "", refuse(`missing field "op"`)
}

func decodeAdvertise(ms []member) (*Request, error) {
	got, err := fields(ms, "", advertiseShape)
	if err != nil {
		return nil, err
	}
	elems, err := elements(got["tools"])
	if err != nil {
		return nil, refuse(`field "tools" is not valid JSON: %v`, err)
	}
	tools := make([]*registryv1.Tool, 0, len(elems))
	for i, raw := range elems {
		t, err := decodeTool(i, raw)
		if err != nil {
			return nil, err
		}
		tools = append(tools, t)
	}
	return &Request{Op: OpAdvertise, Advertise: &registryv1.AdvertiseRequest{Tools: tools}}, nil
}

// decodeTool reads tools[i]. JSON-valued fields keep their exact bytes.
func decodeTool(i int, raw json.RawMessage) (*registryv1.Tool, error) {
	if !kindObject.is(raw) {
		return nil, refuse("tools[%d] is not a JSON object", i)
	}
	where := "tools[" + strconv.Itoa(i) + "]: "
	ms, err := members(raw, where)
	if err != nil {
		return nil, err
	}
	got, err := fields(ms, where, toolShape)
	if err != nil {
		return nil, err
	}
	t := &registryv1.Tool{
		Name:        str(got["name"]),
		Description: str(got["description"]),
		InputSchema: string(got["input_schema"]),
		Title:       optStr(got, "title"),
	}
	if raw, ok := got["subject_cwd"]; ok {
		b := raw[0] == 't'
		t.SubjectCwd = &b
	}
	if raw, ok := got["output_schema"]; ok {
		s := string(raw)
		t.OutputSchema = &s
	}
	if raw, ok := got["annotations"]; ok {
		s := string(raw)
		t.Annotations = &s
	}
	return t, nil
}

func decodeInvoke(ms []member) (*Request, error) {
	got, err := fields(ms, "", invokeShape)
	if err != nil {
		return nil, err
	}
	req := &Request{Op: OpInvoke, Invoke: &mailboxv1.InvokeRequest{
		Client: str(got["client"]),
		Tool:   str(got["tool"]),
		Input:  string(got["input"]), // verbatim: numbers, nulls, nesting, spacing
		Cwd:    optStr(got, "cwd"),
	}}
	if g := optStr(got, "group"); g != nil {
		if req.Group, err = parseGroup(*g); err != nil {
			return nil, err
		}
	}
	if k := optStr(got, "idempotency_key"); k != nil {
		if err := contract.CheckIdempotencyKey(*k); err != nil {
			return nil, refuse("%s", status.Convert(err).Message())
		}
		req.IdempotencyKey = *k
	}
	return req, nil
}

func decodeClients(ms []member) (*Request, error) {
	got, err := fields(ms, "", clientsShape)
	if err != nil {
		return nil, err
	}
	req := &Request{Op: OpClients, Clients: &registryv1.ListClientsRequest{Workspace: str(got["workspace"])}}
	if g := optStr(got, "group"); g != nil {
		if req.Group, err = parseGroup(*g); err != nil {
			return nil, err
		}
		// A group lists its own workspace's tools: naming another is a
		// contradiction, not a question about either.
		if req.Group.Workspace != req.Clients.GetWorkspace() {
			return nil, refuse("group %s is of workspace %s, but this act lists workspace %s; name the same workspace in both",
				quote(*g), quote(req.Group.Workspace), quote(req.Clients.GetWorkspace()))
		}
	}
	return req, nil
}

func decodeComplete(ms []member) (*Request, error) {
	got, err := fields(ms, "", completeShape)
	if err != nil {
		return nil, err
	}
	cms, err := members(got["capture"], "capture: ")
	if err != nil {
		return nil, err
	}
	cf, err := fields(cms, "capture: ", captureFields)
	if err != nil {
		return nil, err
	}
	code, err := exitCode(string(cf["exit_code"]))
	if err != nil {
		return nil, err
	}
	stdout, stderr := str(cf["stdout"]), str(cf["stderr"])
	return &Request{Op: OpComplete, Complete: &mailboxv1.CompleteRequest{
		Invocation: str(got["invocation"]),
		Capture:    &mailboxv1.Capture{Stdout: &stdout, Stderr: &stderr, ExitCode: &code},
	}}, nil
}

func decodeCapture(ms []member) (*Request, error) {
	got, err := fields(ms, "", captureShape)
	if err != nil {
		return nil, err
	}
	req := &mailboxv1.CaptureRequest{Invocation: str(got["invocation"])}
	if w := optStr(got, "wait"); w != nil {
		d, err := time.ParseDuration(*w)
		if err != nil {
			return nil, refuse(`wait %s is not a duration such as "10s"`, quote(*w))
		}
		if d < 0 {
			return nil, refuse("wait %s is negative", quote(*w))
		}
		req.Wait = durationpb.New(d)
	}
	req.RetryKey = optStr(got, "retry_key") // the mailbox checks its spelling
	raw, asked := got["progress"]
	return &Request{Op: OpCapture, Capture: req, Progress: asked && raw[0] == 't'}, nil
}
