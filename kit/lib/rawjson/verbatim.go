package rawjson

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
)

// Verbatim is JSON text written back exactly as it came (a tool's input, a
// schema): Marshal puts it in the output byte for byte.
//
// json.RawMessage would not do: encoding/json compacts whatever a value's
// MarshalJSON returns, so `{ "q": 1 }` would come out as `{"q":1}`, and the
// shapes promise such fields verbatim.
type Verbatim string

// mark opens the stand-in that MarshalJSON writes for Marshal to replace:
// a string whose first byte is 0xff. encoding/json never writes that byte
// itself (it turns invalid UTF-8 in strings into U+FFFD), so only a
// Verbatim value can have put it there; the text follows in hex, which
// cannot hold a quote.
const mark = "\"\xff"

// MarshalJSON writes the stand-in that Marshal replaces with the text. It
// refuses text that is not exactly one JSON value.
func (v Verbatim) MarshalJSON() ([]byte, error) {
	if !json.Valid([]byte(v)) {
		return nil, errors.New("verbatim text is not one JSON value")
	}
	b := make([]byte, 0, len(mark)+hex.EncodedLen(len(v))+1)
	b = hex.AppendEncode(append(b, mark...), []byte(v))
	return append(b, '"'), nil
}

// Marshal is encoding/json's encoding of v, with two differences the wire
// shapes need: HTML characters are left as they are (the replies are JSON,
// never HTML), and each Verbatim value is written byte for byte. No
// newline follows. Carry JSON-valued text in v as Verbatim, not as
// json.RawMessage: encoding/json compacts a RawMessage and copies the
// bytes inside its strings as they are, invalid UTF-8 included, which a
// stand-in could be mistaken for.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return splice(bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}))
}

// splice replaces each stand-in in b with the text it carries.
func splice(b []byte) ([]byte, error) {
	i := bytes.Index(b, []byte(mark))
	if i < 0 {
		return b, nil
	}
	out := make([]byte, 0, len(b))
	for i >= 0 {
		out = append(out, b[:i]...)
		b = b[i+len(mark):]
		end := bytes.IndexByte(b, '"')
		if end < 0 {
			return nil, errors.New("a verbatim stand-in is not closed")
		}
		var err error
		if out, err = hex.AppendDecode(out, b[:end]); err != nil {
			return nil, errors.New("a verbatim stand-in does not hold hex")
		}
		b = b[end+1:]
		i = bytes.Index(b, []byte(mark))
	}
	return append(out, b...), nil
}
