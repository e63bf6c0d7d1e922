// Package act is the act endpoint, POST /v1/act (docs/design.md §2): one JSON object
// in, one out. It holds the strict envelope decoder (each refusal names what
// was wrong), the replies (encoding/json over structs in the shapes' order,
// JSON-valued fields verbatim), and the dispatch of each op to its RPC.
package act

import (
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

// Op names an act: the request's "op".
type Op string

// The ops of docs/design.md §2.
const (
	OpAdvertise   Op = "advertise"
	OpInvoke      Op = "invoke"
	OpInvocations Op = "invocations"
	OpComplete    Op = "complete"
	OpCapture     Op = "capture"
	OpClients     Op = "clients"
)

// Request is one decoded act: Op, and the RPC request of that op (exactly one
// of the pointers is set, the one Op names).
type Request struct {
	Op          Op
	Advertise   *registryv1.AdvertiseRequest
	Invoke      *mailboxv1.InvokeRequest
	Invocations *mailboxv1.InvocationsRequest
	Complete    *mailboxv1.CompleteRequest
	Capture     *mailboxv1.CaptureRequest
	Clients     *registryv1.ListClientsRequest
	// Group is the tool group an invoke or clients names ("group"), if any.
	Group *Group
	// IdempotencyKey is an invoke's "idempotency_key": a retry with it
	// returns the first invoke's handle (contract.IdempotencyKey).
	IdempotencyKey string
	// Progress is a capture's "progress": true, asking a running reply to
	// carry the host's latest progress notes.
	Progress bool
}
