package oauth

import (
	"fmt"
	"net/http"

	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

// Refusal is a token the endpoint does not take: its HTTP status and
// sentence, and the OAuth error code (RFC 6750 §3.1) its challenge carries.
type Refusal struct {
	Err httperr.Error
	// Code is invalid_token (401) or insufficient_scope (403).
	Code string
	// Scope, for insufficient_scope, is what the token lacks.
	Scope string
}

func (r *Refusal) Error() string { return r.Err.Sentence }

// Unwrap lets httperr answer with the refusal's status and sentence.
func (r *Refusal) Unwrap() error { return &r.Err }

// invalid refuses a token that is not valid here (401 invalid_token).
func invalid(format string, args ...any) *Refusal {
	return &Refusal{Err: httperr.Error{Status: http.StatusUnauthorized, Sentence: fmt.Sprintf(format, args...)}, Code: "invalid_token"}
}

// insufficient refuses a valid token that lacks a scope (403).
func insufficient(scope, format string, args ...any) *Refusal {
	return &Refusal{Err: httperr.Error{Status: http.StatusForbidden, Sentence: fmt.Sprintf(format, args...)}, Code: "insufficient_scope", Scope: scope}
}
