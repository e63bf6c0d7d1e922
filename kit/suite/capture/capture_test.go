package capture

import (
	"strings"
	"testing"
)

func TestCapCutsAtRunesAndSaysSo(t *testing.T) {
	t.Parallel()
	if got := Cap("héllo", 10); got != "héllo" {
		t.Fatalf("short text changed: %q", got)
	}
	got := Cap("héllo wörld", 5)
	if !strings.HasPrefix(got, "héllo\n[truncated: 6 more characters") {
		t.Fatalf("Cap = %q", got)
	}
	if got := Cap(strings.Repeat("x", 10), 0); len(got) != 10 {
		t.Fatal("limit 0 should not cut")
	}
}

func TestTextReplacesInvalidUTF8(t *testing.T) {
	t.Parallel()
	if got := Text([]byte{'o', 'k', 0xff, 0xfe}); got != "ok\uFFFD" {
		t.Fatalf("Text = %q", got)
	}
}

func TestNewSetsEveryField(t *testing.T) {
	t.Parallel()
	c := New("", "", 0)
	if c.Stdout == nil || c.Stderr == nil || c.ExitCode == nil {
		t.Fatalf("a zero field was left absent: %v", c)
	}
}

func TestAnRPCErrorIsReadStrictly(t *testing.T) {
	e := RPCError{Code: -32603, Message: "boom", Data: []byte(`{"uri":"x"}`)}
	got, err := ParseRPCError(e.Encode())
	if err != nil || got.Code != e.Code || got.Message != e.Message || string(got.Data) != `{"uri":"x"}` {
		t.Fatalf("ParseRPCError(Encode()) = %+v, %v", got, err)
	}
	for text, want := range map[string]string{
		`{"code":1}`:                            "lacks its code or its message",
		`{"message":"m"}`:                       "lacks its code or its message",
		`{"code":1,"message":"m","extra":true}`: `unknown field "extra"`,
		`{"code":"1","message":"m"}`:            "is not a JSON-RPC error object",
		`{"code":1,"message":"m"} {}`:           "more than one JSON value",
		`[]`:                                    "is not a JSON-RPC error object",
	} {
		if _, err := ParseRPCError(text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRPCError(%s) = %v; want an error saying %q", text, err, want)
		}
	}
}
