package act

import "testing"

// BenchmarkDecodeInvoke is the decoding of /v1/act's hot request, an
// invoke, which every routed call through that endpoint pays.
func BenchmarkDecodeInvoke(b *testing.B) {
	body := []byte(`{"op":"invoke","client":"echobox","tool":"echo","input":{"i":1,"s":"a longer string, with \"quotes\""},"cwd":"/home/alice/project"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(body); err != nil {
			b.Fatal(err)
		}
	}
}
