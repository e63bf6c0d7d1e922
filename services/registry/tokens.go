package registry

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/services/registry/internal/records"
)

// Token shapes: the secret carries 256 random bits; the id is only a
// handle for listing and revoking, so 32 bits (retried on a clash) do.
const (
	secretPrefix = "sbt_"
	secretBytes  = 32
	idPrefix     = "tok-"
	idBytes      = 4
	maxNoteBytes = 1024
	mintAttempts = 8
	tokenRefusal = "unknown or revoked token"
)

// DefaultTokenTTL is how long a token works when its creator names no ttl.
const DefaultTokenTTL = 90 * 24 * time.Hour

// CreateToken mints a token bound to an identity, a grade, workspaces and
// an expiry. Only the secret's hash is stored; the secret is returned this
// once.
func (s *Service) CreateToken(ctx context.Context, req *registryv1.CreateTokenRequest) (*registryv1.CreateTokenResponse, error) {
	spec, err := checkTokenRequest(req, s.cfg.MaxTokenTTL)
	if err != nil {
		return nil, err
	}
	for range mintAttempts {
		secret := secretPrefix + base64.RawURLEncoding.EncodeToString(randomBytes(secretBytes))
		now := time.Now()
		tok := &registryv1.Token{
			Id:         idPrefix + hex.EncodeToString(randomBytes(idBytes)),
			Identity:   req.GetIdentity(),
			Grade:      string(spec.grade),
			Note:       req.GetNote(),
			Created:    timestamppb.New(now),
			Workspaces: spec.workspaces.List(),
			Expires:    timestamppb.New(now.Add(spec.ttl)),
			Groups:     spec.groups,
		}
		rev, err := s.st.records.CreateToken(ctx, tok, sha256.Sum256([]byte(secret)))
		if errors.Is(err, records.ErrChanged) {
			continue // an id clash: draw again
		}
		if err != nil {
			return nil, storeFailed("create token: storing the token", err)
		}
		if err := s.st.waitApplied(ctx, rev); err != nil {
			return nil, err
		}
		s.st.act(ctx, "token.create", "", tok.GetId(), fmt.Sprintf("%s %s of %s", tok.GetGrade(), tok.GetIdentity(), strings.Join(tok.GetWorkspaces(), ",")))
		return &registryv1.CreateTokenResponse{Token: tok, Secret: secret}, nil
	}
	return nil, status.Errorf(codes.Internal, "create token: %d random ids in a row were taken; the token store is too full", mintAttempts)
}

// ListTokens lists the token records, sorted by id; never their secrets.
func (s *Service) ListTokens(context.Context, *registryv1.ListTokensRequest) (*registryv1.ListTokensResponse, error) {
	s.st.mu.Lock()
	toks := make([]*registryv1.Token, 0, len(s.st.tokens))
	for _, t := range s.st.tokens {
		toks = append(toks, current(t))
	}
	s.st.mu.Unlock()
	slices.SortFunc(toks, func(a, b *registryv1.Token) int { return strings.Compare(a.GetId(), b.GetId()) })
	return &registryv1.ListTokensResponse{Tokens: toks}, nil
}

// RevokeToken deletes a token; the next AuthenticateToken already refuses
// it.
func (s *Service) RevokeToken(ctx context.Context, req *registryv1.RevokeTokenRequest) (*registryv1.RevokeTokenResponse, error) {
	tok, rev, err := s.st.records.RevokeToken(ctx, req.GetId())
	if err != nil {
		return nil, storeFailed(fmt.Sprintf("revoke token %q", req.GetId()), err)
	}
	if tok == nil {
		return nil, status.Errorf(codes.NotFound, "no token %q", req.GetId())
	}
	if err := s.st.waitApplied(ctx, rev); err != nil {
		return nil, err
	}
	s.st.act(ctx, "token.revoke", "", req.GetId(), tok.GetIdentity())
	return &registryv1.RevokeTokenResponse{Token: current(tok)}, nil
}

// AuthenticateToken maps a bearer token to its identity, grade and
// workspaces. It reads the bucket every time, not the view, so a
// revocation on any replica takes effect at once; an expired token is
// refused with its own sentence.
func (s *Service) AuthenticateToken(ctx context.Context, req *registryv1.AuthenticateTokenRequest) (*registryv1.AuthenticateTokenResponse, error) {
	tok, err := s.st.records.TokenByHash(ctx, sha256.Sum256([]byte(req.GetSecret())))
	if err != nil {
		return nil, storeFailed("authenticate token", err)
	}
	if tok == nil {
		return nil, status.Error(codes.Unauthenticated, tokenRefusal)
	}
	tok = current(tok)
	if exp := tok.GetExpires().AsTime(); !time.Now().Before(exp) {
		return nil, status.Errorf(codes.Unauthenticated,
			"token %s of %q expired at %s; an admin mints a new one (switchboard tokens create)", tok.GetId(), tok.GetIdentity(), exp.UTC().Format(time.RFC3339))
	}
	return &registryv1.AuthenticateTokenResponse{Identity: tok.GetIdentity(), Grade: tok.GetGrade(),
		Workspaces: tok.GetWorkspaces(), Expires: tok.GetExpires(), Groups: tok.GetGroups()}, nil
}

// randomBytes returns n bytes from the system's CSPRNG (crypto/rand.Read
// never fails; it crashes the program rather than return weak bytes).
func randomBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return b
}
