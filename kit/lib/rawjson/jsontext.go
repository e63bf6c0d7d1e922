// Package rawjson handles the JSON-valued fields the contracts carry as
// text (a tool's input, a schema, annotations): they pass through byte for
// byte, so they are checked once, where they enter, and never re-encoded;
// Marshal writes them back out inside encoding/json's output unchanged.
package rawjson

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// MaxDepth bounds nesting: deeper documents are refused rather than walked.
const MaxDepth = 128

// Check refuses text that is not exactly one JSON value, or that nests
// deeper than MaxDepth. what names the field in the error ("input").
func Check(what, text string) error {
	if !json.Valid([]byte(text)) {
		return fmt.Errorf("%s is not valid JSON", what)
	}
	if d := depth(text); d > MaxDepth {
		return fmt.Errorf("%s nests %d levels deep; at most %d are allowed", what, d, MaxDepth)
	}
	return nil
}

// CheckObject is Check for text that must be a JSON object.
func CheckObject(what, text string) error {
	if err := Check(what, text); err != nil {
		return err
	}
	if t := bytes.TrimLeft([]byte(text), " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("%s is not a JSON object", what)
	}
	return nil
}

// depth is the deepest nesting of valid JSON text, skipping strings.
func depth(text string) int {
	d, most, inString, escaped := 0, 0, false, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			d++
			most = max(most, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return most
}
