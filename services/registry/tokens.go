package registry

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/identity"
	"github.com/switchboard-run/switchboard/services/registry/internal/store"
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

// CreateToken mints a token bound to an identity and grade. Only the
// secret's hash is stored; the secret is returned this once.
func (s *Service) CreateToken(_ context.Context, req *registryv1.CreateTokenRequest) (*registryv1.CreateTokenResponse, error) {
	if err := identity.CheckName(req.GetIdentity()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "create token: %v", err)
	}
	switch identity.Grade(req.GetGrade()) {
	case identity.Operator, identity.Host:
	default:
		return nil, status.Errorf(codes.InvalidArgument, "create token: grade %q cannot be minted; want \"operator\" or \"host\"", req.GetGrade())
	}
	if len(req.GetNote()) > maxNoteBytes {
		return nil, status.Errorf(codes.InvalidArgument, "create token: the note is %d bytes; at most %d are kept", len(req.GetNote()), maxNoteBytes)
	}
	for range mintAttempts {
		secret := secretPrefix + base64.RawURLEncoding.EncodeToString(randomBytes(secretBytes))
		tok := &registryv1.Token{
			Id:       idPrefix + hex.EncodeToString(randomBytes(idBytes)),
			Identity: req.GetIdentity(),
			Grade:    req.GetGrade(),
			Note:     req.GetNote(),
			Created:  timestamppb.Now(),
		}
		err := s.store.CreateToken(tok, sha256.Sum256([]byte(secret)))
		if errors.Is(err, store.ErrTokenExists) {
			continue // an id clash: draw again
		}
		if err != nil {
			return nil, status.Errorf(codes.Internal, "create token: storing the token failed: %v", err)
		}
		return &registryv1.CreateTokenResponse{Token: tok, Secret: secret}, nil
	}
	return nil, status.Errorf(codes.Internal, "create token: %d random ids in a row were taken; the token store is too full", mintAttempts)
}

// ListTokens lists the token records, sorted by id; never their secrets.
func (s *Service) ListTokens(context.Context, *registryv1.ListTokensRequest) (*registryv1.ListTokensResponse, error) {
	toks, err := s.store.Tokens()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "list tokens: reading the token store failed: %v", err)
	}
	return &registryv1.ListTokensResponse{Tokens: toks}, nil
}

// RevokeToken deletes a token; the next AuthenticateToken already refuses
// it.
func (s *Service) RevokeToken(_ context.Context, req *registryv1.RevokeTokenRequest) (*registryv1.RevokeTokenResponse, error) {
	tok, err := s.store.RevokeToken(req.GetId())
	if errors.Is(err, store.ErrNoToken) {
		return nil, status.Errorf(codes.NotFound, "no token %q", req.GetId())
	}
	if err != nil {
		return nil, status.Errorf(codes.Internal, "revoke token %q: %v", req.GetId(), err)
	}
	return &registryv1.RevokeTokenResponse{Token: tok}, nil
}

// AuthenticateToken maps a bearer token to its identity and grade. It reads
// the store every time, so a revocation takes effect at once.
func (s *Service) AuthenticateToken(_ context.Context, req *registryv1.AuthenticateTokenRequest) (*registryv1.AuthenticateTokenResponse, error) {
	tok, err := s.store.TokenByHash(sha256.Sum256([]byte(req.GetSecret())))
	if errors.Is(err, store.ErrNoToken) {
		return nil, status.Error(codes.Unauthenticated, tokenRefusal)
	}
	if err != nil {
		return nil, status.Errorf(codes.Internal, "authenticate token: reading the token store failed: %v", err)
	}
	return &registryv1.AuthenticateTokenResponse{Identity: tok.GetIdentity(), Grade: tok.GetGrade()}, nil
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
