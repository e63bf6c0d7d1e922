package console

import (
	"context"
	"net/http"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

// tokensView is the token list, with the secret of a token just created
// (shown this once: the registry keeps only its hash).
type tokensView struct {
	Tokens  []*registryv1.Token
	Created *registryv1.CreateTokenResponse
}

// tokens lists every token; the registry admits admins only, and its
// refusal of anyone else is the page.
func (c *Console) tokens(w http.ResponseWriter, r *http.Request) {
	ctx, _, ok := caller(w, r)
	if !ok {
		return
	}
	c.renderTokens(ctx, w, nil)
}

func (c *Console) renderTokens(ctx context.Context, w http.ResponseWriter, created *registryv1.CreateTokenResponse) {
	res, err := c.Registry.ListTokens(ctx, &registryv1.ListTokensRequest{})
	if err != nil {
		refuseErr(w, err)
		return
	}
	render(w, "tokens", tokensView{Tokens: res.GetTokens(), Created: created})
}

// createToken mints a token as the caller from the form's fields.
func (c *Console) createToken(w http.ResponseWriter, r *http.Request) {
	ctx, _, ok := caller(w, r)
	if !ok {
		return
	}
	if err := r.ParseForm(); err != nil {
		refuse(w, http.StatusBadRequest, "reading the form: "+err.Error())
		return
	}
	f := r.PostForm
	req := &registryv1.CreateTokenRequest{
		Identity:   strings.TrimSpace(f.Get("identity")),
		Grade:      f.Get("grade"),
		Note:       f.Get("note"),
		Workspaces: splitList(f.Get("workspaces")),
	}
	if ttl := strings.TrimSpace(f.Get("ttl")); ttl != "" {
		d, err := time.ParseDuration(ttl)
		if err != nil || d <= 0 {
			refuse(w, http.StatusBadRequest, "ttl "+quote(ttl)+" is not a positive duration such as 24h")
			return
		}
		req.Ttl = durationpb.New(d)
	}
	res, err := c.Registry.CreateToken(ctx, req)
	if err != nil {
		refuseErr(w, err)
		return
	}
	c.renderTokens(ctx, w, res)
}

// revokeToken revokes one token as the caller.
func (c *Console) revokeToken(w http.ResponseWriter, r *http.Request) {
	ctx, _, ok := caller(w, r)
	if !ok {
		return
	}
	if _, err := c.Registry.RevokeToken(ctx, &registryv1.RevokeTokenRequest{Id: r.PathValue("id")}); err != nil {
		refuseErr(w, err)
		return
	}
	c.renderTokens(ctx, w, nil)
}

// splitList splits a comma- or space-separated list, dropping empties.
func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' })
}
