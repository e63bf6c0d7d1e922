package registry

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/identity"
)

// The audit trail (docs/security.md, "Audit"): the registry declares the
// stream, records its own administrative acts in it, and serves reading it.

// Bounds of a read of the trail.
const (
	auditPage     = 100     // a page's events when the request names none
	maxAuditPage  = 1000    // the most a page may ask for
	maxAuditScan  = 100_000 // events a page reads at most before it stops, matching or not
	auditFetch    = 512     // events fetched at once
	auditLookback = 24 * time.Hour
)

// act records an administrative act of the caller's, once it succeeded.
func (s *state) act(ctx context.Context, action, workspace, target, detail string) {
	id, _ := identity.Caller(ctx)
	s.audit.Record(&registryv1.AuditEvent{Actor: id.Name, Workspace: workspace, Action: action, Target: target, Detail: detail})
}

// auditService serves AuditService from the registry's trail.
type auditService struct {
	registryv1.UnimplementedAuditServiceServer
	s *Service
}

// auditQuery is a request's filter with what the caller may see.
type auditQuery struct {
	req   *registryv1.ListAuditRequest
	until time.Time
	who   identity.Identity
	sees  identity.Workspaces
}

// matches reports whether e passes the filter and the caller may see it:
// a driver only its own events; an event of no workspace only a caller who
// sees every workspace.
func (q auditQuery) matches(e *registryv1.AuditEvent) bool {
	r, inv := q.req, e.GetInvocation()
	switch {
	case q.who.Grade == identity.Driver && e.GetActor() != q.who.Name,
		e.GetWorkspace() == "" && !q.sees.All(),
		e.GetWorkspace() != "" && !q.sees.Sees(e.GetWorkspace()),
		r.GetActor() != "" && e.GetActor() != r.GetActor(),
		r.GetWorkspace() != "" && e.GetWorkspace() != r.GetWorkspace(),
		r.GetAction() != "" && e.GetAction() != r.GetAction(),
		r.GetOutcome() != "" && inv.GetOutcome() != r.GetOutcome(),
		r.GetClient() != "" && inv.GetClient() != r.GetClient() && e.GetTarget() != r.GetClient(),
		r.GetTool() != "" && inv.GetPresentedName() != r.GetTool() && inv.GetTool() != r.GetTool(),
		!q.until.IsZero() && !e.GetAt().AsTime().Before(q.until):
		return false
	}
	return true
}

// query checks a request and names where the read starts.
func (a auditService) query(ctx context.Context, req *registryv1.ListAuditRequest) (auditQuery, jetstream.OrderedConsumerConfig, error) {
	who, sees, err := a.s.st.caller(ctx)
	if err != nil {
		return auditQuery{}, jetstream.OrderedConsumerConfig{}, err
	}
	q := auditQuery{req: req, who: who, sees: sees}
	if req.GetUntil() != nil {
		q.until = req.GetUntil().AsTime()
	}
	if n := req.GetPageSize(); n < 0 || n > maxAuditPage {
		return q, jetstream.OrderedConsumerConfig{}, status.Errorf(codes.InvalidArgument, "page_size %d is outside 0–%d", n, maxAuditPage)
	}
	cfg := jetstream.OrderedConsumerConfig{}
	switch {
	case req.GetPageToken() != "":
		seq, err := strconv.ParseUint(strings.TrimPrefix(req.GetPageToken(), "seq-"), 10, 64)
		if err != nil || !strings.HasPrefix(req.GetPageToken(), "seq-") || seq == 0 {
			return q, cfg, status.Errorf(codes.InvalidArgument, "page_token %q is not one this trail gave", req.GetPageToken())
		}
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, seq
	default:
		since := time.Now().Add(-auditLookback)
		if req.GetSince() != nil {
			since = req.GetSince().AsTime()
		}
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &since
	}
	return q, cfg, nil
}

// ListAudit reads one page: up to page_size events that match, scanning at
// most maxAuditScan, up to the trail's end as it stood when the call came.
func (a auditService) ListAudit(ctx context.Context, req *registryv1.ListAuditRequest) (*registryv1.ListAuditResponse, error) {
	q, cfg, err := a.query(ctx, req)
	if err != nil {
		return nil, err
	}
	size := int(req.GetPageSize())
	if size == 0 {
		size = auditPage
	}
	info, err := a.s.trail.Info(ctx)
	if err != nil {
		return nil, storeFailed("reading the audit trail", err)
	}
	last := info.State.LastSeq
	res := &registryv1.ListAuditResponse{}
	if last == 0 || (cfg.OptStartSeq > last) {
		return res, nil
	}
	cons, err := a.s.trail.OrderedConsumer(ctx, cfg)
	if err != nil {
		return nil, storeFailed("reading the audit trail", err)
	}
	scanned := 0
	for {
		batch, err := cons.Fetch(auditFetch, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			return nil, storeFailed("reading the audit trail", err)
		}
		got := 0
		for m := range batch.Messages() {
			got++
			meta, err := m.Metadata()
			if err != nil {
				continue
			}
			seq := meta.Sequence.Stream
			if seq > last {
				return res, nil
			}
			scanned++
			e := &registryv1.AuditEvent{}
			if proto.Unmarshal(m.Data(), e) == nil {
				e.Seq = seq
				if q.matches(e) {
					res.Events = append(res.Events, e)
				}
			}
			if seq == last {
				return res, nil
			}
			if len(res.Events) == size || scanned == maxAuditScan {
				res.NextPageToken = "seq-" + strconv.FormatUint(seq+1, 10)
				return res, nil
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return nil, storeFailed("reading the audit trail", err)
		}
		if got == 0 {
			return res, nil // past the start time nothing is left
		}
	}
}

// FollowAudit streams the events that match from the request's start on,
// then each new one, until the caller hangs up.
func (a auditService) FollowAudit(req *registryv1.ListAuditRequest, stream grpc.ServerStreamingServer[registryv1.AuditEvent]) error {
	ctx := stream.Context()
	q, cfg, err := a.query(ctx, req)
	if err != nil {
		return err
	}
	cons, err := a.s.trail.OrderedConsumer(ctx, cfg)
	if err != nil {
		return storeFailed("reading the audit trail", err)
	}
	it, err := cons.Messages()
	if err != nil {
		return storeFailed("reading the audit trail", err)
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	defer it.Stop()
	for {
		m, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return status.FromContextError(ctx.Err()).Err()
			}
			return storeFailed("following the audit trail", err)
		}
		meta, err := m.Metadata()
		if err != nil {
			continue
		}
		e := &registryv1.AuditEvent{}
		if proto.Unmarshal(m.Data(), e) != nil {
			continue
		}
		e.Seq = meta.Sequence.Stream
		if q.matches(e) {
			if err := stream.Send(e); err != nil {
				return err
			}
		}
	}
}
