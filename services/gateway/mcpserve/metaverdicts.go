package mcpserve

import (
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// metaVerdicts remembers, by its exact bytes, whether a tools/call's _meta
// was one the fast path answers (plainMeta). A client sends the same _meta
// on every call (revision, capabilities, identity), and deciding costs the
// SDK's decoding of the capabilities and the identity each time, half of
// the fast path's own work on a call (docs/bench.md); the verdict and the
// decoding are a function of those bytes alone, so both are kept. The zero
// value is ready.
type metaVerdicts struct {
	mu       sync.RWMutex
	verdicts map[string]metaVerdict
}

// metaVerdict is a _meta's verdict and, when plain, its decoding: shared
// by every call that sends the same bytes, so never written to.
type metaVerdict struct {
	meta  mcp.Meta
	plain bool
}

// maxMetaVerdicts bounds what is kept: a client whose _meta changes on
// every call (a trace context in it) must not grow the table, so it is
// emptied when full and refilled by the clients still calling.
const maxMetaVerdicts = 256

// maxMetaKey bounds the _meta kept as a key: a client's usual _meta is a
// few hundred bytes, and a larger one (up to the body limit) is decided
// each time rather than held, so the table stays under 256 × 4 KiB.
const maxMetaKey = 4 << 10

// plain is the verdict on raw and its decoding, decided by decide the
// first time raw is seen.
func (c *metaVerdicts) plain(raw []byte, decide func() (mcp.Meta, bool)) (mcp.Meta, bool) {
	if len(raw) > maxMetaKey {
		return decide()
	}
	c.mu.RLock()
	v, known := c.verdicts[string(raw)]
	c.mu.RUnlock()
	if known {
		return v.meta, v.plain
	}
	v.meta, v.plain = decide()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.verdicts == nil || len(c.verdicts) >= maxMetaVerdicts {
		c.verdicts = make(map[string]metaVerdict)
	}
	c.verdicts[string(raw)] = v
	return v.meta, v.plain
}
