package console

import (
	"net/url"
	"strings"
	"testing"
)

const trySchema = `{"type":"object","required":["path"],"properties":{
 "path":{"type":"string","description":"Where."},
 "limit":{"type":"integer"},
 "ratio":{"type":"number"},
 "all":{"type":"boolean"},
 "mode":{"type":"string","enum":["fast","slow"]},
 "filter":{"type":"object"}}}`

func TestFormForLaysOutEachPropertyByType(t *testing.T) {
	f := formFor(trySchema)
	if f.Raw {
		t.Fatal("an object schema with properties was offered as raw JSON")
	}
	var got []string
	for _, fd := range f.Fields {
		got = append(got, fd.Name+":"+fd.Kind)
	}
	want := "path:string all:boolean filter:json limit:integer mode:enum ratio:number" // required first, then by name
	if strings.Join(got, " ") != want {
		t.Fatalf("fields %v, want %s", got, want)
	}
	if !f.Fields[0].Required || f.Fields[0].Description != "Where." {
		t.Fatalf("path: %+v", f.Fields[0])
	}
	for _, schema := range []string{`{}`, `{"type":"object"}`, `not json`, `{"type":"array"}`} {
		if !formFor(schema).Raw {
			t.Errorf("schema %s: want a raw JSON area", schema)
		}
	}
}

func TestInputFromConvertsAndRefusesByField(t *testing.T) {
	f := formFor(trySchema)
	in, err := f.inputFrom(url.Values{"f.path": {"/tmp/<x>"}, "f.limit": {"12"}, "f.ratio": {"0.5"}, "f.all": {"true"},
		"f.mode": {"slow"}, "f.filter": {`{"a":1}`}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"all":true,"filter":{"a":1},"limit":12,"mode":"slow","path":"/tmp/<x>","ratio":0.5}`; in != want {
		t.Fatalf("input %s, want %s", in, want)
	}
	// Empty optional fields are left out; an unticked box is false.
	if in, err = f.inputFrom(url.Values{"f.path": {"p"}}); err != nil || in != `{"all":false,"path":"p"}` {
		t.Fatalf("input %s, %v", in, err)
	}
	for _, c := range []struct {
		form url.Values
		want string
	}{
		{url.Values{}, `field "path" is required`},
		{url.Values{"f.path": {"p"}, "f.limit": {"1.5"}}, `field "limit": "1.5" is not an integer`},
		{url.Values{"f.path": {"p"}, "f.ratio": {"half"}}, `field "ratio": "half" is not a number`},
		{url.Values{"f.path": {"p"}, "f.filter": {"{"}}, `field "filter": "{" is not JSON`},
	} {
		if _, err := f.inputFrom(c.form); err == nil || err.Error() != c.want {
			t.Errorf("form %v: %v, want %q", c.form, err, c.want)
		}
	}
	raw := formFor(`{}`)
	if in, err := raw.inputFrom(url.Values{}); err != nil || in != "{}" {
		t.Fatalf("an empty raw input: %s, %v", in, err)
	}
	if _, err := raw.inputFrom(url.Values{"input": {strings.Repeat(" ", 10) + `"` + strings.Repeat("x", maxInputBytes) + `"`}}); err == nil || !strings.Contains(err.Error(), "the console sends at most") {
		t.Fatalf("an oversized input: %v", err)
	}
}
