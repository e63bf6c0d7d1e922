package stdio

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sjson "github.com/segmentio/encoding/json"
)

// The decoding follows the SDK's jsonrpc.DecodeMessage field for field,
// with the parser it uses (segmentio's, case-sensitive field names), but
// parses the line in place: DecodeMessage goes through a Decoder, which
// allocates 32 KiB and parses every value twice. Anything the fast path
// refuses is handed to DecodeMessage itself, so that a refusal reads as
// the SDK's would; the tests hold the two to the same answers.

// parseFlags are the SDK's: field names match exactly.
const parseFlags = sjson.DontMatchCaseInsensitiveStructFields

// maxDepth is the SDK's bound on nesting, which its decoder checks before
// parsing (the parser recurses).
const maxDepth = 1000

// wireMessage is a message as it is on the wire; Method is raw, so that
// "method" present with "" tells a request from a response.
type wireMessage struct {
	VersionTag string          `json:"jsonrpc"`
	ID         any             `json:"id,omitempty"`
	Method     json.RawMessage `json:"method"`
	Params     json.RawMessage `json:"params,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *jsonrpc.Error  `json:"error,omitempty"`
}

// errTrailing is the SDK's refusal of a second value on one line.
var errTrailing = errors.New("invalid trailing data at the end of stream")

// decodeLine decodes one line that holds one message.
func decodeLine(line []byte) (jsonrpc.Message, error) {
	if deeperThan(line, maxDepth) {
		return jsonrpc.DecodeMessage(line)
	}
	var w wireMessage
	rest, err := sjson.Parse(line, &w, parseFlags)
	if err != nil {
		return jsonrpc.DecodeMessage(line)
	}
	if len(trimSpace(rest)) > 0 {
		return nil, errTrailing
	}
	return w.message(line)
}

// message builds the SDK's message from w; raw is w's text, for the SDK to
// refuse in its own words.
func (w *wireMessage) message(raw []byte) (jsonrpc.Message, error) {
	if w.VersionTag != "2.0" {
		return jsonrpc.DecodeMessage(raw)
	}
	id, err := jsonrpc.MakeID(w.ID)
	if err != nil {
		return jsonrpc.DecodeMessage(raw)
	}
	if len(w.Method) > 0 {
		var method string
		if _, err := sjson.Parse(w.Method, &method, parseFlags); err != nil {
			return jsonrpc.DecodeMessage(raw)
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: w.Params}, nil
	}
	if !id.IsValid() {
		return jsonrpc.DecodeMessage(raw)
	}
	resp := &jsonrpc.Response{ID: id, Result: w.Result}
	if w.Error != nil { // a nil *Error in the error interface would not be nil
		resp.Error = w.Error
	}
	return resp, nil
}

// decodeBatch decodes a line that holds a JSON array of messages, as the
// SDK's client connection accepts at every protocol revision: it never
// learns the negotiated one, which would refuse batches from 2025-06-18.
func decodeBatch(line []byte) ([]jsonrpc.Message, error) {
	var raws []json.RawMessage
	if deeperThan(line, maxDepth) {
		_, err := jsonrpc.DecodeMessage(line)
		return nil, err
	}
	rest, err := sjson.Parse(line, &raws, parseFlags)
	if err != nil {
		_, err := jsonrpc.DecodeMessage(line) // not an array: the SDK's words
		return nil, err
	}
	if len(trimSpace(rest)) > 0 {
		return nil, errTrailing
	}
	if len(raws) == 0 {
		return nil, errors.New("empty batch")
	}
	msgs := make([]jsonrpc.Message, 0, len(raws))
	for _, raw := range raws {
		var w wireMessage
		if _, err := sjson.Parse(raw, &w, parseFlags); err != nil {
			_, err := jsonrpc.DecodeMessage(raw)
			return nil, fmt.Errorf("in a batch: %w", err)
		}
		msg, err := w.message(raw)
		if err != nil {
			return nil, fmt.Errorf("in a batch: %w", err)
		}
		msgs = append(msgs, msg)
	}
	return msgs, nil
}

// deeperThan says whether b nests arrays and objects more than limit deep,
// brackets inside strings aside.
func deeperThan(b []byte, limit int) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > limit {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}
