package act

import (
	"context"
	"io"
	"net/http"

	"google.golang.org/grpc/metadata"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/audit"
	"github.com/switchboard-run/switchboard/kit/suite/contract"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/services/gateway/internal/bodylimit"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

// Handler serves POST /v1/act. The caller's identity must already be in the
// request context (identity.NewContext, by the caller middleware); every
// RPC is made on its behalf.
type Handler struct {
	// Registry serves advertise and clients.
	Registry registryv1.RegistryServiceClient
	// Mailbox serves invoke, invocations, complete and capture (and the
	// progress a capture asks for, with Status).
	Mailbox mailboxv1.MailboxServiceClient
}

// ServeHTTP decodes one act, makes its RPC and writes the reply or the
// refusal envelope. The RPC runs under the request's context, so a client
// that goes away cancels it (and the mailbox releases a held read at once).
func (h Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		httperr.Write(w, http.StatusMethodNotAllowed, "/v1/act takes POST, not "+r.Method)
		return
	}
	id, ok := identity.FromContext(r.Context())
	if !ok {
		httperr.Write(w, http.StatusInternalServerError, "no identity reached the act handler: the gateway is wired without its identity middleware")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		if bodylimit.IsTooLarge(err) {
			httperr.Write(w, http.StatusRequestEntityTooLarge, bodylimit.Sentence)
			return
		}
		httperr.Write(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		return
	}
	req, err := Decode(body)
	if err != nil {
		httperr.WriteErr(w, err)
		return
	}
	if err := limit(id, req); err != nil {
		httperr.WriteErr(w, err)
		return
	}
	reply, err := h.Do(identity.As(r.Context(), id), req)
	if err != nil {
		httperr.WriteErr(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(reply)
}

// Do makes req's RPC under ctx (which names the caller) and returns the
// reply's bytes. A refusal from a service is its gRPC status, unchanged.
func (h Handler) Do(ctx context.Context, req *Request) ([]byte, error) {
	switch req.Op {
	case OpAdvertise:
		res, err := h.Registry.Advertise(ctx, req.Advertise)
		if err != nil {
			return nil, err
		}
		return EncodeAdvertised(res)
	case OpInvoke:
		if req.Group != nil {
			if err := h.throughGroup(ctx, req.Group, req.Invoke); err != nil {
				return nil, err
			}
		}
		if req.IdempotencyKey != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, contract.IdempotencyKey, req.IdempotencyKey)
		}
		res, err := h.Mailbox.Invoke(audit.WithFront(ctx, "act"), req.Invoke)
		if err != nil {
			return nil, err
		}
		return EncodeRouted(res.GetInvocation())
	case OpInvocations:
		res, err := h.Mailbox.Invocations(ctx, req.Invocations)
		if err != nil {
			return nil, err
		}
		return EncodeInvocations(res)
	case OpComplete:
		res, err := h.Mailbox.Complete(ctx, req.Complete)
		if err != nil {
			return nil, err
		}
		return EncodeReceipt(res.GetInvocation(), res.GetCapture())
	case OpCapture:
		res, err := h.Mailbox.Capture(ctx, req.Capture)
		if err != nil {
			return nil, err
		}
		if req.Progress && res.GetCapture() == nil {
			return h.progress(ctx, res.GetInvocation())
		}
		return EncodeReceipt(res.GetInvocation(), res.GetCapture())
	case OpClients:
		return h.clients(ctx, req)
	}
	return nil, httperr.New(http.StatusInternalServerError, "act %q has no dispatch", req.Op)
}
