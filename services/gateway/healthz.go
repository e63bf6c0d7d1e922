package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/switchboard-run/switchboard/kit/lib/rawjson"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

// healthTimeout bounds each backend's check, so a probe gets its answer
// even when a backend hangs.
const healthTimeout = 2 * time.Second

// healthCheck answers GET /healthz from grpc.health.v1 of every backend.
type healthCheck struct {
	registry, mailbox, bridge healthpb.HealthClient
}

func newHealth(registry, mailbox, bridge grpc.ClientConnInterface) *healthCheck {
	return &healthCheck{registry: healthpb.NewHealthClient(registry), mailbox: healthpb.NewHealthClient(mailbox),
		bridge: healthpb.NewHealthClient(bridge)}
}

// healthReply is the 200 body: each backend's state, by name in order.
type healthReply struct {
	OK       bool   `json:"ok"`
	Bridge   string `json:"bridge"`
	Mailbox  string `json:"mailbox"`
	Registry string `json:"registry"`
}

// ServeHTTP checks the backends at once, in parallel: 200
// {"ok":true,"<backend>":"SERVING",...}, or 503 with the envelope naming
// each backend that is down and why.
func (h *healthCheck) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), healthTimeout)
	defer cancel()
	reply := healthReply{OK: true}
	backends := []struct {
		name   string
		client healthpb.HealthClient
		state  *string
	}{{"bridge", h.bridge, &reply.Bridge}, {"mailbox", h.mailbox, &reply.Mailbox}, {"registry", h.registry, &reply.Registry}}
	var wg sync.WaitGroup
	for _, b := range backends {
		wg.Go(func() { *b.state = check(ctx, b.client) })
	}
	wg.Wait()
	var down []string
	for _, b := range backends {
		if *b.state != healthpb.HealthCheckResponse_SERVING.String() {
			down = append(down, b.name+" ("+*b.state+")")
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	if len(down) > 0 {
		httperr.Write(w, http.StatusServiceUnavailable, fmt.Sprintf("backend down: %s", strings.Join(down, ", ")))
		return
	}
	body, _ := rawjson.Marshal(reply) // strings and a bool always encode
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// check is one backend's state: its serving status, or what failed.
func check(ctx context.Context, c healthpb.HealthClient) string {
	res, err := c.Check(ctx, &healthpb.HealthCheckRequest{Service: ""})
	if err != nil {
		_, sentence := httperr.From(err)
		return sentence
	}
	return res.GetStatus().String()
}
