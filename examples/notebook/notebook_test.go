package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestNotebookTools(t *testing.T) {
	t.Parallel()
	n := newNotebook()
	steps := []struct {
		name, tool, args string
		want             any
		err              string
	}{
		{"an empty notebook lists nothing", "list", `{}`, []string{}, ""},
		{"put stores a note", "put", `{"key":"b","value":"two"}`, `stored "b"`, ""},
		{"put again replaces it", "put", `{"key":"b","value":"2"}`, `replaced "b"`, ""},
		{"get reads it", "get", `{"key":"b"}`, "2", ""},
		{"list is sorted", "put", `{"key":"a","value":"1"}`, `stored "a"`, ""},
		{"list shows both", "list", `{}`, []string{"a", "b"}, ""},
		{"delete removes a note", "delete", `{"key":"a"}`, `deleted "a"`, ""},
		{"get of a missing key says so", "get", `{"key":"a"}`, nil, `no note "a" in the notebook; list shows the keys it holds`},
		{"a missing key is refused", "get", `{}`, nil, `a "key" string is needed`},
		{"a missing value is refused", "put", `{"key":"c"}`, nil, `put needs a "value" string`},
		{"an unknown argument is refused", "get", `{"kee":"a"}`, nil, `the arguments are not what the tool takes: json: unknown field "kee"`},
		{"an unknown tool names the tools there are", "grep", `{}`, nil, `the notebook has no tool "grep": it has put, get, list and delete`},
	}
	for _, s := range steps { // in order: each step sees the notebook the last left
		got, err := n.call(s.tool, json.RawMessage(s.args))
		if s.err != "" {
			if err == nil || err.Error() != s.err {
				t.Errorf("%s: error = %v, want %q", s.name, err, s.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", s.name, err)
			continue
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(s.want)
		if !bytes.Equal(g, w) {
			t.Errorf("%s: result = %s, want %s", s.name, g, w)
		}
	}
}

// The wire: a log line before each reply, the restart count logged at init,
// and shutdown ends the loop.
func TestServeSpeaksTheWire(t *testing.T) {
	t.Parallel()
	in := strings.Join([]string{
		`{"type":"init","restart":2,"client":"notes"}`,
		`{"type":"request","id":1,"method":"tool","params":{"name":"put","args":{"key":"k","value":"<v>"}}}`,
		`{"type":"cancel","id":1}`,
		`{"type":"event","name":"newer"}`,
		`{"type":"request","id":2,"method":"tool","params":{"name":"get","args":{"key":"nope"}}}`,
		`{"type":"request","id":3,"method":"view","params":{}}`,
		`{"type":"shutdown"}`,
		`{"type":"request","id":4,"method":"tool","params":{"name":"list","args":{}}}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	if err := serve(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		`{"text":"notebook for \"notes\" started (restart 2): it is empty","type":"log"}`,
		`{"text":"put {\"key\":\"k\",\"value\":\"<v>\"}","type":"log"}`,
		`{"id":1,"result":"stored \"k\"","type":"reply"}`,
		`{"text":"get {\"key\":\"nope\"}","type":"log"}`,
		`{"error":"no note \"nope\" in the notebook; list shows the keys it holds","id":2,"type":"reply"}`,
		`{"error":"the notebook answers tool requests, not \"view\"","id":3,"type":"reply"}`,
	}, "\n") + "\n"
	if out.String() != want {
		t.Errorf("out =\n%s\nwant\n%s", out.String(), want)
	}
}
