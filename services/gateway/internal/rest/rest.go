// Package rest holds the REST routes grpc-gateway generated from
// proto/http_routes.yaml for the three services, on one runtime.ServeMux:
// snake_case JSON with zero values printed and absent messages absent,
// strict decoding, the caller's identity forwarded, and every error in the
// act envelope with the act status mapping.
package rest

import (
	"context"
	"errors"
	"fmt"
	"github.com/switchboard-run/switchboard/kit/suite/audit"
	"net/http"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/contract"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
	"github.com/switchboard-run/switchboard/services/gateway/internal/bodylimit"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

// Conns are the shared client connections, one per backend.
type Conns struct {
	Registry, Mailbox, Bridge grpc.ClientConnInterface
}

// New returns the REST mux. Requests must carry the caller's identity in
// their context (identity.NewContext); it is forwarded to the backends with
// the kit's metadata (on behalf of, over the gateway's own certificate in
// production). One HTTP header is forwarded, Idempotency-Key (to Invoke
// and Call, as contract.IdempotencyKey); the caller's credentials end
// at the gateway.
func New(c Conns) (*runtime.ServeMux, error) {
	mux := runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, NewMarshaler()),
		runtime.WithIncomingHeaderMatcher(idempotencyKeyOnly),
		runtime.WithMetadata(forwardIdentity),
		runtime.WithErrorHandler(writeError),
		runtime.WithRoutingErrorHandler(writeRoutingError),
		runtime.WithDisableHTTPMethodOverride(),
		runtime.WithMiddlewares(nameRoute, checkIdempotencyKey, earlyHandle),
	)
	// The *HandlerClient forms take the shared connections; ctx is unused
	// by them (only the *FromEndpoint forms dial and watch it).
	ctx := context.Background()
	if err := registryv1.RegisterRegistryServiceHandlerClient(ctx, mux, registryv1.NewRegistryServiceClient(c.Registry)); err != nil {
		return nil, fmt.Errorf("registering the registry's REST routes: %w", err)
	}
	if err := mailboxv1.RegisterMailboxServiceHandlerClient(ctx, mux, recoveringMailbox{mailboxv1.NewMailboxServiceClient(c.Mailbox), c.Mailbox}); err != nil {
		return nil, fmt.Errorf("registering the mailbox's REST routes: %w", err)
	}
	if err := bridgev1.RegisterBridgeServiceHandlerClient(ctx, mux, bridgev1.NewBridgeServiceClient(c.Bridge)); err != nil {
		return nil, fmt.Errorf("registering the bridge's REST routes: %w", err)
	}
	if err := registryv1.RegisterAuditServiceHandlerClient(ctx, mux, registryv1.NewAuditServiceClient(c.Registry)); err != nil {
		return nil, fmt.Errorf("registering the audit trail's REST routes: %w", err)
	}
	return mux, nil
}

// IdempotencyHeader is the HTTP header naming a call's idempotency key.
const IdempotencyHeader = "Idempotency-Key"

// idempotencyKeyOnly forwards the Idempotency-Key header and no other.
func idempotencyKeyOnly(h string) (string, bool) {
	if http.CanonicalHeaderKey(h) == IdempotencyHeader {
		return contract.IdempotencyKey, true
	}
	return "", false
}

// checkIdempotencyKey refuses an Idempotency-Key header the mailbox could
// not be sent (gRPC metadata is visible ASCII), with the mailbox's sentence.
func checkIdempotencyKey(next runtime.HandlerFunc) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		for _, k := range r.Header.Values(IdempotencyHeader) {
			if err := contract.CheckIdempotencyKey(k); err != nil {
				httperr.WriteErr(w, err)
				return
			}
		}
		next(w, r, params)
	}
}

// forwardIdentity is the metadata identity.As would send for the caller.
func forwardIdentity(ctx context.Context, _ *http.Request) metadata.MD {
	id, ok := identity.FromContext(ctx)
	if !ok {
		return nil // the backend refuses the call as UNAUTHENTICATED
	}
	md, _ := metadata.FromOutgoingContext(audit.WithFront(identity.As(context.Background(), id), "rest"))
	return md
}

// writeError answers a failed REST call with the envelope: 413 when the
// body hit the limit (the generated handler reports that as a decode
// error), else the status of the gRPC code and its message unchanged.
func writeError(ctx context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	if bodylimit.Exceeded(r.Context()) {
		httperr.Write(w, http.StatusRequestEntityTooLarge, bodylimit.Sentence)
		return
	}
	var hs *runtime.HTTPStatusError
	if errors.As(err, &hs) {
		_, sentence := httperr.From(hs.Err)
		httperr.Write(w, hs.HTTPStatus, sentence)
		return
	}
	httperr.WriteErr(w, err)
}

// writeRoutingError answers a request no route takes.
func writeRoutingError(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, status int) {
	switch status {
	case http.StatusNotFound:
		httperr.Write(w, status, fmt.Sprintf("no route %s %s: see /openapi.json for the REST routes, or POST /v1/act", r.Method, r.URL.Path))
	case http.StatusMethodNotAllowed:
		httperr.Write(w, status, fmt.Sprintf("%s is not allowed on %s: see /openapi.json for the methods each route takes", r.Method, r.URL.Path))
	default:
		httperr.Write(w, status, fmt.Sprintf("%s %s cannot be routed: %s", r.Method, r.URL.Path, http.StatusText(status)))
	}
}

// streamRoutes are the server-streaming routes: a follow read or a watch
// stays open for hours, so the server's write timeout must not cut it.
var streamRoutes = map[string]bool{
	"/v1/invocations:follow": true,
	"/v1/invocations:watch":  true,
	"/v1/watch":              true,
}

// Unbounded lifts the write deadline of the streaming routes, which end
// when the client or the backend ends them; every other route keeps it.
func Unbounded(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && streamRoutes[r.URL.Path] {
			_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
		}
		next.ServeHTTP(w, r)
	})
}

// nameRoute names a REST request's route for the HTTP metrics by the path
// template it matched ("/v1/workspaces/{workspace}/tools"), not by its
// path: one series per route, whatever the names in it.
func nameRoute(next runtime.HandlerFunc) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		if p, ok := runtime.HTTPPattern(r.Context()); ok {
			telemetry.SetRoute(r.Context(), p.String())
		}
		next(w, r, params)
	}
}
