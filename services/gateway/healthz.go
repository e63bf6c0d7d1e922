package gateway

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
	"github.com/switchboard-run/switchboard/services/gateway/internal/jsonstr"
)

// healthTimeout bounds each backend's check, so a probe gets its answer
// even when a backend hangs.
const healthTimeout = 2 * time.Second

// healthCheck answers GET /healthz from grpc.health.v1 of every backend.
type healthCheck struct {
	names   []string // sorted, so the reply's order is stable
	clients map[string]healthpb.HealthClient
}

func newHealth(conns map[string]*grpc.ClientConn) *healthCheck {
	h := &healthCheck{clients: map[string]healthpb.HealthClient{}}
	for name, cc := range conns {
		h.names = append(h.names, name)
		h.clients[name] = healthpb.NewHealthClient(cc)
	}
	slices.Sort(h.names)
	return h
}

// ServeHTTP checks the backends at once, in parallel: 200
// {"ok":true,"<backend>":"SERVING",...}, or 503 with the envelope naming
// each backend that is down and why.
func (h *healthCheck) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), healthTimeout)
	defer cancel()
	states := make([]string, len(h.names))
	var wg sync.WaitGroup
	for i, name := range h.names {
		wg.Go(func() { states[i] = check(ctx, h.clients[name]) })
	}
	wg.Wait()
	var down []string
	for i, name := range h.names {
		if states[i] != healthpb.HealthCheckResponse_SERVING.String() {
			down = append(down, name+" ("+states[i]+")")
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	if len(down) > 0 {
		httperr.Write(w, http.StatusServiceUnavailable, fmt.Sprintf("backend down: %s", strings.Join(down, ", ")))
		return
	}
	b := []byte(`{"ok":true`)
	for i, name := range h.names {
		b = append(jsonstr.Append(append(b, ','), name), ':')
		b = jsonstr.Append(b, states[i])
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(b, '}'))
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
