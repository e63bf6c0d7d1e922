package mcpconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
)

// The strict JSON reading both config files share: objects split into
// their fields with duplicates refused, and counts read as whole numbers.

func isNumberLiteral(raw json.RawMessage) bool {
	return len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9')
}

// wholeNumber reads a count: 0 (the default) up to the int32 range.
func wholeNumber(n json.Number) (int32, error) {
	if n == "" {
		return 0, nil
	}
	i, err := n.Int64()
	if err != nil {
		return 0, fmt.Errorf("is %s; want a whole number", n)
	}
	if i < 0 || i > math.MaxInt32 {
		return 0, fmt.Errorf("is %d; want 0 (the default) up to %d", i, math.MaxInt32)
	}
	return int32(i), nil
}

// field is one key of a JSON object with its raw value.
type field struct {
	key   string
	value json.RawMessage
}

// object splits data, which must be exactly one JSON object, into its
// fields in order, refusing a duplicate key (encoding/json would keep the
// last one silently). what names the value in the sentences.
func object(data []byte, what string) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxError(what, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("%s is not a JSON object", what)
	}
	var out []field
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, syntaxError(what, err)
		}
		key := tok.(string) // inside an object, a token in key position is a string
		if seen[key] {
			return nil, fmt.Errorf("%s has the key %q twice", what, key)
		}
		seen[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, syntaxError(what, err)
		}
		out = append(out, field{key, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, syntaxError(what, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s has data after its closing brace", what)
	}
	return out, nil
}

// syntaxError says what is wrong with JSON that does not parse.
func syntaxError(what string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%s ends before its JSON is complete", what)
	}
	return fmt.Errorf("%s is not valid JSON: %v", what, err)
}
