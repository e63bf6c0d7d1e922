package act

import "github.com/switchboard-run/switchboard/kit/lib/rawjson"

// The reply shapes of docs/design.md §2, key by key in the shapes' order. The
// types carry the traps in their fields: exit_code an integer, capture
// absent (not null or {}) while running, cwd and a tool's optional fields
// only when set, rows [] when there are none, and JSON-valued fields
// Verbatim, written as the backends hold them.

// head opens every reply.
type head struct {
	OK   bool   `json:"ok"`
	Kind string `json:"kind"`
}

func ok(kind string) head { return head{OK: true, Kind: kind} }

// advertised is advertise's reply.
type advertised struct {
	head
	Wrote bool `json:"wrote"`
}

// routed is the reply of invoke, complete and capture. Progress is set
// only on a running capture that asked for it ("progress": true): [] when
// the host has reported nothing yet.
type routed struct {
	head
	Invocation string        `json:"invocation"`
	Capture    *captureReply `json:"capture,omitempty"`
	Progress   *[]noteReply  `json:"progress,omitempty"`
}

// noteReply is one progress note; total only when the host knows it.
type noteReply struct {
	Seq      int64    `json:"seq"`
	Progress float64  `json:"progress"`
	Total    *float64 `json:"total,omitempty"`
	Message  string   `json:"message"`
	At       string   `json:"at"`
}

type captureReply struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode int32  `json:"exit_code"`
}

// invocationRows is invocations' reply.
type invocationRows struct {
	head
	Rows []invocationRow `json:"rows"`
}

type invocationRow struct {
	Invocation string           `json:"invocation"`
	Tool       string           `json:"tool"`
	Input      rawjson.Verbatim `json:"input"`
	Cwd        *string          `json:"cwd,omitempty"`
}

// clientRows is clients' reply.
type clientRows struct {
	head
	Rows []clientRow `json:"rows"`
}

type clientRow struct {
	Client   string      `json:"client"`
	Present  bool        `json:"present"`
	Tools    []toolReply `json:"tools"`
	LastSeen string      `json:"last_seen,omitempty"`
}

// toolReply is a tool as advertised.
type toolReply struct {
	Name         string            `json:"name"`
	Alias        string            `json:"alias,omitempty"` // through a group that aliases it
	Description  string            `json:"description"`
	InputSchema  rawjson.Verbatim  `json:"input_schema"`
	SubjectCwd   *bool             `json:"subject_cwd,omitempty"`
	Title        *string           `json:"title,omitempty"`
	OutputSchema *rawjson.Verbatim `json:"output_schema,omitempty"`
	Annotations  *rawjson.Verbatim `json:"annotations,omitempty"`
}
