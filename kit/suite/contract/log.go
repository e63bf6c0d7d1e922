package contract

// LogLevels are MCP's log levels, least severe first: the levels a log note
// (ReportRequest.log) may carry and a driver may ask for.
var LogLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// Bounds of a log note's fields; a host cuts or replaces what is larger,
// and the mailbox refuses it.
const (
	MaxLogData   = 4 << 10
	MaxLogLogger = 256
)
