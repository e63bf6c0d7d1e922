package rawjson

import "encoding/json"

// Object is members written back as one JSON object, in order; each value
// as its bytes are. A member with a nil value is left out.
func Object(members []Member) []byte {
	n := 2
	for _, m := range members {
		n += len(m.Key) + len(m.Value) + 4
	}
	out := make([]byte, 0, n)
	out = append(out, '{')
	for _, m := range members {
		if m.Value == nil {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		k, _ := json.Marshal(m.Key) // a string always encodes
		out = append(append(append(out, k...), ':'), m.Value...)
	}
	return append(out, '}')
}
