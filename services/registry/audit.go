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
	"github.com/switchboard-run/switchboard/kit/suite/audit"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// The audit trail (docs/security.md, "Audit"): the registry declares the
// stream, records its own administrative acts in it, and serves reading it.

// Bounds of a read of the trail.
const (
	auditPage     = 100         // a page's events when the request names none
	maxAuditPage  = 1000        // the most a page may ask for
	maxAuditScan  = 10_000      // messages (batches) a page reads at most before it stops, matching or not
	batchSlack    = time.Minute // how much earlier than since a read starts, for batches sent late
	auditFetch    = 512         // messages (batches) fetched at once
	auditLookback = 24 * time.Hour
	// maxAuditPageBytes bounds a page's events, well under a gRPC message's
	// 4 MiB: events that record inputs and outputs run to 160 KiB each.
	maxAuditPageBytes = 2 << 20
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

// auditQuery is a request's filter with what the caller may see, and
// where in the trail it starts: an event's seq is its message's stream
// sequence times audit.MaxBatch plus its place in the message's batch.
type auditQuery struct {
	req          *registryv1.ListAuditRequest
	since, until time.Time
	from         uint64 // the first event seq to show (a page token's)
	who          identity.Identity
	sees         identity.Workspaces
}

// events decodes one message of the trail into the events of it the query
// shows, each with its seq.
func (q auditQuery) events(m jetstream.Msg) []*registryv1.AuditEvent {
	meta, err := m.Metadata()
	if err != nil {
		return nil
	}
	batch, err := audit.Decode(m.Data())
	if err != nil {
		return nil
	}
	var out []*registryv1.AuditEvent
	for i, e := range batch.GetEvents() {
		e.Seq = meta.Sequence.Stream*audit.MaxBatch + uint64(i)
		if e.Seq >= q.from && !e.GetAt().AsTime().Before(q.since) && q.matches(e) {
			out = append(out, e)
		}
	}
	return out
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
	q.since = time.Now().Add(-auditLookback)
	if req.GetSince() != nil {
		q.since = req.GetSince().AsTime()
	}
	switch {
	case req.GetPageToken() != "":
		seq, err := strconv.ParseUint(strings.TrimPrefix(req.GetPageToken(), "seq-"), 10, 64)
		if err != nil || !strings.HasPrefix(req.GetPageToken(), "seq-") || seq < audit.MaxBatch {
			return q, cfg, status.Errorf(codes.InvalidArgument, "page_token %q is not one this trail gave", req.GetPageToken())
		}
		q.from = seq
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, seq/audit.MaxBatch
	default:
		// A batch is sent a little after its first event happened.
		start := q.since.Add(-batchSlack)
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &start
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
	if last == 0 || cfg.OptStartSeq > last {
		return res, nil
	}
	cons, err := a.s.trail.OrderedConsumer(ctx, cfg)
	if err != nil {
		return nil, storeFailed("reading the audit trail", err)
	}
	scanned, bytes := 0, 0
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
			for _, e := range q.events(m) {
				n := proto.Size(e)
				if len(res.Events) > 0 && bytes+n > maxAuditPageBytes {
					res.NextPageToken = "seq-" + strconv.FormatUint(e.Seq, 10)
					return res, nil
				}
				bytes += n
				res.Events = append(res.Events, e)
				if len(res.Events) == size {
					res.NextPageToken = "seq-" + strconv.FormatUint(e.Seq+1, 10)
					return res, nil
				}
			}
			if scanned++; seq == last {
				return res, nil
			}
			if scanned == maxAuditScan {
				res.NextPageToken = "seq-" + strconv.FormatUint((seq+1)*audit.MaxBatch, 10)
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
func (a auditService) FollowAudit(f *registryv1.FollowAuditRequest, stream grpc.ServerStreamingServer[registryv1.FollowAuditResponse]) error {
	ctx := stream.Context()
	q, cfg, err := a.query(ctx, &registryv1.ListAuditRequest{Actor: f.GetActor(), Workspace: f.GetWorkspace(), Client: f.GetClient(),
		Tool: f.GetTool(), Action: f.GetAction(), Outcome: f.GetOutcome(), Since: f.GetSince()})
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
		for _, e := range q.events(m) {
			if err := stream.Send(&registryv1.FollowAuditResponse{Event: e}); err != nil {
				return err
			}
		}
	}
}
