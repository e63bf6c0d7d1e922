package mailbox

import (
	"log/slog"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchboard-run/switchboard/kit/suite/natsconn"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/budget"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// Subjects on which replicas tell each other what their ledgers should
// hear: a capture stored, an invocation collected or cancelled. An
// invocation is counted by the replica it was posted through, and its host
// and its poster may reach any other.
const (
	heldCaptured = "sb.held.captured" // "<id> <bytes>"
	heldGone     = "sb.held.gone"     // "<id>"
	heldNoted    = "sb.held.noted"    // "<id> <bytes>": what its progress notes hold now
)

// held is the service's byte ledger, the same whatever store keeps the
// invocations, with its announcements to the other replicas. Only the
// replica an invocation was posted through counts it, so an act on one it
// counts is announced to nobody: a Call answered where it was posted sends
// nothing. Best effort across replicas: a lost announcement keeps bytes
// counted until the TTL.
type held struct {
	ledger *budget.Ledger
	nc     *nats.Conn
	subs   []*nats.Subscription
	log    *slog.Logger
}

func newHeld(nc *nats.Conn, b Bounds, log *slog.Logger) (*held, error) {
	h := &held{nc: nc, log: log, ledger: budget.New(budget.Limits{
		Total: b.MaxHeldBytes, PerPoster: b.MaxPosterBytes, PerClient: b.MaxClientBytes, TTL: b.TTL}, nil)}
	for subject, f := range map[string]nats.MsgHandler{heldCaptured: h.heardCaptured, heldGone: h.heardGone, heldNoted: h.heardNoted} {
		sub, err := nc.Subscribe(subject, f)
		if err != nil {
			h.close()
			return nil, err
		}
		h.subs = append(h.subs, sub)
	}
	// The server holds the subscriptions before the replica serves, so it
	// hears every announcement from its first post on; NATS out of reach
	// only delays them.
	if err := nc.FlushTimeout(natsconn.RequestTimeout); err != nil {
		log.Warn("budget announcements may miss this replica until NATS answers", "err", err)
	}
	return h, nil
}

func (h *held) close() {
	for _, s := range h.subs {
		_ = s.Unsubscribe()
	}
}

// reserve counts p, or refuses it with the budget's sentence.
func (h *held) reserve(p inflight.Post) error {
	return h.ledger.Reserve(p.ID, p.Poster, p.Client, int64(inflight.PostSize(p.Input, p.Tool, p.Cwd, p.MCPParams)))
}

// captured counts a stored capture until it is collected.
func (h *held) captured(id string, c inflight.Capture) {
	n := int64(c.Size()) // an MCP server's result and error count too
	if !h.ledger.Captured(id, n) {
		h.announce(heldCaptured, id+" "+strconv.FormatInt(n, 10))
	}
}

// noted counts what id's progress notes hold now, until it is collected.
func (h *held) noted(id string, n int) {
	if !h.ledger.Noted(id, int64(n)) {
		h.announce(heldNoted, id+" "+strconv.Itoa(n))
	}
}

// settled releases id for its poster after an act on it: once its capture
// was taken or it was cancelled (taken: the store checked the poster, and
// the other replicas are told), or when the store says it is absent
// (expired, collected elsewhere), if poster posted it here.
func (h *held) settled(id, poster string, taken bool, err error) {
	switch {
	case taken:
		if !h.ledger.Release(id, poster) {
			h.announce(heldGone, id)
		}
	case status.Code(err) == codes.NotFound:
		h.ledger.Release(id, poster)
	}
}

func (h *held) announce(subject, data string) {
	h.sent(subject, h.nc.Publish(subject, []byte(data)))
}

func (h *held) sent(subject string, err error) {
	if err != nil {
		h.log.Debug("a budget announcement was not sent", "subject", subject, "err", err)
	}
}

func (h *held) heardCaptured(m *nats.Msg) {
	id, n, ok := strings.Cut(string(m.Data), " ")
	bytes, err := strconv.ParseInt(n, 10, 64)
	if ok && err == nil && bytes >= 0 {
		h.ledger.Captured(id, bytes)
	}
}

func (h *held) heardNoted(m *nats.Msg) {
	id, n, ok := strings.Cut(string(m.Data), " ")
	bytes, err := strconv.ParseInt(n, 10, 64)
	if ok && err == nil && bytes >= 0 {
		h.ledger.Noted(id, bytes)
	}
}

func (h *held) heardGone(m *nats.Msg) { h.ledger.Forget(string(m.Data)) }
