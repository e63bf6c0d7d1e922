package console

import (
	"context"
	"net/http"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

// auditRows bounds the events one audit page shows.
const auditRows = 200

// auditView is a page of the audit trail and the filter that chose it.
type auditView struct {
	Filter *registryv1.ListAuditRequest
	Since  string // the filter's since, as the form took it
	Events []*registryv1.AuditEvent
	More   bool // the trail holds more that match than the page shows
}

// auditPage shows the audit trail as the caller may see it, filtered by
// the query's fields (those of ListAudit; since is a duration back from
// now, 24h when absent).
func (c *Console) auditPage(ctx context.Context, r *http.Request) (any, error) {
	q := r.URL.Query()
	req := &registryv1.ListAuditRequest{Actor: q.Get("actor"), Workspace: q.Get("workspace"), Client: q.Get("client"),
		Tool: q.Get("tool"), Action: q.Get("action"), Outcome: q.Get("outcome"), PageSize: auditRows}
	since := q.Get("since")
	if since != "" {
		d, err := time.ParseDuration(since)
		if err != nil || d <= 0 {
			return nil, badForm("since %q is not a positive duration such as 1h", since)
		}
		req.Since = timestamppb.New(time.Now().Add(-d))
	}
	res, err := c.Audit.ListAudit(ctx, req)
	if err != nil {
		return nil, err
	}
	return auditView{Filter: req, Since: since, Events: res.GetEvents(), More: res.GetNextPageToken() != ""}, nil
}
