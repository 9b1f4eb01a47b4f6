package sqlmemory

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base32"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/services/memory/governance"
)

// MaxTokenTTL bounds the lifetime of a governance token: global memory is
// shared by every project of a tenant, and a credential to change it should
// be renewed, not forgotten.
const MaxTokenTTL = 366 * 24 * time.Hour

// Token is a governance token as stored: everything but the secret.
type Token struct {
	ID        string
	TenantID  string
	Name      string
	CreatedAt time.Time
	ExpiresAt time.Time
	// RevokedAt is when Revoke revoked it; nil while valid.
	RevokedAt *time.Time
}

// Tokens keeps governance tokens in the relational store. It is safe for
// concurrent use.
type Tokens struct {
	db  store.Querier
	now func() time.Time
}

// NewTokens returns the governance tokens of db; now is the clock of expiry
// checks and timestamps (nil: time.Now).
func NewTokens(db store.Querier, now func() time.Time) *Tokens {
	if now == nil {
		now = time.Now
	}
	return &Tokens{db: db, now: now}
}

var lowerBase32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// Issue creates a token of an existing tenant, valid for ttl (at most
// MaxTokenTTL), and returns it with its record. The token is
// "gov_<id>_<secret>": only its hash is stored, so it cannot be shown again.
func (t *Tokens) Issue(ctx context.Context, tenant, name string, ttl time.Duration) (token string, tok Token, err error) {
	switch nameErr := store.ValidateName(name); {
	case !contracts.ValidToken(tenant):
		return "", Token{}, fmt.Errorf("issue governance token: tenant id %q must be 1-128 characters of [A-Za-z0-9_-]", tenant)
	case nameErr != nil:
		return "", Token{}, fmt.Errorf("issue governance token: %w (who or what uses it)", nameErr)
	case ttl <= 0 || ttl > MaxTokenTTL:
		return "", Token{}, fmt.Errorf("issue governance token: ttl %s: want more than 0 and at most %s", ttl, MaxTokenTTL)
	}
	if _, err := store.GetTenant(ctx, t.db, tenant); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return "", Token{}, fmt.Errorf("issue governance token: tenant %s does not exist: %w", tenant, err)
		}
		return "", Token{}, fmt.Errorf("issue governance token: %w", err)
	}
	var idb [10]byte
	var secret [32]byte
	_, _ = rand.Read(idb[:]) // crypto/rand.Read never fails; it crashes the program instead.
	_, _ = rand.Read(secret[:])
	now := t.now().UTC().Truncate(time.Microsecond)
	tok = Token{ID: lowerBase32.EncodeToString(idb[:]), TenantID: tenant, Name: name, CreatedAt: now, ExpiresAt: now.Add(ttl)}
	token = contracts.GovernanceTokenPrefix + tok.ID + "_" + base64.RawURLEncoding.EncodeToString(secret[:])
	_, err = t.db.Exec(ctx, `INSERT INTO memory_governance_tokens (tenant_id, id, name, token_hash, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, tok.TenantID, tok.ID, tok.Name, governance.Hash(token), tok.CreatedAt, tok.ExpiresAt)
	if err != nil {
		return "", Token{}, fmt.Errorf("issue governance token for tenant %s: %w", tenant, err)
	}
	return token, tok, nil
}

// Revoke revokes a tenant's token now; revoking it again keeps the first
// time. An id of another tenant, or of no token, is store.ErrNotFound.
func (t *Tokens) Revoke(ctx context.Context, tenant, id string) error {
	n, err := t.db.Exec(ctx, `UPDATE memory_governance_tokens SET revoked_at = COALESCE(revoked_at, $3)
		WHERE tenant_id = $1 AND id = $2`, tenant, id, t.now().UTC())
	if err != nil {
		return fmt.Errorf("revoke governance token %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("revoke governance token %s of tenant %s: %w", id, tenant, store.ErrNotFound)
	}
	return nil
}

// List returns a tenant's tokens, revoked and expired ones included, oldest
// first.
func (t *Tokens) List(ctx context.Context, tenant string) ([]Token, error) {
	rows, err := t.db.Query(ctx, `SELECT id, tenant_id, name, created_at, expires_at, revoked_at
		FROM memory_governance_tokens WHERE tenant_id = $1 ORDER BY created_at, id`, tenant)
	if err != nil {
		return nil, fmt.Errorf("list governance tokens of tenant %s: %w", tenant, err)
	}
	defer rows.Close()
	var out []Token
	for rows.Next() {
		var k Token
		if err := rows.Scan(&k.ID, &k.TenantID, &k.Name, &k.CreatedAt, &k.ExpiresAt, &k.RevokedAt); err != nil {
			return nil, fmt.Errorf("list governance tokens of tenant %s: %w", tenant, err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list governance tokens of tenant %s: %w", tenant, err)
	}
	return out, nil
}

// CheckGovernanceToken implements the write engine's TokenChecker: nil for
// a valid, unexpired, unrevoked token of tenant, else an error wrapping
// governance.ErrTokenMissing, ErrTokenInvalid (unknown, another tenant's,
// revoked) or ErrTokenExpired.
func (t *Tokens) CheckGovernanceToken(ctx context.Context, tenant, token string) error {
	if token == "" {
		return governance.ErrTokenMissing
	}
	id, ok := contracts.GovernanceTokenID(token)
	if !ok {
		return fmt.Errorf("%w: not of the form gov_<id>_<secret>", governance.ErrTokenInvalid)
	}
	r, err := t.lookup(ctx, tenant, id)
	if err != nil {
		return err
	}
	// The id only finds the row; the secret proves the holder, and only a
	// holder learns whether the token expired or was revoked.
	if subtle.ConstantTimeCompare([]byte(r.hash), []byte(governance.Hash(token))) != 1 {
		return governance.ErrTokenInvalid
	}
	return r.usable(t.now())
}

// VerifyWrite checks the governance proof of a memory.write.requested
// event: a token of the event's tenant, valid now, whose hash makes the
// proof of exactly this request. Errors wrap governance.ErrTokenMissing,
// ErrTokenInvalid or ErrTokenExpired, or are the store's.
func (t *Tokens) VerifyWrite(ctx context.Context, m contracts.MemoryWriteRequested) error {
	if m.Governance == nil {
		return fmt.Errorf("%w: a global write event carries governance, a proof made with contracts.SignMemoryWrite", governance.ErrTokenMissing)
	}
	r, err := t.lookup(ctx, m.TenantID, m.Governance.TokenID)
	if err != nil {
		return err
	}
	if !contracts.VerifyMemoryWrite(m, r.hash) {
		return fmt.Errorf("%w: the proof does not match this request and token", governance.ErrTokenInvalid)
	}
	return r.usable(t.now())
}

type tokenRow struct {
	hash    string
	expires time.Time
	revoked *time.Time
}

// lookup reads tenant's token id. An unknown id and another tenant's both
// read as invalid.
func (t *Tokens) lookup(ctx context.Context, tenant, id string) (tokenRow, error) {
	var r tokenRow
	err := t.db.QueryRow(ctx, `SELECT token_hash, expires_at, revoked_at FROM memory_governance_tokens
		WHERE tenant_id = $1 AND id = $2`, tenant, id).Scan(&r.hash, &r.expires, &r.revoked)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return tokenRow{}, governance.ErrTokenInvalid
	case err != nil:
		return tokenRow{}, fmt.Errorf("check governance token: %w", err)
	}
	return r, nil
}

func (r tokenRow) usable(now time.Time) error {
	switch {
	case r.revoked != nil:
		return fmt.Errorf("%w: revoked at %s", governance.ErrTokenInvalid, r.revoked.UTC().Format(time.RFC3339))
	case !now.Before(r.expires):
		return fmt.Errorf("%w at %s", governance.ErrTokenExpired, r.expires.UTC().Format(time.RFC3339))
	}
	return nil
}

// Describe is a one-line summary of a token for listings.
func (k Token) Describe(now time.Time) string {
	state := "valid until " + k.ExpiresAt.UTC().Format(time.RFC3339)
	switch {
	case k.RevokedAt != nil:
		state = "revoked " + k.RevokedAt.UTC().Format(time.RFC3339)
	case !now.Before(k.ExpiresAt):
		state = "expired " + k.ExpiresAt.UTC().Format(time.RFC3339)
	}
	// The name as store.PrintableName shows it: one stored before Issue
	// checked names could clear the terminal or fake a row.
	return strings.Join([]string{k.ID, store.PrintableName(k.Name), state}, "\t")
}
