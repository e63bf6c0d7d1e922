package process

import (
	"log/slog"
	"os"
	"runtime/debug"
)

// The garbage collector's defaults for a suite process, unless the
// environment sets GOGC or GOMEMLIMIT (which then win, as for any Go
// program).
//
// Why: a routed call allocates a lot that dies at once — the MCP SDK's
// JSON decoder takes a fresh 32 KiB buffer for every message it decodes,
// gRPC and NATS their frames — over a live heap of a few tens of MiB. With
// Go's default GOGC=100 the collector then runs every few hundred calls and
// took a large share of the suite's CPU under load (docs/bench.md, "The MCP
// endpoint's hot path"). GOGC=400 lets the heap grow to five times the live
// data between collections instead of twice; the soft limit bounds what
// that costs: near it the collector runs as often as it must, whatever
// GOGC says, so a process with a large live heap (thousands of parked
// hosts) does not grow five-fold.
const (
	DefaultGOGC        = 400
	DefaultMemoryLimit = 512 << 20
)

// TuneGC applies the defaults above where the environment sets nothing,
// and logs at debug which it applied.
func TuneGC(log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(DefaultGOGC)
		log.Debug("garbage collector: default GOGC applied (set GOGC to choose)", "gogc", DefaultGOGC)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(DefaultMemoryLimit)
		log.Debug("garbage collector: default soft memory limit applied (set GOMEMLIMIT to choose)", "bytes", DefaultMemoryLimit)
	}
}
