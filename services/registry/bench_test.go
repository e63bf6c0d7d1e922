package registry_test

import (
	"fmt"
	"testing"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/registryview"
)

const (
	benchClients = 1000
	benchTools   = 20
)

// benchSet is a client's set of 20 tools with realistic schemas, each
// schema distinct; gen varies descriptions and schemas, so two gens are
// different sets and every schema of a new gen must be compiled.
func benchSet(gen int) []*registryv1.Tool {
	out := make([]*registryv1.Tool, benchTools)
	for i := range out {
		out[i] = &registryv1.Tool{
			Name:        fmt.Sprintf("tool-%02d", i),
			Description: fmt.Sprintf("Reads the file at path and returns its lines (generation %d).", gen),
			InputSchema: fmt.Sprintf(`{"type":"object","properties":{"path":{"type":"string","description":"file to read (tool %d, generation %d)"},"limit":{"type":"integer","minimum":1}},"required":["path"]}`, i, gen),
		}
	}
	return out
}

// benchEnv is a registry holding 1,000 clients × 20 tools in "default".
func benchEnv(b *testing.B) *env {
	e := serve(b, nil)
	for c := range benchClients {
		e.advertise(fmt.Sprintf("client-%04d", c), benchSet(0)...)
	}
	return e
}

// BenchmarkAdvertise measures one client replacing its 20-tool set in a
// registry of 1,000 such clients, over loopback gRPC. "changed" stores
// the set (one bbolt commit); "unchanged" re-presents the set in force.
func BenchmarkAdvertise(b *testing.B) {
	e := benchEnv(b)
	sets := [][]*registryv1.Tool{benchSet(1), benchSet(2)}
	i := 0 // b.Run may call the function more than once: i goes on counting
	b.Run("changed", func(b *testing.B) {
		for b.Loop() {
			// Each visit of a client brings the other generation.
			req := &registryv1.AdvertiseRequest{Tools: sets[(i/benchClients)%2]}
			if res, err := e.reg.Advertise(host(fmt.Sprintf("client-%04d", i%benchClients)), req); err != nil || !res.Wrote {
				b.Fatalf("advertise: %v, %v", res, err)
			}
			i++
		}
	})
	b.Run("unchanged", func(b *testing.B) {
		req := &registryv1.AdvertiseRequest{Tools: sets[0]}
		ctx := host("client-0000")
		if _, err := e.reg.Advertise(ctx, req); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if res, err := e.reg.Advertise(ctx, req); err != nil || res.Wrote {
				b.Fatalf("advertise: %v, %v", res, err)
			}
		}
	})
}

// BenchmarkListTools measures listing the 20,000 tools of a workspace of
// 1,000 clients under their presented names, page by page, over loopback
// gRPC.
func BenchmarkListTools(b *testing.B) {
	e := benchEnv(b)
	for b.Loop() {
		tools, err := registryview.Tools(admin, e.reg, "default")
		if err != nil || len(tools) != benchClients*benchTools {
			b.Fatalf("ListTools: %d tools, %v", len(tools), err)
		}
	}
}
