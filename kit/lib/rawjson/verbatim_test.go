package rawjson

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

type row struct {
	Name   string    `json:"name"`
	Input  Verbatim  `json:"input"`
	Schema *Verbatim `json:"schema,omitempty"`
	Cwd    *string   `json:"cwd,omitempty"`
}

func TestMarshalKeepsVerbatimTextAndLeavesHTMLAlone(t *testing.T) {
	t.Parallel()
	spaced := Verbatim(`{ "q": "tödo\u0021", "n": 123456789012345678901234567890, "f": 2.50, "z": null }`)
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"spacing, escapes and numbers are kept", row{Name: "grep", Input: spaced},
			`{"name":"grep","input":` + string(spaced) + `}`},
		{"an optional verbatim field is written only when set", row{Name: "a", Input: "[1, 2]", Schema: &spaced},
			`{"name":"a","input":[1, 2],"schema":` + string(spaced) + `}`},
		{"HTML characters stay, line separators are escaped", row{Name: "<a&b>\u2028", Input: `"<b>&c"`},
			`{"name":"<a&b>\u2028","input":"<b>&c"}`},
		{"invalid UTF-8 in a string becomes U+FFFD", row{Name: "a\xffb", Input: `null`}, "{\"name\":\"a\uFFFDb\",\"input\":null}"},
		{"verbatim text in a list keeps its order", []Verbatim{` 1`, `{"a" : [ ]}`, `"\u00ff"`}, `[ 1,{"a" : [ ]},"\u00ff"]`},
		{"a value without verbatim text is encoding/json's", map[string]int{"b": 2, "a": 1}, `{"a":1,"b":2}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Marshal(tc.v)
			if err != nil || string(got) != tc.want {
				t.Fatalf("Marshal = %s, %v\nwant %s", got, err, tc.want)
			}
		})
	}
}

func TestMarshalRefusesVerbatimTextThatIsNotJSON(t *testing.T) {
	t.Parallel()
	for _, text := range []Verbatim{"", "{", "1 2", `"unterminated`} {
		if got, err := Marshal(row{Input: text}); err == nil || !strings.Contains(err.Error(), "not one JSON value") {
			t.Errorf("Marshal(%q) = %s, %v; want a refusal", text, got, err)
		}
	}
}

// FuzzMarshal checks the property the replies rely on: any JSON text comes
// out exactly as it went in, in valid JSON, whatever surrounds it.
func FuzzMarshal(f *testing.F) {
	for _, s := range []string{`{}`, ` [1, "a\"b", {"c": null}] `, `"\xff"`, `"` + mark + `"`, "1e400", `"<&>"`} {
		f.Add(s, "name")
	}
	f.Fuzz(func(t *testing.T, text, name string) {
		if !json.Valid([]byte(text)) {
			return
		}
		got, err := Marshal(row{Name: name, Input: Verbatim(text)})
		if err != nil {
			t.Fatalf("Marshal(%q): %v", text, err)
		}
		head, _ := Marshal(row{Name: name, Input: "0"})
		want := append(bytes.TrimSuffix(head, []byte("0}")), text+"}"...)
		if !bytes.Equal(got, want) {
			t.Fatalf("Marshal(%q) = %q, want %q", text, got, want)
		}
	})
}
