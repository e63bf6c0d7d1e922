package registry

import (
	"errors"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/names"
)

// errDraining ends long-lived streams when the server shuts down.
var errDraining = status.Error(codes.Unavailable, "the registry is shutting down; reconnect to the restarted registry")

// ReportPresence follows a mailbox's stream of follow reads opening and
// closing. Presence is a refcount of open reads; when the stream ends, for
// whatever reason, everything it opened is withdrawn.
func (s *Service) ReportPresence(stream grpc.ClientStreamingServer[registryv1.ReportPresenceRequest, registryv1.ReportPresenceResponse]) error {
	held := contribution{}
	defer func() { s.st.withdraw(held, time.Now().UTC()) }()

	// Recv blocks and cannot watch the drain, so it runs apart; it ends
	// when the stream does, which returning from here causes.
	msgs := make(chan *registryv1.ReportPresenceRequest)
	errc := make(chan error, 1)
	ctx := stream.Context()
	go func() {
		for {
			m, err := stream.Recv()
			if err != nil {
				errc <- err
				return
			}
			select {
			case msgs <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	for {
		select {
		case m := <-msgs:
			s.report(held, m)
		case err := <-errc:
			if errors.Is(err, io.EOF) {
				return stream.SendAndClose(&registryv1.ReportPresenceResponse{})
			}
			return err
		case <-s.draining:
			return errDraining
		}
	}
}

// report applies one message of a presence stream.
func (s *Service) report(held contribution, m *registryv1.ReportPresenceRequest) {
	// The mailbox reports every reader, but only a client can hold tools;
	// another identity's read changes nothing the registry serves.
	if err := names.CheckClient(m.GetClient()); err != nil {
		s.log.Debug("presence report ignored", "reason", err)
		return
	}
	k := readKey{client: m.GetClient(), session: m.GetSession()}
	now := time.Now().UTC()
	if m.GetOpen() {
		s.st.openRead(held, k, now)
	} else {
		s.st.closeRead(held, k, now)
	}
}
