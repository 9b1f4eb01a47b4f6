package governance

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Errors of Check. A token of another tenant is invalid, not forbidden, so
// that a caller learns nothing about other tenants' tokens.
var (
	ErrTokenMissing = errors.New("governance token missing")
	ErrTokenInvalid = errors.New("governance token invalid")
	ErrTokenExpired = errors.New("governance token expired")
)

// Hash is the form in which tokens are stored: hex SHA-256.
func Hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

type entry struct {
	tenant  string
	expires time.Time
}

// Tokens is an in-memory governance-token store, safe for concurrent use.
type Tokens struct {
	now    func() time.Time
	mu     sync.Mutex
	byHash map[string]entry
}

// NewTokens returns an empty store; now is its clock (nil: time.Now).
func NewTokens(now func() time.Time) *Tokens {
	if now == nil {
		now = time.Now
	}
	return &Tokens{now: now, byHash: make(map[string]entry)}
}

// Issue creates a random token for tenant, valid for ttl, and returns it;
// only its hash is kept.
func (t *Tokens) Issue(tenant string, ttl time.Duration) (token string, expires time.Time, err error) {
	if tenant == "" || ttl <= 0 {
		return "", time.Time{}, fmt.Errorf("governance: Issue needs a tenant and a positive ttl (got %q, %s)", tenant, ttl)
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", time.Time{}, fmt.Errorf("governance: random token: %w", err)
	}
	token = "gov_" + base64.RawURLEncoding.EncodeToString(b[:])
	expires = t.now().Add(ttl)
	t.mu.Lock()
	t.byHash[Hash(token)] = entry{tenant: tenant, expires: expires}
	t.mu.Unlock()
	return token, expires, nil
}

// Revoke makes token invalid.
func (t *Tokens) Revoke(token string) {
	t.mu.Lock()
	delete(t.byHash, Hash(token))
	t.mu.Unlock()
}

// CheckGovernanceToken returns nil when token is a valid, unexpired token
// of tenant, else an error wrapping ErrTokenMissing, ErrTokenInvalid or
// ErrTokenExpired.
func (t *Tokens) CheckGovernanceToken(_ context.Context, tenant, token string) error {
	if token == "" {
		return ErrTokenMissing
	}
	t.mu.Lock()
	e, ok := t.byHash[Hash(token)]
	t.mu.Unlock()
	switch {
	case !ok || e.tenant != tenant:
		return ErrTokenInvalid
	case !t.now().Before(e.expires):
		return fmt.Errorf("%w at %s", ErrTokenExpired, e.expires.UTC().Format(time.RFC3339))
	}
	return nil
}
