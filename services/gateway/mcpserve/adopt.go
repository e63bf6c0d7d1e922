package mcpserve

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/kit/suite/grpcserver"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

// MaxAdopted bounds the sessions one workspace's mirror takes up from
// other gateways at once (see adopted).
const MaxAdopted = 10_000

// maxSessionID bounds the Mcp-Session-Id a replica takes up.
const maxSessionID = 128

// oldestRevision is what a session-era request without Mcp-Protocol-Version
// speaks: the header came with 2025-06-18, and the SDK reads its absence so.
const oldestRevision = "2025-03-26"

// adopted are sessions of the era with sessions that another replica began
// (a load balancer sends requests anywhere; that replica may have died). A
// session holds nothing the endpoint needs, so any replica takes it up
// under the same Mcp-Session-Id as though its initialize came here; the SDK
// keeps no session it did not begin, so these are kept here, with the same
// idle timeout. docs/mcp.md, "Replicas".
type adopted struct {
	server  *mcp.Server
	timeout time.Duration
	max     int

	mu    sync.Mutex
	byID  map[string]*adoptedSession
	ended map[string]time.Time // sessions a DELETE here ended, and when
}

// endedFor is how long a session a client ended is refused (404, as MCP
// asks) rather than taken up again; at most MaxAdopted are remembered, the
// oldest forgotten first. Another replica does not hear of the end: there
// such a session lives on until its idle timeout.
const endedFor = time.Hour

type adoptedSession struct {
	transport *mcp.StreamableServerTransport
	session   *mcp.ServerSession
	idle      *time.Timer // nil without a timeout; runs while no POST does
	posts     int         // POSTs in flight; guarded by adopted.mu
}

func newAdopted(server *mcp.Server, timeout time.Duration) *adopted {
	return &adopted{server: server, timeout: timeout, max: MaxAdopted, byID: map[string]*adoptedSession{}, ended: map[string]time.Time{}}
}

// serve serves a session-era request that names session id, which the
// SDK's handler of this replica began (known) or not.
func (a *adopted) serve(rw http.ResponseWriter, r *http.Request, sdk http.Handler, id string) {
	// Under a.mu, as adopt connects and records a session under it: a
	// request alongside the one taking a session up must not find it among
	// the server's sessions before it is recorded here, and go to the SDK.
	a.mu.Lock()
	s := a.byID[id]
	began := s == nil && a.began(id)
	_, ended := a.ended[id]
	a.mu.Unlock()
	if r.Method == http.MethodDelete {
		a.end(id)
	}
	switch {
	case began:
		sdk.ServeHTTP(rw, r)
		return
	case ended:
		httperr.Write(rw, http.StatusNotFound, fmt.Sprintf("MCP session %q was ended; begin a new one with initialize", id))
		return
	}
	switch r.Method {
	case http.MethodDelete:
		// The client ends a session: here, if it was taken up here; the
		// replica that began it ends its own at its idle timeout.
		if s != nil {
			_ = s.session.Close()
		}
		rw.WriteHeader(http.StatusNoContent)
		return
	case http.MethodGet, http.MethodPost:
	default:
		rw.Header().Set("Allow", "GET, POST, DELETE")
		httperr.Write(rw, http.StatusMethodNotAllowed, r.Method+" is not a method of the MCP endpoint: it takes GET, POST and DELETE")
		return
	}
	if s == nil {
		err := checkSessionID(id)
		if err == nil {
			s, err = a.adopt(r, id)
		}
		if err != nil {
			httperr.WriteErr(rw, err)
			return
		}
	}
	r.Body = http.MaxBytesReader(rw, r.Body, grpcserver.MaxMessageBytes)
	if r.Method == http.MethodPost {
		a.busy(s, +1)
		defer a.busy(s, -1)
	}
	s.transport.ServeHTTP(rw, r)
}

// end remembers that the client ended session id, forgetting sessions
// ended over endedFor ago, and the oldest when MaxAdopted are remembered.
func (a *adopted) end(id string) {
	if checkSessionID(id) != nil {
		return
	}
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	var oldest string
	for k, at := range a.ended {
		if now.Sub(at) > endedFor {
			delete(a.ended, k)
		} else if oldest == "" || at.Before(a.ended[oldest]) {
			oldest = k
		}
	}
	if len(a.ended) >= a.max {
		delete(a.ended, oldest)
	}
	a.ended[id] = now
}

// busy counts a POST of s in or out: the idle timeout runs only while none
// is in flight, as the SDK's does for the sessions it began.
func (a *adopted) busy(s *adoptedSession, d int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s.posts += d
	if s.idle == nil {
		return
	}
	if s.posts == 0 {
		s.idle.Reset(a.timeout)
	} else {
		s.idle.Stop()
	}
}

// checkSessionID refuses an Mcp-Session-Id the specification does not
// allow (visible ASCII), or longer than any this suite's SDK makes.
func checkSessionID(id string) error {
	if len(id) > maxSessionID {
		return httperr.New(http.StatusBadRequest, "the Mcp-Session-Id header is %d bytes long; at most %d are taken", len(id), maxSessionID)
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return httperr.New(http.StatusBadRequest, "the Mcp-Session-Id header %q holds a byte that is not visible ASCII", id)
		}
	}
	return nil
}

// began says whether the SDK's handler of this replica holds session id.
// a.mu is held.
func (a *adopted) began(id string) bool {
	for ss := range a.server.Sessions() {
		if ss.ID() == id {
			return true
		}
	}
	return false
}

// adopt takes up session id, initialized in the revision r names.
func (a *adopted) adopt(r *http.Request, id string) (*adoptedSession, error) {
	rev := r.Header.Get("Mcp-Protocol-Version")
	if rev == "" {
		rev = oldestRevision
	}
	if _, err := time.Parse(time.DateOnly, rev); err != nil {
		return nil, httperr.New(http.StatusBadRequest, "the Mcp-Protocol-Version header %q is not a revision of MCP (a date, YYYY-MM-DD)", rev)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if s := a.byID[id]; s != nil { // taken up meanwhile by a request alongside
		return s, nil
	}
	if len(a.byID) >= a.max {
		return nil, httperr.New(http.StatusTooManyRequests,
			"this gateway has taken up %d MCP sessions of other gateways for this workspace already; start a new session or try again later", a.max)
	}
	t := &mcp.StreamableServerTransport{SessionID: id}
	ss, err := a.server.Connect(context.WithoutCancel(r.Context()), t, &mcp.ServerSessionOptions{State: &mcp.ServerSessionState{
		InitializeParams: &mcp.InitializeParams{ProtocolVersion: rev}, InitializedParams: &mcp.InitializedParams{},
		NegotiatedProtocolVersion: rev, LogLevel: "info",
	}})
	if err != nil {
		return nil, httperr.New(http.StatusInternalServerError, "taking up MCP session %q: %v", id, err)
	}
	s := &adoptedSession{transport: t, session: ss}
	if a.timeout > 0 {
		s.idle = time.AfterFunc(a.timeout, func() { _ = ss.Close() })
	}
	a.byID[id] = s
	go func() {
		_ = ss.Wait()
		if s.idle != nil {
			s.idle.Stop()
		}
		a.mu.Lock()
		delete(a.byID, id)
		a.mu.Unlock()
	}()
	return s, nil
}
