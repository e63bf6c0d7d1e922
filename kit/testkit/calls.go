package testkit

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// As is a context whose gRPC calls assert the identity name with grade, as
// a dev-mode suite reads it.
func As(name string, grade identity.Grade) context.Context {
	return identity.As(context.Background(), identity.Identity{Name: name, Grade: grade})
}

// AsIn is As for an identity whose workspaces are stated, as the gateway
// states a token's: it sees those and nothing else ("*" for every one).
func AsIn(name string, grade identity.Grade, workspaces ...string) context.Context {
	ws, err := identity.ParseWorkspaces(workspaces)
	if err != nil {
		panic(fmt.Sprintf("testkit.AsIn: %v", err))
	}
	return identity.As(context.Background(), identity.Identity{Name: name, Grade: grade, Workspaces: &ws})
}

// Refused checks that err is a gRPC status with code and exactly msg: the
// sentence a person reads is part of the contract.
func Refused(t TB, err error, code codes.Code, msg string) {
	t.Helper()
	st, _ := status.FromError(err)
	if err == nil || st.Code() != code || st.Message() != msg {
		t.Fatalf("got %v\nwant %s %q", err, code, msg)
	}
}
