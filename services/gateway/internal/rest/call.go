package rest

import (
	"context"
	"net/http"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/contract"
	"github.com/switchboard-run/switchboard/kit/suite/mailboxcall"
)

// recoveringMailbox is the mailbox client behind the REST routes. Its Call
// (POST /v1/call) names the handle at once, in a 103 Early Hints response,
// and outlives a mailbox replica that dies mid-call: the invocation is
// stored in NATS and its host goes on with it, so the call collects the
// capture by the handle the Call's header named, through a replica that
// is ready (kit/suite/mailboxcall), rather than answering 503 for a tool that ran.
type recoveringMailbox struct {
	mailboxv1.MailboxServiceClient
	cc grpc.ClientConnInterface
}

func (m recoveringMailbox) Call(ctx context.Context, req *mailboxv1.CallRequest, opts ...grpc.CallOption) (*mailboxv1.CallResponse, error) {
	named, _ := ctx.Value(namedKey{}).(func(string))
	return mailboxcall.CallNamed(ctx, m.cc, req, named, nil, opts...)
}

// HandleHeader is the response header naming a call's handle: in the 103
// Early Hints sent the moment the mailbox names it, and in the final
// response, where grpc-gateway puts the Call's header metadata.
var HandleHeader = http.CanonicalHeaderKey(runtime.MetadataHeaderPrefix + contract.InvocationHeader)

// namedKey carries, on a POST /v1/call's context, what tells the client
// the call's handle.
type namedKey struct{}

// earlyHandle has POST /v1/call send its handle before it waits, so that a
// client whose connection breaks can still collect the capture by it.
func earlyHandle(next runtime.HandlerFunc) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/call" {
			r = r.WithContext(context.WithValue(r.Context(), namedKey{}, func(id string) {
				h := w.Header()
				h.Set(HandleHeader, id)
				w.WriteHeader(http.StatusEarlyHints) // sent at once; the final status is still to come
				h.Del(HandleHeader)                  // the final response names it once, as grpc-gateway adds it
			}))
		}
		next(w, r, params)
	}
}
