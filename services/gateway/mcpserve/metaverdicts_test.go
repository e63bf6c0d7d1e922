package mcpserve

import (
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMetaVerdictsDecideOnceAndStayBounded(t *testing.T) {
	t.Parallel()
	var c metaVerdicts
	decided := 0
	decide := func(v bool) func() (mcp.Meta, bool) {
		return func() (mcp.Meta, bool) { decided++; return mcp.Meta{"n": decided}, v }
	}
	plain := func(raw string, decide func() (mcp.Meta, bool)) bool {
		_, ok := c.plain([]byte(raw), decide)
		return ok
	}
	if !plain(`{"a":1}`, decide(true)) || plain(`{"a":2}`, decide(false)) {
		t.Fatal("the first verdicts are not decide's")
	}
	if !plain(`{"a":1}`, decide(false)) || plain(`{"a":2}`, decide(true)) || decided != 2 {
		t.Fatalf("known _meta decided again (%d decisions for two _meta)", decided)
	}
	if meta, _ := c.plain([]byte(`{"a":1}`), decide(true)); meta["n"] != 1 {
		t.Fatalf("known _meta decoded as %v, want the first decoding kept", meta)
	}
	for i := range 3 * maxMetaVerdicts {
		c.plain(fmt.Appendf(nil, `{"trace":%d}`, i), decide(true))
	}
	if n := len(c.verdicts); n > maxMetaVerdicts {
		t.Fatalf("%d verdicts kept; at most %d", n, maxMetaVerdicts)
	}
	// A _meta too big to keep as a key is decided on every call, never held.
	big := fmt.Appendf(nil, `{"pad":"%s"}`, strings.Repeat("x", maxMetaKey))
	before := decided
	c.plain(big, decide(true))
	c.plain(big, decide(true))
	if decided != before+2 {
		t.Fatalf("a %d-byte _meta was decided %d times in two calls; want every time", len(big), decided-before)
	}
	if _, kept := c.verdicts[string(big)]; kept {
		t.Fatalf("a %d-byte _meta is kept; at most %d bytes are", len(big), maxMetaKey)
	}
}
