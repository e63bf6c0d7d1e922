package console

import (
	"context"
	"net/http"
	"net/url"
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
func (c *Console) tokens(ctx context.Context, _ *http.Request) (any, error) {
	return c.readTokens(ctx, nil)
}

func (c *Console) readTokens(ctx context.Context, created *registryv1.CreateTokenResponse) (any, error) {
	res, err := c.Registry.ListTokens(ctx, &registryv1.ListTokensRequest{})
	if err != nil {
		return nil, err
	}
	return tokensView{Tokens: res.GetTokens(), Created: created}, nil
}

// createToken mints a token as the caller from the form's fields.
func (c *Console) createToken(ctx context.Context, _ *http.Request, f url.Values) (any, error) {
	req := &registryv1.CreateTokenRequest{
		Identity:   strings.TrimSpace(f.Get("identity")),
		Grade:      f.Get("grade"),
		Note:       f.Get("note"),
		Workspaces: splitList(f.Get("workspaces")),
	}
	if ttl := strings.TrimSpace(f.Get("ttl")); ttl != "" {
		d, err := time.ParseDuration(ttl)
		if err != nil || d <= 0 {
			return nil, badForm("ttl %q is not a positive duration such as 24h", ttl)
		}
		req.Ttl = durationpb.New(d)
	}
	res, err := c.Registry.CreateToken(ctx, req)
	if err != nil {
		return nil, err
	}
	return c.readTokens(ctx, res)
}

// revokeToken revokes one token as the caller.
func (c *Console) revokeToken(ctx context.Context, r *http.Request, _ url.Values) (any, error) {
	if _, err := c.Registry.RevokeToken(ctx, &registryv1.RevokeTokenRequest{Id: r.PathValue("id")}); err != nil {
		return nil, err
	}
	return c.readTokens(ctx, nil)
}

// splitList splits a comma- or space-separated list, dropping empties.
func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' })
}
