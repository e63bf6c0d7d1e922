package rawjson

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"testing"
)

// decoded is what encoding/json's Decoder, read token by token, makes of
// obj: the reference Members must agree with on every valid document.
func decoded(obj []byte) ([]Member, bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var out []Member
	for dec.More() {
		t, err := dec.Token()
		key, isKey := t.(string)
		if err != nil || !isKey {
			return nil, false
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return nil, false
		}
		out = append(out, Member{Key: key, Value: v})
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return out, true
}

func TestMembersAgreesWithTheDecoder(t *testing.T) {
	t.Parallel()
	for _, obj := range []string{
		`{}`, ` { } `, `{"a":1}`, "{\n\t\"a\" : -1.5e3 ,\r\n\"b\":true}",
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"s":"}]\"{["},"_meta":{"k":[1,{"v":null}]}}}`,
		`{"a\"b":"c\\","\u006fp":"invoke"}`, `{"dup":1,"dup":2}`, `{"e":[],"o":{},"s":""}`,
		`[1,2]`, `"{}"`, `12`, `null`, `{"a":"\u00e9\ud83d\ude00"}`,
	} {
		got, ok := Members(nil, []byte(obj))
		want, wantOK := decoded([]byte(obj))
		if ok != wantOK || (ok && !reflect.DeepEqual(got, want)) {
			t.Errorf("Members(%s) = %q, %v; the decoder reads %q, %v", obj, got, ok, want, wantOK)
		}
	}
}

// FuzzMembers holds Members to the decoder on any valid document, and to
// not panicking on anything else.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":{"b":[1,"]"]},"c":"\\\""}`, `{}`, `[{}]`, `{"a":1,}`, `{"a"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, obj []byte) {
		got, ok := Members(nil, obj)
		if !json.Valid(obj) {
			return
		}
		want, wantOK := decoded(obj)
		if ok != wantOK || (ok && !reflect.DeepEqual(got, want)) {
			t.Fatalf("Members(%q) = %q, %v; the decoder reads %q, %v", obj, got, ok, want, wantOK)
		}
	})
}

func BenchmarkMembers(b *testing.B) {
	obj := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echobox_echo","arguments":{"i":1},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	b.ReportAllocs()
	var dst []Member
	for b.Loop() {
		dst, _ = Members(dst[:0], obj)
	}
}

func TestElementsAgreesWithTheDecoder(t *testing.T) {
	t.Parallel()
	for _, arr := range []string{
		`[]`, ` [ ] `, `[1]`, "[\n1 ,\t\"]\" , {\"a\":[2,3]},[],null ]", `[{"type":"text","text":"a,b]"},{"type":"image","data":"AA=="}]`,
		`{}`, `"[]"`, `1`, `null`,
	} {
		got, ok := Elements(nil, []byte(arr))
		var want []json.RawMessage
		wantOK := json.Unmarshal([]byte(arr), &want) == nil && bytes.HasPrefix(bytes.TrimSpace([]byte(arr)), []byte("["))
		if wantOK && want == nil {
			want = []json.RawMessage{}
		}
		if ok && got == nil {
			got = []json.RawMessage{}
		}
		if ok != wantOK || (ok && !reflect.DeepEqual(got, want)) {
			t.Errorf("Elements(%s) = %q, %v; the decoder reads %q, %v", arr, got, ok, want, wantOK)
		}
	}
}
