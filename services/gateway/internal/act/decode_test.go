package act

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

func TestDecodeRefusesEachMistakeByName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body, want string
	}{
		{"an empty body", ``, `request body is empty: send one JSON object with an "op" field`},
		{"bad JSON", `{"op":`, `request body is not valid JSON: it ends inside a value`},
		{"a syntax error", `{"op" "x"}`, `request body is not valid JSON: invalid character '"' after object key (at byte 7)`},
		{"invalid UTF-8", "{\"op\":\"\xff\"}", `request body is not valid UTF-8`},
		{"an array body", `[{"op":"invocations"}]`, `request body is not a JSON object: send one object with an "op" field`},
		{"a string body", `"invocations"`, `request body is not a JSON object: send one object with an "op" field`},
		{"trailing data", `{"op":"invocations"} x`, `request body has data after the JSON object: send exactly one object`},
		{"a second object", `{"op":"invocations"}{}`, `request body has data after the JSON object: send exactly one object`},
		{"a duplicate key", `{"op":"invoke","op":"invoke"}`, `duplicate field "op"`},
		{"a duplicate key spelled with an escape", `{"op":"clients","workspace":"a","w\u006frkspace":"b"}`, `duplicate field "workspace"`},
		{"a missing op", `{"client":"laptop"}`, `missing field "op"`},
		{"an op that is not a string", `{"op":7}`, `field "op" is not a string`},
		{"a null op", `{"op":null}`, `field "op" is not a string`},
		{"an unknown op", `{"op":"launch"}`, `unknown op "launch": want advertise, invoke, invocations, complete, capture or clients`},
		{"an unknown field", `{"op":"invocations","client":"laptop"}`, `unknown field "client"`},
		{"a missing field", `{"op":"invoke","client":"laptop","input":{}}`, `missing field "tool"`},
		{"a missing input", `{"op":"invoke","client":"laptop","tool":"grep"}`, `missing field "input"`},
		{"a mistyped field", `{"op":"invoke","client":7,"tool":"grep","input":{}}`, `field "client" is not a string`},
		{"a cwd that is not a string", `{"op":"invoke","client":"laptop","tool":"grep","input":{},"cwd":1}`, `field "cwd" is not a string`},
		{"a cwd that is an object", `{"op":"invoke","client":"laptop","tool":"grep","input":{},"cwd":{}}`, `field "cwd" is not a string`},
		{"a clients group that is not qualified", `{"op":"clients","workspace":"default","group":"read"}`,
			`group "read" is not "<workspace>/<group>" (a workspace name, a slash, a group name of [a-z0-9-])`},
		{"a clients group of another workspace", `{"op":"clients","workspace":"default","group":"other/read"}`,
			`group "other/read" is of workspace "other", but this act lists workspace "default"; name the same workspace in both`},
		{"an idempotency key that is not visible ASCII", `{"op":"invoke","client":"a","tool":"b","input":{},"idempotency_key":"café"}`,
			`idempotency key "café": byte 3 (0xc3) is not visible ASCII (! to ~)`},
		{"an empty idempotency key", `{"op":"invoke","client":"a","tool":"b","input":{},"idempotency_key":""}`,
			`idempotency key: 0 bytes; a key is 1 to 255 bytes of visible ASCII`},
		{"tools that are not an array", `{"op":"advertise","tools":{}}`, `field "tools" is not an array`},
		{"a tool that is not an object", `{"op":"advertise","tools":[{"name":"a","description":"","input_schema":{}},"b"]}`, `tools[1] is not a JSON object`},
		{"an unknown tool field", `{"op":"advertise","tools":[{"name":"a","description":"","input_schema":{}},{"name":"b","description":"","input_schema":{}},{"name":"c","description":"","input_schema":{},"command":["c"]}]}`, `tools[2]: unknown field "command"`},
		{"a tool without a schema", `{"op":"advertise","tools":[{"name":"a","description":""}]}`, `tools[0]: missing field "input_schema"`},
		{"a schema that is not an object", `{"op":"advertise","tools":[{"name":"a","description":"","input_schema":"{}"}]}`, `tools[0]: field "input_schema" is not a JSON object`},
		{"a subject_cwd that is not a boolean", `{"op":"advertise","tools":[{"name":"a","description":"","input_schema":{},"subject_cwd":"yes"}]}`, `tools[0]: field "subject_cwd" is not a boolean`},
		{"a duplicate tool field", `{"op":"advertise","tools":[{"name":"a","name":"b","description":"","input_schema":{}}]}`, `tools[0]: duplicate field "name"`},
		{"a capture that is not an object", `{"op":"complete","invocation":"inv-1","capture":"done"}`, `field "capture" is not a JSON object`},
		{"a capture without stdout", `{"op":"complete","invocation":"inv-1","capture":{"stderr":"","exit_code":0}}`, `capture: missing field "stdout"`},
		{"a capture without stderr", `{"op":"complete","invocation":"inv-1","capture":{"stdout":"","exit_code":0}}`, `capture: missing field "stderr"`},
		{"a capture without exit_code", `{"op":"complete","invocation":"inv-1","capture":{"stdout":"","stderr":""}}`, `capture: missing field "exit_code"`},
		{"a null stdout", `{"op":"complete","invocation":"inv-1","capture":{"stdout":null,"stderr":"","exit_code":0}}`, `capture: field "stdout" is not a string`},
		{"an unknown capture field", `{"op":"complete","invocation":"inv-1","capture":{"stdout":"","stderr":"","exit_code":0,"signal":9}}`, `capture: unknown field "signal"`},
		{"an exit_code above int32", `{"op":"complete","invocation":"inv-1","capture":{"stdout":"","stderr":"","exit_code":2147483648}}`, `capture: exit_code 2147483648 out of range`},
		{"an exit_code below int32", `{"op":"complete","invocation":"inv-1","capture":{"stdout":"","stderr":"","exit_code":-2147483649}}`, `capture: exit_code -2147483649 out of range`},
		{"a huge exit_code", `{"op":"complete","invocation":"inv-1","capture":{"stdout":"","stderr":"","exit_code":1e99999}}`, `capture: exit_code 1e99999 out of range`},
		{"an exit_code in exponent form above int32", `{"op":"complete","invocation":"inv-1","capture":{"stdout":"","stderr":"","exit_code":3e9}}`, `capture: exit_code 3e9 out of range`},
		{"a fractional exit_code", `{"op":"complete","invocation":"inv-1","capture":{"stdout":"","stderr":"","exit_code":1.5}}`, `capture: exit_code 1.5 is not an integer`},
		{"a tiny exit_code", `{"op":"complete","invocation":"inv-1","capture":{"stdout":"","stderr":"","exit_code":1e-99999}}`, `capture: exit_code 1e-99999 is not an integer`},
		{"an exit_code that is a string", `{"op":"complete","invocation":"inv-1","capture":{"stdout":"","stderr":"","exit_code":"0"}}`, `capture: field "exit_code" is not an integer`},
		{"an unparsable wait", `{"op":"capture","invocation":"inv-1","wait":"soon"}`, `wait "soon" is not a duration such as "10s"`},
		{"a wait without a unit", `{"op":"capture","invocation":"inv-1","wait":"10"}`, `wait "10" is not a duration such as "10s"`},
		{"a negative wait", `{"op":"capture","invocation":"inv-1","wait":"-1s"}`, `wait "-1s" is negative`},
		{"a wait that is a number", `{"op":"capture","invocation":"inv-1","wait":10}`, `field "wait" is not a string`},
		{"a retry key that is a number", `{"op":"capture","invocation":"inv-1","retry_key":7}`, `field "retry_key" is not a string`},
		{"progress that is not a boolean", `{"op":"capture","invocation":"inv-1","progress":1}`, `field "progress" is not a boolean`},
		{"a long unknown key is cut", `{"op":"invocations","` + strings.Repeat("k", 100) + `":1}`, `unknown field "` + strings.Repeat("k", 64) + `…"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, err := Decode([]byte(tc.body))
			if err == nil {
				t.Fatalf("Decode(%s) = %+v, want refusal %q", tc.body, req, tc.want)
			}
			var he *httperr.Error
			if !errors.As(err, &he) || he.Status != 400 {
				t.Fatalf("refusal %T %v is not a 400", err, err)
			}
			if he.Sentence != tc.want {
				t.Fatalf("sentence\n got %s\nwant %s", he.Sentence, tc.want)
			}
		})
	}
}

func TestDecodeKeepsJSONValuedFieldsVerbatim(t *testing.T) {
	t.Parallel()
	input := `{ "n": 12345678901234567890, "f": 1.50, "z": null, "deep": [[{"a": [true]}]], "s": "\u00e9" }`
	req, err := Decode([]byte(`{"input": ` + input + ` , "op":"invoke","client":"laptop","tool":"grep","cwd":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if req.Op != OpInvoke || req.Invoke == nil {
		t.Fatalf("request %+v", req)
	}
	if req.Invoke.Input != input {
		t.Fatalf("input\n got %s\nwant %s", req.Invoke.Input, input)
	}
	if req.Invoke.Cwd != nil {
		t.Fatalf("a null cwd became %q", *req.Invoke.Cwd)
	}
	schema := `{"type": "object", "properties": {"q": {"type": "string"}}}`
	req, err = Decode([]byte(`{"op":"advertise","tools":[{"name":"grep","description":"Search.","input_schema":` + schema +
		`,"subject_cwd":true,"title":"Grep","output_schema":{"type":"object"},"annotations":{"readOnlyHint":true}},{"name":"ls","description":"","input_schema":{},"title":null}]}`))
	if err != nil {
		t.Fatal(err)
	}
	tools := req.Advertise.GetTools()
	if len(tools) != 2 || tools[0].GetInputSchema() != schema || !tools[0].GetSubjectCwd() || tools[0].GetTitle() != "Grep" ||
		tools[0].GetOutputSchema() != `{"type":"object"}` || tools[0].GetAnnotations() != `{"readOnlyHint":true}` {
		t.Fatalf("tools[0] = %v", tools[0])
	}
	if tools[1].SubjectCwd != nil || tools[1].Title != nil || tools[1].OutputSchema != nil || tools[1].Annotations != nil {
		t.Fatalf("absent optional fields were set: %v", tools[1])
	}
}

func TestDecodeReadsEachOp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		check      func(*Request) bool
	}{
		{"invocations names nothing", `{"op":"invocations"}`, func(r *Request) bool { return r.Invocations != nil }},
		{"an integral exit_code in any form is an integer", `{"op":"complete","invocation":"inv-1","capture":{"stdout":"a","stderr":"b","exit_code":1.0e2}}`,
			func(r *Request) bool {
				c := r.Complete.GetCapture()
				return r.Complete.GetInvocation() == "inv-1" && c.GetStdout() == "a" && c.GetStderr() == "b" && c.GetExitCode() == 100
			}},
		{"an exit_code at the int32 bound is kept", `{"op":"complete","invocation":"inv-1","capture":{"stdout":"","stderr":"","exit_code":-2147483648}}`,
			func(r *Request) bool { return r.Complete.GetCapture().GetExitCode() == -2147483648 }},
		{"an empty capture text is kept, not dropped", `{"op":"complete","invocation":"inv-1","capture":{"stdout":"","stderr":"","exit_code":0}}`,
			func(r *Request) bool {
				c := r.Complete.GetCapture()
				return c.Stdout != nil && c.Stderr != nil && c.ExitCode != nil
			}},
		{"wait becomes a duration", `{"op":"capture","invocation":"inv-1","wait":"1m30s"}`,
			func(r *Request) bool { return r.Capture.GetWait().AsDuration() == 90*time.Second }},
		{"no wait never waits", `{"op":"capture","invocation":"inv-1"}`, func(r *Request) bool { return r.Capture.Wait == nil && r.Capture.RetryKey == nil && !r.Progress }},
		{"progress is asked for with true", `{"op":"capture","invocation":"inv-1","progress":true}`, func(r *Request) bool { return r.Progress }},
		{"progress false is not asking", `{"op":"capture","invocation":"inv-1","progress":false}`, func(r *Request) bool { return !r.Progress }},
		{"a retry key names the collection", `{"op":"capture","invocation":"inv-1","retry_key":"k-1"}`,
			func(r *Request) bool { return r.Capture.GetRetryKey() == "k-1" }},
		{"clients names its workspace", `{"op":"clients","workspace":"default"}`, func(r *Request) bool { return r.Clients.GetWorkspace() == "default" && r.Group == nil }},
		{"clients may name a group of its workspace", `{"op":"clients","workspace":"default","group":"default/read"}`,
			func(r *Request) bool {
				return r.Clients.GetWorkspace() == "default" && *r.Group == Group{"default", "read"}
			}},
		{"an empty tool set withdraws", `{"op":"advertise","tools":[]}`, func(r *Request) bool { return r.Advertise != nil && len(r.Advertise.Tools) == 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, err := Decode([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(req) {
				t.Fatalf("Decode(%s) = %+v", tc.body, req)
			}
		})
	}
}

// FuzzActDecode: the decoder never panics, and answers either exactly one
// typed request that protobuf can carry, or a 400 refusal sentence.
func FuzzActDecode(f *testing.F) {
	for _, s := range []string{
		`{"op":"advertise","tools":[{"name":"grep","description":"d","input_schema":{"type":"object"},"subject_cwd":true}]}`,
		`{"op":"invoke","client":"laptop","tool":"grep","input":{"q":[1,null,"x"]},"cwd":"/tmp"}`,
		`{"op":"invocations"}`,
		`{"op":"complete","invocation":"inv-1","capture":{"stdout":"o","stderr":"e","exit_code":0}}`,
		`{"op":"capture","invocation":"inv-1","wait":"10s"}`,
		`{"op":"clients","workspace":"default"}`,
		`{"op":"clients","workspace":"default","group":"default/read"}`,
		`{"op":"complete","invocation":"inv-1","capture":{"stdout":"","stderr":"","exit_code":1e400}}`,
		`{"op":"invoke","op":"invoke"}`, `[]`, `{} {}`, `{"op":"x"}`, "", "\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := Decode(body)
		if err != nil {
			var he *httperr.Error
			if !errors.As(err, &he) || he.Status != 400 || he.Sentence == "" || req != nil {
				t.Fatalf("refusal %T %v with request %v", err, err, req)
			}
			return
		}
		var msg proto.Message
		set := 0
		for _, m := range []proto.Message{req.Advertise, req.Invoke, req.Invocations, req.Complete, req.Capture, req.Clients} {
			if !isNil(m) {
				set++
				msg = m
			}
		}
		if set != 1 {
			t.Fatalf("op %q decoded into %d requests", req.Op, set)
		}
		if _, err := proto.Marshal(msg); err != nil {
			t.Fatalf("op %q: protobuf cannot carry the request: %v", req.Op, err)
		}
	})
}

func isNil(m proto.Message) bool {
	return m == nil || !m.ProtoReflect().IsValid()
}
