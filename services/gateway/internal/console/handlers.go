package console

import (
	"context"
	"net/http"
	"net/url"

	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

// page serves a fragment: read runs as the caller, and its view is
// rendered with tmpl, or its refusal is the answer.
func page(tmpl string, read func(ctx context.Context, r *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, _, ok := caller(w, r)
		if !ok {
			return
		}
		v, err := read(ctx, r)
		if err != nil {
			refuseErr(w, err)
			return
		}
		render(w, tmpl, v)
	}
}

// action serves a form's submission: do runs as the caller with the
// form's fields, and what it returns is rendered with tmpl.
func action(tmpl string, do func(ctx context.Context, r *http.Request, form url.Values) (any, error)) http.HandlerFunc {
	return page(tmpl, func(ctx context.Context, r *http.Request) (any, error) {
		if err := r.ParseForm(); err != nil {
			return nil, httperr.New(http.StatusBadRequest, "reading the form: %v", err)
		}
		return do(ctx, r, r.PostForm)
	})
}

// badForm is a refusal of a form's value.
func badForm(format string, args ...any) error {
	return httperr.New(http.StatusBadRequest, format, args...)
}
