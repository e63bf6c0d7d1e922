package rest

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/encoding/protojson"
)

// Marshaler is the JSON of the REST routes: proto field names (snake_case,
// as the act shapes), zero scalars printed (EmitDefaultValues, which unlike
// EmitUnpopulated leaves an absent message or optional field absent, so a
// running invocation's capture stays absent), and unknown fields refused.
// Its output is compacted: protojson varies its spacing from build to build
// on purpose, and a client (or a golden file) should see the same bytes from
// every build. Compacting never touches the inside of a string, and the
// contracts carry JSON-valued fields as strings.
type Marshaler struct {
	*runtime.JSONPb
}

// NewMarshaler returns the REST routes' marshaler.
func NewMarshaler() Marshaler {
	return Marshaler{&runtime.JSONPb{
		MarshalOptions:   protojson.MarshalOptions{UseProtoNames: true, EmitDefaultValues: true},
		UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: false},
	}}
}

// Marshal is protojson's output, compacted.
func (m Marshaler) Marshal(v any) ([]byte, error) {
	b, err := m.JSONPb.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Grow(len(b))
	if err := json.Compact(&out, b); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// NewEncoder writes each value compacted, then the delimiter.
func (m Marshaler) NewEncoder(w io.Writer) runtime.Encoder {
	return runtime.EncoderFunc(func(v any) error {
		b, err := m.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		_, err = w.Write(m.Delimiter())
		return err
	})
}
