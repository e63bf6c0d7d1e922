package rawjson

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	ok := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	tests := []struct {
		name, text, err string
		object          bool
	}{
		{name: "a number is a JSON value", text: "12345678901234567890"},
		{name: "null is a JSON value", text: "null"},
		{name: "brackets inside strings do not count as nesting", text: `"` + strings.Repeat("[", 500) + `"`},
		{name: "nesting at the limit is fine", text: ok},
		{name: "nesting past the limit is refused", text: deep, err: "nests 129 levels"},
		{name: "two values are not one", text: "1 2", err: "not valid JSON"},
		{name: "empty text is not JSON", text: "", err: "not valid JSON"},
		{name: "an object passes the object check", text: ` {"type":"object"}`, object: true},
		{name: "an array fails the object check", text: `[]`, object: true, err: "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := Check
			if tt.object {
				check = CheckObject
			}
			err := check("input", tt.text)
			if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("err = %v, want %q", err, tt.err)
			}
		})
	}
}
