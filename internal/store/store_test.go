package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
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
		{Tenant{ID: "acme", Name: "Acme GmbH & Co. — Zürich 🏔"}, ""},
		{Tenant{ID: "acme", Name: "👨\u200d👩\u200d👧"}, ""}, // a zero-width joiner joins, it spoofs nothing
		// A name is printed in a table (tenant list, token list): what
		// would run the terminal or fake a row is refused.
		{Tenant{ID: "acme", Name: "Evil\x1b[2J\nacme  FAKE"}, "control character"},
		{Tenant{ID: "acme", Name: "a\nb"}, "control character"},
		{Tenant{ID: "acme", Name: "a\rb"}, "control character"},
		{Tenant{ID: "acme", Name: "a\tb"}, "control character"},
		{Tenant{ID: "acme", Name: "a\x00b"}, "control character"},
		{Tenant{ID: "acme", Name: "a\u0085b"}, "control character"},
		{Tenant{ID: "acme", Name: "a\u2028b"}, "line separator"},
		{Tenant{ID: "acme", Name: "a\u202eevil"}, "bidirectional"},
		{Tenant{ID: "acme", Name: "a\u2066b\u2069"}, "bidirectional"},
		{Tenant{ID: "acme", Name: "a\u200fb"}, "bidirectional"},
		{Tenant{ID: "acme", Name: "a\xffb"}, "UTF-8"},
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

// A name the rule refuses, stored before it, is shown quoted with its
// characters escaped; one it takes is shown as it is.
func TestPrintableName(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"Acme Inc", "Acme Inc"},
		{"Acme GmbH & Co. — Zürich 🏔", "Acme GmbH & Co. — Zürich 🏔"},
		{"👨\u200d👩\u200d👧", "👨\u200d👩\u200d👧"},
		{`say "hi"`, `say "hi"`},
		{"Evil\x1b[2J\nacme  FAKE", `"Evil\x1b[2J\nacme  FAKE"`},
		{"a\tb", `"a\tb"`},
		{"a\u0085b", `"a\u0085b"`},
		{"a\u2028b", `"a\u2028b"`},
		{"a\u202eevil", `"a\u202eevil"`},
		{"a\u2066b\u2069", `"a\u2066b\u2069"`},
		{"a\xffb", `"a\xffb"`},
	} {
		if got := PrintableName(tc.name); got != tc.want {
			t.Errorf("PrintableName(%q) = %s, want %s", tc.name, got, tc.want)
		}
		if (ValidateName(tc.name) == nil) != (PrintableName(tc.name) == tc.name) {
			t.Errorf("PrintableName(%q) = %s, but ValidateName says %v", tc.name, PrintableName(tc.name), ValidateName(tc.name))
		}
	}
}

// A token's name is held to the rule of a tenant's: both are printed in
// tables.
func TestCreateTokenRefusesControlCharacters(t *testing.T) {
	for _, name := range []string{"Evil\x1b[2J\nacme  FAKE", "a\u202eb"} {
		// The name is checked before the store is asked anything.
		_, _, err := CreateToken(context.Background(), nil, "acme", name, nil)
		if err == nil || !strings.Contains(err.Error(), "name") {
			t.Errorf("CreateToken(name %q) = %v, want the name refused", name, err)
		}
	}
}

// pgError is an error with a SQLSTATE, as the PostgreSQL driver's are.
type pgError string

func (e pgError) Error() string    { return "ERROR (SQLSTATE " + string(e) + ")" }
func (e pgError) SQLState() string { return string(e) }

func TestSerializationFailure(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{pgError("40001"), true},
		{fmt.Errorf("mark handled: %w", pgError("40P01")), true},
		{pgError("23505"), false},
		{errors.New("connection reset"), false},
		{nil, false},
	} {
		if got := SerializationFailure(tc.err); got != tc.want {
			t.Errorf("SerializationFailure(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// flakyPostgres is a PostgreSQL DB whose queries fail with the errors
// given, in turn, then answer with the rows given.
type flakyPostgres struct {
	DB
	errs    []error
	queries int
	rows    [][2]string
}

func (f *flakyPostgres) Dialect() Dialect { return Postgres }

func (f *flakyPostgres) Query(context.Context, string, ...any) (Rows, error) {
	f.queries++
	if len(f.errs) > 0 {
		err := f.errs[0]
		f.errs = f.errs[1:]
		return nil, err
	}
	return &keyRows{rows: f.rows}, nil
}

type keyRows struct {
	rows [][2]string
	cur  [2]string
}

func (r *keyRows) Next() bool {
	if len(r.rows) == 0 {
		return false
	}
	r.cur, r.rows = r.rows[0], r.rows[1:]
	return true
}

func (r *keyRows) Scan(dest ...any) error {
	*dest[0].(*string), *dest[1].(*string) = r.cur[0], r.cur[1]
	return nil
}

func (r *keyRows) Err() error { return nil }
func (r *keyRows) Close()     {}

// MarkHandledAll's statement, which commits on its own, runs again when it
// fails for a concurrent transaction, as Tx would; other failures are its.
func TestMarkHandledAllRetriesSerializationFailures(t *testing.T) {
	hs := []Handling{{TenantID: "acme", Consumer: "w", EventID: "d1"}, {TenantID: "acme", Consumer: "w", EventID: "d2"}}
	db := &flakyPostgres{errs: []error{pgError("40001"), pgError("40P01")}, rows: [][2]string{{"w", "d2"}}}
	first, err := MarkHandledAll(context.Background(), db, time.Now(), hs)
	if err != nil || db.queries != 3 || !slices.Equal(first, []bool{false, true}) {
		t.Fatalf("MarkHandledAll = %v, %v after %d queries; want [false true] after 3", first, err, db.queries)
	}
	db = &flakyPostgres{errs: []error{pgError("23505")}}
	if _, err := MarkHandledAll(context.Background(), db, time.Now(), hs); err == nil || db.queries != 1 {
		t.Fatalf("MarkHandledAll with another failure = %v after %d queries; want that failure, at once", err, db.queries)
	}
}
