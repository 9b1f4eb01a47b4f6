package store

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestHashToken(t *testing.T) {
	// SHA-256 of "abc", a published test vector.
	if got, want := HashToken("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; got != want {
		t.Errorf("HashToken(abc) = %s, want %s", got, want)
	}
}

func TestTokenError(t *testing.T) {
	for _, tc := range []struct {
		err              error
		unauth, notFound bool
		reason           TokenReason
		message          string
	}{
		{&TokenError{Reason: TokenUnknown}, true, true, TokenUnknown, "API token unknown"},
		{fmt.Errorf("gateway: %w", &TokenError{Reason: TokenRevoked, TokenID: "tok_1"}), true, false, TokenRevoked, "tok_1 revoked"},
		{&TokenError{Reason: TokenExpired, TokenID: "tok_2"}, true, false, TokenExpired, "tok_2 expired"},
	} {
		if got := errors.Is(tc.err, ErrUnauthenticated); got != tc.unauth {
			t.Errorf("errors.Is(%v, ErrUnauthenticated) = %v", tc.err, got)
		}
		if got := errors.Is(tc.err, ErrNotFound); got != tc.notFound {
			t.Errorf("errors.Is(%v, ErrNotFound) = %v, want %v", tc.err, got, tc.notFound)
		}
		var te *TokenError
		if !errors.As(tc.err, &te) || te.Reason != tc.reason {
			t.Errorf("errors.As(%v) reason = %v, want %v", tc.err, te, tc.reason)
		}
		if !strings.Contains(tc.err.Error(), tc.message) {
			t.Errorf("%q does not say %q", tc.err.Error(), tc.message)
		}
	}
}

func TestRandomString(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		s := randomString(32)
		if len(s) != 52 || strings.Trim(s, "abcdefghijklmnopqrstuvwxyz234567") != "" {
			t.Fatalf("randomString(32) = %q: want 52 lower-case base32 characters", s)
		}
		if seen[s] {
			t.Fatalf("randomString repeated %q", s)
		}
		seen[s] = true
	}
}

func TestTenantValidate(t *testing.T) {
	for _, tc := range []struct {
		tenant Tenant
		want   string // empty: valid
	}{
		{Tenant{ID: "acme", Name: "Acme"}, ""},
		{Tenant{ID: "a_b-C9", Name: "x"}, ""},
		{Tenant{ID: strings.Repeat("a", 128), Name: "x"}, ""},
		{Tenant{ID: strings.Repeat("a", 129), Name: "x"}, "tenant id"},
		{Tenant{ID: "", Name: "x"}, "tenant id"},
		{Tenant{ID: "a.b", Name: "x"}, "subject token"},
		{Tenant{ID: "a*", Name: "x"}, "tenant id"},
		{Tenant{ID: "acme", Name: ""}, "name"},
		{Tenant{ID: "acme", Name: strings.Repeat("é", 200)}, ""},
		{Tenant{ID: "acme", Name: strings.Repeat("é", 201)}, "1 to 200"},
	} {
		err := tc.tenant.validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("validate(%.20q, %.20q) = %v, want valid", tc.tenant.ID, tc.tenant.Name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("validate(%.20q, %.20q) = %v, want an error mentioning %q", tc.tenant.ID, tc.tenant.Name, err, tc.want)
		}
	}
}
