package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// TokenPrefix starts every API token secret, so a leaked one is recognizable
// (secret scanners, logs) and a malformed one is refused without a query.
const TokenPrefix = "prt_"

// APIToken is a tenant's credential for the HTTP API. Its secret is shown
// once, by CreateToken, and stored only as a SHA-256 hash.
type APIToken struct {
	ID        string
	TenantID  string
	Name      string
	CreatedAt time.Time
	// ExpiresAt is when it stops authenticating; nil means never.
	ExpiresAt *time.Time
	// RevokedAt is when RevokeToken revoked it; nil while valid.
	RevokedAt *time.Time
}

// ErrUnauthenticated is what every TokenError is: the secret does not grant
// access. Callers answer 401 on it without telling which reason applied.
var ErrUnauthenticated = errors.New("store: API token not valid")

// TokenReason says why a secret does not authenticate.
type TokenReason string

// The reasons of a TokenError.
const (
	TokenUnknown TokenReason = "unknown"
	TokenRevoked TokenReason = "revoked"
	TokenExpired TokenReason = "expired"
)

// TokenError is returned by Authenticate for a secret that does not
// authenticate. It is ErrUnauthenticated, and ErrNotFound when the secret
// matches no token.
type TokenError struct {
	Reason TokenReason
	// TokenID names the token when one matched (revoked or expired).
	TokenID string
}

func (e *TokenError) Error() string {
	if e.TokenID == "" {
		return "API token " + string(e.Reason)
	}
	return "API token " + e.TokenID + " " + string(e.Reason)
}

// Is makes errors.Is(err, ErrUnauthenticated) hold for every TokenError and
// errors.Is(err, ErrNotFound) for an unknown one.
func (e *TokenError) Is(target error) bool {
	return target == ErrUnauthenticated || (target == ErrNotFound && e.Reason == TokenUnknown)
}

// HashToken returns what api_tokens.token_hash holds for a secret: its
// SHA-256, hex. A fast hash is enough: secrets are 256 random bits, not
// passwords, and lookups must stay cheap.
func HashToken(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

var lowerBase32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// randomString returns n random bytes from crypto/rand in lower-case base32.
func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails; it crashes the program instead.
	return lowerBase32.EncodeToString(b)
}

// CreateToken issues a token for an existing tenant and returns its secret,
// which is not stored and cannot be shown again. expiresAt nil means it never
// expires.
func CreateToken(ctx context.Context, q Querier, tenantID, name string, expiresAt *time.Time) (secret string, tok APIToken, err error) {
	if err := ValidateName(name); err != nil {
		return "", APIToken{}, fmt.Errorf("create token: %w", err)
	}
	if err := tenantExists(ctx, q, tenantID); err != nil {
		return "", APIToken{}, fmt.Errorf("create token: %w", err)
	}
	secret = TokenPrefix + randomString(32)
	tok = APIToken{
		ID:        "tok_" + randomString(10),
		TenantID:  tenantID,
		Name:      name,
		CreatedAt: time.Now().UTC().Truncate(time.Microsecond),
	}
	if expiresAt != nil {
		e := expiresAt.UTC().Truncate(time.Microsecond)
		tok.ExpiresAt = &e
	}
	_, err = q.Exec(ctx,
		`INSERT INTO api_tokens (id, tenant_id, name, token_hash, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		tok.ID, tok.TenantID, tok.Name, HashToken(secret), tok.CreatedAt, tok.ExpiresAt)
	if err != nil {
		return "", APIToken{}, fmt.Errorf("create token for tenant %s: %w", tenantID, err)
	}
	return secret, tok, nil
}

// Authenticate returns the token a secret belongs to when it is valid at now.
// Otherwise the error is a *TokenError (errors.Is ErrUnauthenticated), or a
// database error.
func Authenticate(ctx context.Context, q Querier, secret string, now time.Time) (APIToken, error) {
	if !strings.HasPrefix(secret, TokenPrefix) {
		return APIToken{}, &TokenError{Reason: TokenUnknown}
	}
	var tok APIToken
	err := q.QueryRow(ctx,
		`SELECT id, tenant_id, name, created_at, expires_at, revoked_at FROM api_tokens WHERE token_hash = $1`,
		HashToken(secret)).Scan(&tok.ID, &tok.TenantID, &tok.Name, &tok.CreatedAt, &tok.ExpiresAt, &tok.RevokedAt)
	switch {
	case errors.Is(err, ErrNotFound):
		return APIToken{}, &TokenError{Reason: TokenUnknown}
	case err != nil:
		return APIToken{}, fmt.Errorf("authenticate: %w", err)
	case tok.RevokedAt != nil:
		return APIToken{}, &TokenError{Reason: TokenRevoked, TokenID: tok.ID}
	case tok.ExpiresAt != nil && !now.Before(*tok.ExpiresAt):
		return APIToken{}, &TokenError{Reason: TokenExpired, TokenID: tok.ID}
	}
	return tok, nil
}

// RevokeToken revokes a tenant's token at the given time. Revoking it again
// keeps the first time. A token of another tenant is ErrNotFound, as is one
// that does not exist.
func RevokeToken(ctx context.Context, q Querier, tenantID, tokenID string, at time.Time) error {
	n, err := q.Exec(ctx,
		`UPDATE api_tokens SET revoked_at = COALESCE(revoked_at, $3) WHERE tenant_id = $1 AND id = $2`,
		tenantID, tokenID, at.UTC())
	if err != nil {
		return fmt.Errorf("revoke token %s: %w", tokenID, err)
	}
	if n == 0 {
		return fmt.Errorf("revoke token %s of tenant %s: %w", tokenID, tenantID, ErrNotFound)
	}
	return nil
}

// ListTokens returns a tenant's tokens, revoked and expired ones included,
// oldest first.
func ListTokens(ctx context.Context, q Querier, tenantID string) ([]APIToken, error) {
	rows, err := q.Query(ctx,
		`SELECT id, tenant_id, name, created_at, expires_at, revoked_at FROM api_tokens WHERE tenant_id = $1 ORDER BY created_at, id`,
		tenantID)
	if err != nil {
		return nil, fmt.Errorf("list tokens of tenant %s: %w", tenantID, err)
	}
	defer rows.Close()
	var out []APIToken
	for rows.Next() {
		var t APIToken
		if err := rows.Scan(&t.ID, &t.TenantID, &t.Name, &t.CreatedAt, &t.ExpiresAt, &t.RevokedAt); err != nil {
			return nil, fmt.Errorf("list tokens of tenant %s: %w", tenantID, err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list tokens of tenant %s: %w", tenantID, err)
	}
	return out, nil
}
