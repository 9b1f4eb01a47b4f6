package governance

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestTokens(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tk := NewTokens(func() time.Time { return now })
	tok, exp, err := tk.Issue("acme", time.Hour)
	if err != nil || !strings.HasPrefix(tok, "gov_") || !exp.Equal(now.Add(time.Hour)) {
		t.Fatalf("Issue = %q, %v, %v", tok, exp, err)
	}
	for h := range tk.byHash {
		if strings.Contains(h, tok) || h != Hash(tok) {
			t.Errorf("stored key %q is not the token's hash", h)
		}
	}
	ctx := context.Background()
	tests := []struct {
		name, tenant, token string
		at                  time.Time
		want                error
	}{
		{"valid", "acme", tok, now, nil},
		{"just before expiry", "acme", tok, now.Add(time.Hour - time.Nanosecond), nil},
		{"at expiry", "acme", tok, now.Add(time.Hour), ErrTokenExpired},
		{"other tenant", "globex", tok, now, ErrTokenInvalid},
		{"forged", "acme", "gov_forged", now, ErrTokenInvalid},
		{"missing", "acme", "", now, ErrTokenMissing},
	}
	for _, tt := range tests {
		now = tt.at
		if err := tk.CheckGovernanceToken(ctx, tt.tenant, tt.token); !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
	now = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tk.Revoke(tok)
	if err := tk.CheckGovernanceToken(ctx, "acme", tok); !errors.Is(err, ErrTokenInvalid) {
		t.Errorf("revoked: err = %v", err)
	}
	if _, _, err := tk.Issue("", time.Hour); err == nil {
		t.Error("Issue without tenant succeeded")
	}
}
